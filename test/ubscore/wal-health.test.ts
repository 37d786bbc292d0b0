// Proves the main thread says what is true of each cause of UBSCore's degraded episode: an LMDB
// WAL that takes no writes (commands answered unavailable, a full disk?) versus PostgreSQL's log
// append retried (commands wait unanswered), in the critical log line, the alert and the recovery line.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { AlertSink } from '../../src/alerts/alerts.js';
import type { Logger } from '../../src/log.js';
import { WalHealth } from '../../src/services/wal-health.js';

type Line = { level: string; msg: string; fields?: Record<string, unknown> };
type Raised = { kind: string; message: string; details: Record<string, unknown> };

function watched(): { health: WalHealth; lines: Line[]; raised: Raised[] } {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => {
    lines.push({ level, msg, ...(fields === undefined ? {} : { fields }) });
  };
  const log = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), critical: at('critical') } as unknown as Logger;
  const raised: Raised[] = [];
  const health = new WalHealth(log);
  health.useAlerts({ raise: async (alert: Raised) => void raised.push(alert) } as unknown as AlertSink);
  return { health, lines, raised };
}

test("PostgreSQL's log retried: commands wait, never 'unavailable', never 'a full disk'", () => {
  const { health, lines, raised } = watched();
  health.report({
    kind: 'degraded',
    cause: 'pg-log',
    reason: 'the PostgreSQL log append of the batch ending at seq 7 failed',
    since: 1000,
  });
  const critical = lines.find((l) => l.level === 'critical');
  assert.ok(critical !== undefined);
  assert.match(critical.msg, /PostgreSQL/);
  assert.match(critical.msg, /wait unanswered/);
  assert.not.match(critical.msg, /unavailable|disk/);
  assert.is(critical.fields?.cause, 'pg-log');
  assert.is(raised.length, 1);
  assert.match(raised[0]?.message ?? '', /PostgreSQL does not take UBSCore's log/);
  assert.not.match(raised[0]?.message ?? '', /full disk|refused/);
  assert.is(raised[0]?.details.cause, 'pg-log');
  assert.equal(health.current.writable, false, '/readyz still says 503: nothing is answered meanwhile');
  health.report({ kind: 'recovered', since: 1000, degradedMs: 50, attempts: 2 });
  assert.match(lines.at(-1)?.msg ?? '', /^PostgreSQL takes UBSCore's log again/);
});

test('the LMDB WAL unwritable: commands answered unavailable, a full disk named', () => {
  const { health, lines, raised } = watched();
  health.report({ kind: 'degraded', cause: 'wal', reason: 'the WAL batch failed: ENOSPC', since: 2000 });
  const critical = lines.find((l) => l.level === 'critical');
  assert.match(critical?.msg ?? '', /cannot write its WAL: spot commands are answered unavailable/);
  assert.match(raised[0]?.message ?? '', /a full disk\?/);
  health.report({ kind: 'recovered', since: 2000, degradedMs: 50, attempts: 2 });
  assert.match(lines.at(-1)?.msg ?? '', /^UBSCore writes its WAL again/);
});

test.run();
