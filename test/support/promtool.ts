// Prometheus's own checker for tests: `promtool` from Debian's `prometheus` package, installed
// with apt-get when missing and the tests run as root; otherwise a clear error, never a skip.

import { spawnSync } from 'node:child_process';

export type PromtoolRun = { readonly status: number | null; readonly output: string };

function onPath(): boolean {
  return spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).status === 0;
}

export function ensurePromtool(): void {
  if (onPath()) return;
  if (process.getuid?.() === 0) {
    const install =
      'apt-get install -y prometheus >/dev/null 2>&1 || (apt-get update >/dev/null 2>&1 && apt-get install -y prometheus >/dev/null 2>&1)';
    spawnSync('sh', ['-c', install], { stdio: 'inherit', timeout: 600_000 });
    if (onPath()) return;
  }
  throw new Error("promtool is missing: run `apt-get install -y prometheus` as root (Debian), or put Prometheus's promtool on PATH");
}

/** Runs promtool with `args`, `input` on its stdin; stdout and stderr together. */
export function promtool(args: readonly string[], input?: string): PromtoolRun {
  const r = spawnSync('promtool', args, { input, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}
