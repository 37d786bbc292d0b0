// The operator console's actions: what each button and form does, and the wiring that starts the
// page. Loaded after console.js (both classic scripts, so they share one global scope): it uses
// console.js's calls (api, poll, refused, describeFailure) and renderers, and transferItem's
// "Retry now" calls retry here.
// biome-ignore lint/suspicious/noRedundantUseStrict: the page loads this as a classic script, not a module.
'use strict';

// biome-ignore lint/correctness/noUnusedVariables: console.js's "Retry now" buttons call it.
async function retry(reqId, button) {
  button.disabled = true;
  const r = await api('POST', `/admin/v1/transfers/${encodeURIComponent(reqId)}/retry`);
  button.disabled = false;
  const text =
    r.status === 200
      ? `Retry answered: ${r.body.state}, retries ${r.body.retry_count}${r.body.error_code ? `, ${r.body.error_code}` : ''}`
      : `Retry failed: ${describeFailure(r)}`;
  retryAnswers.set(reqId, { ok: r.status === 200, text });
  $('retry-result').textContent = `${reqId}: ${text}`;
  if (!refused(r)) poll();
}

async function checkNow() {
  const button = $('check-now');
  button.disabled = true;
  $('check-result').textContent = 'Running the conservation check…';
  const r = await api('GET', '/admin/v1/invariant');
  button.disabled = false;
  if (refused(r)) return;
  if (r.status !== 200) {
    $('check-result').textContent = `Check failed to run: ${describeFailure(r)}`;
    return;
  }
  renderCheck(r.body);
  $('check-result').textContent = r.body.ok
    ? `Check passed at ${r.body.checked_at}.`
    : `Check found ${r.body.differences.length} difference(s)${r.body.halted ? '; the service is halted' : ''}.`;
  poll();
}

async function resume() {
  const typed = $('resume-confirm').value.trim();
  if (typed !== 'RESUME') {
    $('check-result').textContent = 'Not sent: type RESUME in the box to confirm lifting the halt.';
    $('check-result').className = 'error';
    $('resume-confirm').focus();
    return;
  }
  $('check-result').className = '';
  const r = await api('POST', '/admin/v1/resume');
  if (refused(r)) return;
  $('resume-confirm').value = '';
  $('check-result').textContent =
    r.status === 200 ? `Halt lifted (was: ${r.body.previous_reason ?? 'not halted'}).` : `Resume failed: ${describeFailure(r)}`;
  poll();
}

async function search(ev) {
  ev.preventDefault();
  const params = new URLSearchParams();
  for (const [name, id] of [
    ['req_id', 'q-req'],
    ['user_id', 'q-user'],
    ['client_order_id', 'q-coid'],
  ]) {
    const value = $(id).value.trim();
    if (value !== '') params.set(name, value);
  }
  if ([...params].length === 0) {
    $('search-status').textContent = 'Give a req_id, a user id, or a user id with a client_order_id.';
    return;
  }
  const r = await api('GET', `/admin/v1/transfers/search?${params}`);
  if (refused(r)) return;
  if (r.status !== 200) {
    $('search-status').textContent =
      `Search refused: ${describeFailure(r)}${r.body.field ? ` (field ${r.body.field}${r.body.detail ? `: ${r.body.detail}` : ''})` : ''}`;
    fill('search-results', []);
    return;
  }
  $('search-status').textContent = `${r.body.transfers.length} transfer(s) found.`;
  fill(
    'search-results',
    r.body.transfers.map((t) => transferItem(t, { stuck: false, retry: false })),
  );
}

function useToken(ev) {
  ev.preventDefault();
  const value = $('token').value.trim();
  $('token').value = '';
  if (value === '') {
    $('status').textContent = 'The token box is empty.';
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, value);
  denied = null;
  $('status').textContent = 'Token kept for this tab; loading…';
  poll();
}

function forget() {
  sessionStorage.removeItem(TOKEN_KEY);
  denied = null;
  showBanner();
  $('status').textContent = 'Token forgotten.';
}

document.addEventListener('DOMContentLoaded', () => {
  $('token-form').addEventListener('submit', useToken);
  $('forget').addEventListener('click', forget);
  $('check-now').addEventListener('click', checkNow);
  $('resume').addEventListener('click', resume);
  $('search-form').addEventListener('submit', search);
  poll();
});
