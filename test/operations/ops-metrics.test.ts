// Proves a real scrape of the running service passes `promtool check metrics` with no problem, the alert rules pass `promtool check rules` and their unit tests (`promtool test rules`), and every metric name the Grafana dashboard and the alert rules read appears in a real scrape.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { deposit, transfer } from '../support/funds.js';
import { PROJECT_ROOT } from '../support/process.js';
import { parseMetrics } from '../support/prometheus.js';
import { ensurePromtool, promtool } from '../support/promtool.js';
import { metricNames } from '../support/promql.js';
import { startTestService, type TestService } from '../support/service.js';

const DASHBOARD = path.join(PROJECT_ROOT, 'ops', 'grafana', 'dashboard.json');
const RULES = path.join(PROJECT_ROOT, 'ops', 'prometheus', 'alerts.yml');
/** The rules' unit tests: series in, alerts (labels and annotations) out, at given times. */
const RULE_TESTS = path.join(PROJECT_ROOT, 'ops', 'prometheus', 'alerts.test.yml');
/** How a panel names the dashboard's datasource variable (Grafana's syntax, not a template literal). */
const DATASOURCE_VARIABLE = '$' + '{datasource}';
/** Made by Prometheus for every target, never by the target itself. */
const SYNTHETIC = new Set(['up']);

type Panel = { type: string; title: string; datasource?: { type?: string; uid?: string }; targets?: { expr?: string }[] };
type Dashboard = { schemaVersion: number; panels: Panel[]; templating: { list: { name: string; type: string; query: unknown }[] } };

/** A service that has done a little of everything a series needs: transfers, a conservation check, an alert evaluation. */
async function busyScrape(svc: TestService): Promise<string> {
  await deposit(svc, 2101n, 'FUNDING', 'USDT', '10', 'ops-f');
  assert.is((await transfer(svc, 2101n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' })).status, 200);
  assert.is((await transfer(svc, 2101n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '100' })).status, 422);
  assert.is((await svc.call('GET', '/admin/v1/invariant', { token: svc.adminToken() })).status, 200);
  const deadline = Date.now() + 15_000;
  for (;;) {
    const text = await (await fetch(`${svc.base}/metrics`)).text();
    if (parseMetrics(text).get('transfer_alert_firing') !== undefined) return text;
    assert.ok(Date.now() < deadline, 'the alert gauges never appeared');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Every metric name `exprs` read that the scrape lacks, with the expression it came from. */
function missing(exprs: readonly string[], scraped: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const expr of exprs) {
    const names = metricNames(expr);
    assert.ok(names.length > 0, `no metric name found in ${expr}`);
    for (const name of names) if (!scraped.has(name) && !SYNTHETIC.has(name)) out.push(`${name} (in ${expr})`);
  }
  return out;
}

/** The rules file's expressions: each rule's `expr:` is one line in ops/prometheus/alerts.yml. */
function ruleExprs(yaml: string): string[] {
  const exprs = [...yaml.matchAll(/^\s+expr: (.+)$/gm)].map((m) => m[1] as string);
  assert.is(exprs.length, [...yaml.matchAll(/^\s+- alert: /gm)].length, 'one single-line expr per rule');
  return exprs;
}

test('promtool: a real scrape, the alert rules, and every name the dashboard and rules read', async () => {
  ensurePromtool();
  const svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0', ALERT_EVAL_INTERVAL_MS: '100' });
  let text: string;
  try {
    text = await busyScrape(svc);
  } finally {
    await svc.stop();
  }
  const checked = promtool(['check', 'metrics'], text);
  assert.equal([checked.status, checked.output], [0, ''], 'promtool check metrics reports no problem');
  const rules = promtool(['check', 'rules', RULES]);
  assert.is(rules.status, 0, rules.output);

  const scraped = parseMetrics(text).names();
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
  assert.ok(dashboard.schemaVersion >= 36, `schemaVersion ${dashboard.schemaVersion}`);
  assert.ok(
    dashboard.templating.list.some((v) => v.type === 'datasource' && v.query === 'prometheus'),
    'a Prometheus datasource variable',
  );
  const panels = dashboard.panels.filter((p) => p.type !== 'row');
  for (const p of panels) assert.is(p.datasource?.uid, DATASOURCE_VARIABLE, `${p.title} reads the datasource variable`);
  const dashboardExprs = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr ?? ''));
  assert.equal(missing(dashboardExprs, scraped), [], 'every metric the dashboard reads is scraped');
  assert.equal(missing(ruleExprs(readFileSync(RULES, 'utf8')), scraped), [], 'every metric the alert rules read is scraped');
});

test("the owner's and the standby's rules fire on a standby behind, a lease not proven, a changed epoch, a promotion and a retried SPOT log, and not before", () => {
  ensurePromtool();
  const run = promtool(['test', 'rules', RULE_TESTS]);
  assert.is(run.status, 0, run.output);
  assert.match(run.output, /SUCCESS/);
});

test('metricNames: functions, aggregations, groupings, strings and numbers are not names', () => {
  assert.equal(
    metricNames(
      'sum by (state) (rate(transfer_finished_total{job=~"$job",state!="COMMITTED"}[5m])) / clamp_min(sum(rate(x_total[5m])), 1e-9)',
    ),
    ['transfer_finished_total', 'x_total'],
  );
  assert.equal(metricNames('time() - max(transfer_conservation_last_check_timestamp_seconds) > 600'), [
    'transfer_conservation_last_check_timestamp_seconds',
  ]);
  assert.equal(metricNames('up{job="transfer"} == 0 or histogram_quantile(0.99, sum by (le) (rate(a_bucket[5m])))'), ['up', 'a_bucket']);
});

test.run();
