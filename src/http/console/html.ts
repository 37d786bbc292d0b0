// The console's markup: static, no data and no inline script or style (the CSP forbids both).
// console.js fills the regions marked with an id; aria-live regions announce what changed.

export const CONSOLE_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Transfers: operator console</title>
<link rel="stylesheet" href="/console/console.css">
<link rel="icon" href="/console/icon.svg" type="image/svg+xml">
<script src="/console/console.js" defer></script>
<script src="/console/console-actions.js" defer></script>
</head><body>
<header class="top">
  <h1>Transfers · operator console</h1>
  <form id="token-form" class="token" method="post" autocomplete="off">
    <label for="token">Admin token</label>
    <input id="token" name="token" type="password" spellcheck="false" autocomplete="off" placeholder="paste an admin JWT">
    <button type="submit">Use token</button>
    <button type="button" id="forget">Forget</button>
  </form>
  <p id="status" class="muted" aria-live="polite">No token yet: paste an admin token to begin.</p>
</header>
<div id="banner" class="banner" role="alert" hidden></div>
<main>
<section aria-labelledby="now-h" class="card wide">
  <h2 id="now-h">Now</h2>
  <dl class="stats" id="now">
    <div><dt>Transfers/s (last minute)</dt><dd id="tps">–</dd></div>
    <div><dt>p99 latency (last minute)</dt><dd id="p99">–</dd></div>
    <div><dt>UBSCore WAL position</dt><dd id="wal">–</dd></div>
    <div><dt>Halt</dt><dd id="halt">–</dd></div>
  </dl>
  <div class="pair">
    <div class="scroll"><table><caption>Unfinished transfers by state</caption><thead><tr><th scope="col">State</th><th scope="col" class="num">Count</th></tr></thead><tbody id="by-state"></tbody></table></div>
    <div class="scroll"><table><caption>Funds in flight</caption><thead><tr><th scope="col">Asset</th><th scope="col" class="num">Amount</th></tr></thead><tbody id="in-flight"></tbody></table></div>
  </div>
</section>
<section aria-labelledby="conservation-h" class="card">
  <h2 id="conservation-h">Conservation</h2>
  <p id="check-summary">No check seen yet.</p>
  <div class="scroll"><table><caption class="sr">Differences</caption><thead><tr><th scope="col">Account</th><th scope="col" class="num">Expected (units)</th><th scope="col" class="num">Actual (units)</th><th scope="col">Detail</th></tr></thead><tbody id="differences"></tbody></table></div>
  <p><button type="button" id="check-now">Run check now</button></p>
  <div id="resume-box" class="danger" hidden>
    <p id="halt-reason"></p>
    <label for="resume-confirm">Type RESUME to lift the halt</label>
    <input id="resume-confirm" type="text" autocomplete="off" spellcheck="false">
    <button type="button" id="resume">Resume</button>
  </div>
  <p id="check-result" aria-live="polite"></p>
</section>
<section aria-labelledby="ownership-h" class="card">
  <h2 id="ownership-h">Ownership and standby</h2>
  <dl class="stats" id="ownership">
    <div><dt>Role</dt><dd id="own-role">–</dd></div>
    <div><dt>Owner epoch</dt><dd id="own-epoch">–</dd></div>
    <div><dt>Lease</dt><dd id="own-lease">–</dd></div>
    <div><dt>Promoted at</dt><dd id="own-promoted">–</dd></div>
    <div><dt>PostgreSQL log: last seq</dt><dd id="own-log-seq">–</dd></div>
    <div><dt>PostgreSQL log: archived through</dt><dd id="own-archived">–</dd></div>
    <div><dt>PostgreSQL log: size</dt><dd id="own-log-size">–</dd></div>
  </dl>
  <p id="own-owner" class="muted"></p>
</section>
<section aria-labelledby="alerts-h" class="card">
  <h2 id="alerts-h">Alerts</h2>
  <ol id="alerts" class="list"></ol>
</section>
<section aria-labelledby="stuck-h" class="card wide">
  <h2 id="stuck-h">Stuck and unfinished transfers</h2>
  <p id="retry-result" aria-live="polite"></p>
  <ol id="unfinished" class="list"></ol>
</section>
<section aria-labelledby="search-h" class="card wide">
  <h2 id="search-h">Find a transfer</h2>
  <form id="search-form" class="search" method="post" autocomplete="off">
    <div class="field"><label for="q-req">req_id</label><input id="q-req" name="req_id" spellcheck="false"></div>
    <div class="field"><label for="q-user">User id</label><input id="q-user" name="user_id" inputmode="numeric"></div>
    <div class="field"><label for="q-coid">client_order_id (with a user)</label><input id="q-coid" name="client_order_id" spellcheck="false"></div>
    <button type="submit">Search</button>
  </form>
  <p id="search-status" aria-live="polite"></p>
  <ol id="search-results" class="list"></ol>
</section>
<section aria-labelledby="audit-h" class="card wide">
  <h2 id="audit-h">Audit trail</h2>
  <p id="audit-status"></p>
  <ol id="audit" class="list"></ol>
</section>
</main>
</body></html>`;
