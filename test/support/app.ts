// The HTTP app with every service behind it replaced by a stub, for route tests that call
// `app.request(...)` without a socket, a database or UBSCore: the balances of a user are empty,
// there are no alerts, and the halt switch is off. Log lines are kept for the test to read.

import { createApps, type Apps } from '../../src/http/app.js';
import type { AppDeps } from '../../src/http/deps.js';
import { Drain } from '../../src/http/drain.js';
import type { TokenVerifier } from '../../src/http/auth/token-verifier.js';
import type { LogFields, Logger } from '../../src/log.js';
import { Registry } from '../../src/metrics/registry.js';

export type LogLine = { readonly level: string; readonly msg: string; readonly fields: LogFields };

export type StubApps = Apps & { readonly lines: LogLine[] };

/** A logger that keeps its lines in `lines`. */
export function keptLog(): { readonly log: Logger; readonly lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logWith = (extra: LogFields): Logger => {
    const keep =
      (level: string) =>
      (msg: string, fields: LogFields = {}) =>
        void lines.push({ level, msg, fields: { ...extra, ...fields } });
    return {
      debug: keep('debug'),
      info: keep('info'),
      warn: keep('warn'),
      error: keep('error'),
      critical: keep('critical'),
      enabled: () => true,
      child: (more) => logWith({ ...extra, ...more }),
    };
  };
  return { log: logWith({}), lines };
}

/** `deps` replaces stubs of the same name, for a route test that needs a service to answer or to fail. */
export function stubApps(tokens: TokenVerifier, opts: { separateAdmin?: boolean; deps?: Partial<AppDeps> } = {}): StubApps {
  const { log, lines } = keptLog();
  const unused = () => {
    throw new Error('not stubbed: this route test should not reach it');
  };
  const deps = {
    tokens,
    bodyBytesMax: 16_384,
    rateLimitPerSecond: 0,
    abnormalTransfersPerMinute: 0,
    assets: { get: async () => null },
    transfers: { get: async () => null },
    submit: unused,
    external: { apply: unused },
    balances: { read: async () => ({ funding: [], spot: [] }) },
    admin: {},
    alerts: { list: async () => [], raise: async () => undefined },
    monitor: { conditions: async () => [] },
    audit: { record: async () => '1', page: async () => [] },
    pulse: { record: () => undefined },
    snapshot: unused,
    drive: unused,
    stuckRetriesMax: 10,
    stuckAgeMs: 300_000,
    targetPendingAlertMs: 60_000,
    halt: { current: null, unheld: [], resume: async () => null },
    invariant: { check: unused },
    metrics: async () => '# metrics\n',
    registry: new Registry(),
    probe: async () => ({ postgres: true, ubscore: true, walWritable: true, walReason: null, storedHalt: null }),
    ownerHeld: () => true,
    leaseState: () => 'proven',
    ownerEpoch: () => 1,
    onLeaseLapsed: (reason: string) => {
      throw new Error(`the test app's lease never lapses: ${reason}`);
    },
    log,
    drain: new Drain(),
    ...opts.deps,
  } as unknown as AppDeps;
  return { ...createApps(deps, { separateAdmin: opts.separateAdmin ?? false }), lines };
}
