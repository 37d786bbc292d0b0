// (d) UBSCore restart: runs bench/parts/ubscore-restart.ts, which builds 1M accounts and 1M WAL
// records and restarts the real worker on them, as a child, and reads back the figures it prints.

import { spawn } from 'node:child_process';
import path from 'node:path';
import { registerCleanup } from '../support/cleanup.js';
import { ROOT } from '../support/service-child.js';

export type RestartFigures = {
  readonly accounts: number;
  readonly recordsAfterSnapshot: number;
  readonly snapshotLoadMs: number;
  readonly replayMs: number;
  readonly totalRestartMs: number;
  readonly recordsPerSecond: number;
  /** Everything bench/parts/ubscore-restart.ts printed, as it printed it. */
  readonly raw: Readonly<Record<string, unknown>>;
};

/** Building 1M accounts and 1M records takes about half a minute here; this bounds a hang. */
const RESTART_BENCH_TIMEOUT_MS = 5 * 60_000;

/**
 * (d) bench/parts/ubscore-restart.ts exports no function (it runs on import), so it runs as a child
 * and its one line of JSON is read back.
 */
export async function benchRestart(accounts: number, records: number): Promise<RestartFigures> {
  const script = path.join(ROOT, 'dist', 'bench', 'parts', 'ubscore-restart.js');
  const child = spawn(process.execPath, [script, String(accounts), String(records)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4_000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = registerCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  });
  const timer = setTimeout(() => child.kill('SIGTERM'), RESTART_BENCH_TIMEOUT_MS);
  const code = await exited;
  clearTimeout(timer);
  await stop();
  const line = stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop();
  if (code !== 0 || line === undefined) throw new Error(`ubscore-restart exited with ${String(code)}: ${stderr || stdout}`);
  const raw = JSON.parse(line) as Record<string, unknown>;
  const num = (key: string): number => {
    const value = raw[key];
    if (typeof value !== 'number') throw new Error(`ubscore-restart printed no number ${key}: ${line}`);
    return value;
  };
  return {
    accounts: num('accounts'),
    recordsAfterSnapshot: num('recordsAfterSnapshot'),
    snapshotLoadMs: num('snapshotLoadMs'),
    replayMs: num('replayMs'),
    totalRestartMs: num('totalRestartMs'),
    recordsPerSecond: num('recordsPerSecond'),
    raw,
  };
}
