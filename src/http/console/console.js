// The operator console's script. It asks the service's admin JSON routes with the pasted token
// (sessionStorage only; sent as `Authorization: Bearer`, never in a URL) and redraws the page
// from their answers. One poll at a time, every POLL_MS after the last one ends; each call is cut
// at CALL_TIMEOUT_MS. Amounts stay the decimal strings the API answers: nothing here does
// arithmetic on money. Text is always set with textContent, never parsed as HTML.
// biome-ignore lint/suspicious/noRedundantUseStrict: the page loads this as a classic script, not a module.
'use strict';

const POLL_MS = 3000;
const CALL_TIMEOUT_MS = 8000;
const TOKEN_KEY = 'console.adminToken';
const LIST_LIMIT = 100;
const ALERT_LIMIT = 30;
const AUDIT_LIMIT = 30;

const $ = (id) => document.getElementById(id);
let timer = null;
let polling = false;
let pollAgain = false;
/** Why the token was refused (401/403), shown until another token is given; null otherwise. */
let denied = null;
/** Why the service is not ready, from the last /readyz; null when ready. */
let unready = null;
/** The last retry answer per req_id, shown in the transfer's row until the page reloads. */
const retryAnswers = new Map();

/** Builds an element: h('li', { class: 'x' }, 'text', child). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  return el;
}

function fill(id, nodes) {
  $(id).replaceChildren(...nodes);
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** One call: answers { status, body } or { status: 0, body: { message } } when nothing came back. */
async function api(method, path, withToken = true) {
  const headers = { accept: 'application/json' };
  if (withToken) headers.authorization = `Bearer ${token() ?? ''}`;
  try {
    const res = await fetch(path, { method, headers, cache: 'no-store', signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    const text = await res.text();
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      body = { message: text.slice(0, 200) };
    }
    return { status: res.status, body };
  } catch (error) {
    return { status: 0, body: { message: error instanceof Error ? error.message : String(error) } };
  }
}

function describeFailure(r) {
  if (r.status === 0) return `no answer from the service (${r.body.message})`;
  return `${r.status} ${r.body.code ?? ''} ${r.body.message ?? ''}`.trim();
}

/** True when the token was refused: says so in the banner, and data polling waits for a new one. */
function refused(r) {
  if (r.status !== 401 && r.status !== 403) return false;
  const why =
    r.status === 401
      ? 'the token was refused (401 UNAUTHORIZED): paste a valid admin token'
      : 'this token is not an admin token (403 FORBIDDEN): admin routes need role=admin';
  denied = `Access denied: ${why}.`;
  showBanner();
  return true;
}

function showBanner() {
  const b = $('banner');
  const lines = [unready, denied].filter((x) => x !== null);
  b.replaceChildren(...lines.map((line) => h('div', {}, line)));
  b.hidden = lines.length === 0;
}

function age(iso) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

function historyList(history) {
  return h(
    'details',
    {},
    h('summary', {}, `State history (${history.length})`),
    h(
      'ol',
      {},
      history.map((e) => h('li', {}, h('span', { class: 'mono' }, e.state), ` ${e.event} · ${e.at}${e.detail ? ` · ${e.detail}` : ''}`)),
    ),
  );
}

function transferItem(t, opts) {
  const answer = retryAnswers.get(t.req_id);
  return h(
    'li',
    { class: opts.stuck ? 'stuck' : null, 'data-req-id': t.req_id },
    h(
      'div',
      { class: 'row' },
      opts.stuck ? h('span', { class: 'badge STUCK' }, 'STUCK') : null,
      h('strong', { class: 'mono' }, t.state),
      h('span', { class: 'mono' }, t.req_id),
      h('span', {}, `user ${t.user_id}`),
      h('span', {}, `${t.from} → ${t.to}`),
      h('span', { class: 'mono' }, `${t.amount} ${t.asset}`),
    ),
    h(
      'div',
      { class: 'row muted' },
      h('span', {}, `retries ${t.retry_count}`),
      h('span', {}, `age ${age(t.created_at)}`),
      t.client_order_id ? h('span', {}, `client_order_id ${t.client_order_id}`) : null,
      t.error_code ? h('span', {}, `error ${t.error_code}`) : null,
      t.last_error ? h('span', {}, `last error: ${t.last_error}`) : null,
    ),
    t.advice ? h('div', { class: 'row advice' }, t.advice) : null,
    historyList(t.history),
    opts.retry
      ? h(
          'div',
          { class: 'row' },
          h(
            'button',
            { type: 'button', class: 'retry', 'aria-label': `Retry ${t.req_id} now`, onclick: (ev) => retry(t.req_id, ev.currentTarget) },
            'Retry now',
          ),
          answer ? h('span', { class: answer.ok ? 'retry-answer' : 'retry-answer error' }, answer.text) : null,
        )
      : null,
  );
}

function renderOverview(o) {
  $('tps').textContent = o.now.transfers_per_s;
  $('p99').textContent = o.now.p99_ms === null ? 'no requests' : `${o.now.p99_above_max ? '> ' : '≤ '}${o.now.p99_ms} ms`;
  $('wal').textContent = o.wal_seq === null ? 'UBSCore did not answer' : String(o.wal_seq);
  $('halt').replaceChildren(
    o.halt.halted ? h('span', { class: 'badge HALTED' }, 'HALTED') : h('span', { class: 'badge RUNNING' }, 'RUNNING'),
  );
  fill(
    'by-state',
    Object.entries(o.unfinished_by_state).map(([state, n]) =>
      h('tr', { 'data-state': state }, h('td', { class: 'mono' }, state), h('td', { class: 'num' }, String(n))),
    ),
  );
  fill(
    'in-flight',
    o.in_flight.length === 0
      ? [h('tr', {}, h('td', { colspan: 2 }, 'none'))]
      : o.in_flight.map((f) => h('tr', { 'data-asset': f.asset }, h('td', {}, f.asset), h('td', { class: 'num mono' }, f.amount))),
  );
  renderCheck(o.last_check);
  $('resume-box').hidden = !o.halt.halted;
  $('halt-reason').textContent = o.halt.halted
    ? `Halted since ${o.halt.since}: ${o.halt.reason}. New transfers are refused and transfers in INIT are held (their funds have not moved); those past INIT finish. Only corrections that carry a correction_reason move funds. Resume releases the held transfers.`
    : '';
}

/** A byte count as the page shows it: KiB, MiB or GiB with one decimal. */
function size(bytes) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let n = bytes;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i += 1;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}

function renderOwnership(o) {
  $('own-role').replaceChildren(
    h('span', { class: `badge ${o.role === 'primary' ? 'OK' : 'WARNING'}` }, o.role),
    o.promoted ? ' (promoted from standby)' : '',
  );
  $('own-epoch').textContent = o.epoch === null ? 'none' : String(o.epoch);
  const lease = o.lease.state === null ? 'none' : `${o.lease.state}, ${(o.lease.left_ms / 1000).toFixed(1)} s left`;
  $('own-lease').replaceChildren(h('span', { class: `badge ${o.lease.state === 'proven' ? 'OK' : 'CRITICAL'}` }, lease));
  $('own-promoted').textContent = o.ledger_owner.promoted_at ?? 'never';
  $('own-log-seq').textContent = String(o.spot_log.last_seq);
  $('own-archived').textContent = String(o.spot_log.archived_through_seq);
  const b = o.spot_log.bytes;
  $('own-log-size').textContent = size(b.spot_log + b.spot_snapshots + b.spot_processed);
  $('own-owner').textContent =
    `Owner of record: ${o.ledger_owner.owner || 'none'} (epoch ${o.ledger_owner.epoch}); spot_log ${size(b.spot_log)}, spot_snapshots ${size(b.spot_snapshots)}, spot_processed ${size(b.spot_processed)}.`;
}

function renderCheck(c) {
  if (c === null) {
    $('check-summary').textContent = 'No check has run since the service started.';
    fill('differences', []);
    return;
  }
  $('check-summary').replaceChildren(
    h('span', { class: `badge ${c.ok ? 'OK' : 'CRITICAL'}` }, c.ok ? 'OK' : 'DIFFERENCES'),
    ` last check ${c.checked_at} at WAL ${c.wal_seq}: ${c.differences.length} difference(s)`,
  );
  fill(
    'differences',
    c.differences.length === 0
      ? [h('tr', {}, h('td', { colspan: 4 }, 'none'))]
      : c.differences.map((d) =>
          h(
            'tr',
            {},
            h('td', { class: 'mono' }, d.account),
            h('td', { class: 'num mono' }, d.expected_units),
            h('td', { class: 'num mono' }, d.actual_units),
            h('td', {}, d.detail ?? ''),
          ),
        ),
  );
}

function renderTransfers(all, stuck) {
  const stuckIds = new Set(stuck.map((t) => t.req_id));
  const ordered = [...stuck, ...all.filter((t) => !stuckIds.has(t.req_id))];
  fill(
    'unfinished',
    ordered.length === 0
      ? [h('li', {}, 'No unfinished transfer.')]
      : ordered.map((t) => transferItem(t, { stuck: stuckIds.has(t.req_id), retry: true })),
  );
}

function renderAlerts(alerts) {
  fill(
    'alerts',
    alerts.length === 0
      ? [h('li', {}, 'No alert.')]
      : alerts.map((a) =>
          h(
            'li',
            {},
            h(
              'div',
              { class: 'row' },
              h('span', { class: `badge ${a.severity}` }, a.severity),
              h('strong', {}, a.kind),
              h('span', { class: 'muted' }, a.created_at),
            ),
            h('div', {}, a.message),
            a.req_id ? h('div', { class: 'mono muted' }, `req_id ${a.req_id}`) : null,
          ),
        ),
  );
}

function renderAudit(r) {
  if (r.status === 404) {
    $('audit-status').textContent = 'Audit trail not available on this service (GET /admin/v1/audit answered 404).';
    fill('audit', []);
    return;
  }
  if (r.status !== 200) {
    $('audit-status').textContent = `Audit trail could not be read: ${describeFailure(r)}`;
    return;
  }
  const entries = r.body.items ?? [];
  $('audit-status').textContent = `${entries.length} most recent admin action(s), newest first.`;
  fill(
    'audit',
    entries.length === 0
      ? [h('li', {}, 'No admin action yet.')]
      : entries.map((e) =>
          h(
            'li',
            { 'data-audit-id': e.id, 'data-action': e.action },
            h(
              'div',
              { class: 'row' },
              h('strong', {}, e.action),
              h(
                'span',
                { class: `badge ${e.outcome === 'ok' ? 'OK' : 'WARNING'}` },
                e.outcome === 'ok' ? 'ok' : `${e.status} ${e.outcome}`,
              ),
              h('span', { class: 'muted' }, e.at),
            ),
            h('div', { class: 'mono muted' }, `by ${e.operator}${describeTarget(e.target)}`),
          ),
        ),
  );
}

/** The audit entry's target in one line: its fields joined, nothing when it has none. */
function describeTarget(target) {
  const parts = Object.entries(target ?? {})
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k} ${String(v)}`);
  return parts.length === 0 ? '' : ` · ${parts.join(' · ')}`;
}

async function pollReady() {
  const r = await api('GET', '/readyz', false);
  unready = null;
  if (r.status === 200) return;
  const reasons = [];
  if (r.status === 0) reasons.push(r.body.message);
  if (r.body.postgres === false) reasons.push('PostgreSQL does not answer');
  if (r.body.ubscore === false) reasons.push('UBSCore does not answer');
  if (r.body.halted === true) reasons.push(`halted: ${r.body.halt_reason}`);
  unready = `Service not ready (${r.status === 0 ? 'no answer' : r.status}): ${reasons.join('; ') || describeFailure(r)}`;
}

// biome-ignore lint/correctness/noUnusedVariables: console-actions.js calls it after each action.
async function poll() {
  if (polling) {
    pollAgain = true;
    return;
  }
  polling = true;
  clearTimeout(timer);
  try {
    await pollReady();
    showBanner();
    if (token() === null || denied !== null) return;
    const [overview, all, stuck, alerts, audit, ownership] = await Promise.all([
      api('GET', '/admin/v1/overview'),
      api('GET', `/admin/v1/transfers?limit=${LIST_LIMIT}`),
      api('GET', `/admin/v1/transfers?stuck=true&limit=${LIST_LIMIT}`),
      api('GET', `/admin/v1/alerts?limit=${ALERT_LIMIT}`),
      api('GET', `/admin/v1/audit?limit=${AUDIT_LIMIT}`),
      api('GET', '/admin/v1/ownership'),
    ]);
    if (refused(overview)) return;
    if (overview.status === 200) renderOverview(overview.body);
    if (all.status === 200 && stuck.status === 200) renderTransfers(all.body.transfers, stuck.body.transfers);
    if (alerts.status === 200) renderAlerts(alerts.body.alerts);
    if (ownership.status === 200) renderOwnership(ownership.body);
    renderAudit(audit);
    const failed = [overview, all, stuck, alerts, ownership].find((r) => r.status !== 200);
    $('status').textContent = failed
      ? `Last refresh ${new Date().toLocaleTimeString()} incomplete: ${describeFailure(failed)}`
      : `Refreshed ${new Date().toLocaleTimeString()}; every ${POLL_MS / 1000} s.`;
  } finally {
    polling = false;
    if (pollAgain) {
      pollAgain = false;
      queueMicrotask(poll);
    } else {
      timer = setTimeout(poll, POLL_MS);
    }
  }
}
