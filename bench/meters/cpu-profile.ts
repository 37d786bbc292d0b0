// Reads the V8 CPU profiles `node --cpu-prof` writes (one file per thread) and sums self time per
// function and per module, so the summary can say which thread is busy and on what.

import fs from 'node:fs/promises';
import path from 'node:path';

type CallFrame = { readonly functionName: string; readonly url: string; readonly lineNumber: number };
type ProfileNode = { readonly id: number; readonly callFrame: CallFrame; readonly children?: readonly number[] };
type CpuProfile = {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
};

export type SelfTime = {
  readonly name: string;
  readonly ms: number;
  readonly share: number;
  /** For a function: the nearest caller in a package or project file (not node: or native), where most of its time came from. */
  readonly via?: string;
};

export type ThreadProfile = {
  readonly thread: string;
  readonly file: string;
  readonly profiledMs: number;
  /** Sampled time not idle, as a share of the profiled wall time (1 = one core all the time). */
  readonly busyShare: number;
  readonly topFunctions: readonly SelfTime[];
  readonly topModules: readonly SelfTime[];
};

const TOP_ENTRIES_MAX = 8;
const IDLE = '(idle)';

/** A span of CLOCK_MONOTONIC in microseconds: V8 stamps samples with it, as process.hrtime does. */
export type WindowUs = { readonly fromUs: number; readonly toUs: number };

export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * Every *.cpuprofile in `dir`, busiest thread first, counting only the samples inside `window`
 * (the load run), so start-up, seeding and shutdown do not dilute the shares.
 */
export async function summariseProfiles(dir: string, window: WindowUs): Promise<ThreadProfile[]> {
  const files = (await fs.readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
  const threads: ThreadProfile[] = [];
  for (const file of files) {
    const profile = JSON.parse(await fs.readFile(path.join(dir, file), 'utf8')) as CpuProfile;
    threads.push(summarise(file, profile, window));
  }
  return threads.sort((a, b) => b.busyShare - a.busyShare);
}

function summarise(file: string, p: CpuProfile, window: WindowUs): ThreadProfile {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  // A sample's time runs until the next sample; V8 stores the gap before each one.
  let at = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    at += p.timeDeltas[i] ?? 0;
    if (at < window.fromUs || at >= window.toUs) continue;
    const id = p.samples[i] as number;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i + 1] ?? 0));
  }
  const profiledUs = Math.max(1, Math.min(p.endTime, window.toUs) - Math.max(p.startTime, window.fromUs));
  const callers = callerModules(p);
  const functions = new Map<string, number>();
  const vias = new Map<string, Map<string, number>>();
  const modules = new Map<string, number>();
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) continue;
    if (frame.functionName === IDLE) {
      idleUs += us;
      continue;
    }
    const where = frame.url === '' ? '' : ` ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
    const fn = `${frame.functionName || '(anonymous)'}${where}`;
    functions.set(fn, (functions.get(fn) ?? 0) + us);
    const via = vias.get(fn) ?? new Map<string, number>();
    const caller = callers(id);
    via.set(caller, (via.get(caller) ?? 0) + us);
    vias.set(fn, via);
    const mod = moduleOf(frame);
    modules.set(mod, (modules.get(mod) ?? 0) + us);
  }
  const sampledUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const top = (m: Map<string, number>): SelfTime[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP_ENTRIES_MAX)
      .map(([name, us]) => ({ name, ms: Math.round(us / 1000), share: round3(us / profiledUs) }));
  const topFunctions = top(functions).map((f) => {
    const best = [...(vias.get(f.name) ?? new Map<string, number>()).entries()].sort((a, b) => b[1] - a[1])[0];
    return best === undefined || best[0] === '' ? f : { ...f, via: best[0] };
  });
  return {
    thread: threadName(file, p),
    file,
    profiledMs: Math.round(profiledUs / 1000),
    busyShare: round3((sampledUs - idleUs) / profiledUs),
    topFunctions,
    topModules: top(modules),
  };
}

/**
 * For each node, the module of its nearest ancestor (itself included) that is JavaScript of a
 * package or of this project: native and node: internals are skipped, so a socket write is
 * charged to the driver that made it. '' when there is none.
 */
function callerModules(p: CpuProfile): (id: number) => string {
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const memo = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    const frame = byId.get(id)?.callFrame;
    const up = parent.get(id);
    const own = frame !== undefined && frame.url !== '' && !frame.url.startsWith('node:') ? moduleOf(frame) : null;
    const result = own ?? (up === undefined ? '' : resolve(up));
    memo.set(id, result);
    return result;
  };
  return resolve;
}

/** The main thread is thread id 0 in the file name; a worker is named by the script it runs. */
function threadName(file: string, p: CpuProfile): string {
  const tid = /\.\d+\.(\d+)\.\d+\.cpuprofile$/.exec(file)?.[1] ?? '?';
  const urls = new Set(p.nodes.map((n) => n.callFrame.url));
  const has = (needle: string): boolean => [...urls].some((u) => u.includes(needle));
  if (tid === '0') return 'main (HTTP, routing)';
  if (has('actors/ubscore/worker')) return `UBSCore worker (thread ${tid})`;
  if (has('actors/coordinator/worker')) return `coordinator worker (thread ${tid})`;
  return `worker thread ${tid}`;
}

/** A package name, a node: built-in, a file of this project, or V8's own buckets. */
function moduleOf(frame: CallFrame): string {
  const url = frame.url;
  if (url === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return (parts[0]?.startsWith('@') === true ? `${parts[0]}/${parts[1] ?? ''}` : parts[0]) ?? url;
  }
  return shortUrl(url);
}

function shortUrl(url: string): string {
  const dist = url.lastIndexOf('/dist/');
  if (dist >= 0) return url.slice(dist + '/dist/'.length);
  const nm = url.lastIndexOf('/node_modules/');
  return nm >= 0 ? url.slice(nm + '/node_modules/'.length) : url.replace(/^file:\/\//, '');
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
