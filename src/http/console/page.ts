// GET /console: the operator console. The page is public and holds no data: its script asks the
// admin JSON routes with the token the operator pastes (kept in sessionStorage, sent only as
// `Authorization: Bearer`). Everything it loads comes from this service; the Content-Security-
// Policy says so to the browser, and forbids inline script, inline style and form submission.

import { readFileSync } from 'node:fs';
import type { Hono } from 'hono';
import { CONSOLE_PAGE } from './html.js';

/** Where the hand-written script and style live: beside this file in the source tree. */
const ASSET_DIR = new URL('../../../../src/http/console/', import.meta.url);
const ASSETS: Readonly<Record<string, string>> = {
  'console.js': 'text/javascript; charset=utf-8',
  'console-actions.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
  'icon.svg': 'image/svg+xml',
};

const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export function mountConsole(app: Hono): void {
  // Read once at start: a missing file stops the service at once rather than a page later.
  const files = new Map(
    Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(new URL(name, ASSET_DIR), 'utf8') }]),
  );
  app.get('/console', (c) => c.html(CONSOLE_PAGE, 200, HEADERS));
  app.get('/console/:file', (c) => {
    const file = files.get(c.req.param('file'));
    if (file === undefined) return c.json({ code: 'NOT_FOUND', message: 'No such resource' }, 404);
    return c.body(file.body, 200, { ...HEADERS, 'content-type': file.type });
  });
}
