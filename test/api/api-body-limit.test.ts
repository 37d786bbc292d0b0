// Proves the body size limit over a real socket: a body of BODY_BYTES_MAX bytes is served and one byte more is 413 PAYLOAD_TOO_LARGE, whether its length is declared or it arrives chunked; a declared length over the limit is refused before the body is read or the token checked.

import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { deposit, fundsOf } from '../support/funds.js';
import { startTestService, type TestService } from '../support/service.js';

const BODY_BYTES_MAX = 1_024;
const USER = 1501n;
const COIN = 10n ** 8n;
const CHUNK_BYTES = 100;

let svc: TestService;

test.before(async () => {
  svc = await startTestService({ BODY_BYTES_MAX: String(BODY_BYTES_MAX), RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0' });
  await deposit(svc, USER, 'FUNDING', 'USDT', '100', 'body-seed');
});

test.after(async () => {
  await svc.stop();
});

type Answer = { readonly status: number; readonly body: Record<string, unknown> };
type Send = { readonly mode: 'length' | 'chunked'; readonly token?: string; readonly body: string };

/** A valid transfer of 1 USDT, padded with JSON whitespace to exactly `bytes` bytes. */
function transferOfBytes(bytes: number): string {
  const json = JSON.stringify({ from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' });
  assert.ok(bytes >= json.length);
  return json + ' '.repeat(bytes - json.length);
}

/** POSTs a transfer body with a Content-Length, or chunked in pieces with none. */
function post(send: Send): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (send.token !== undefined) headers.authorization = `Bearer ${send.token}`;
    if (send.mode === 'length') headers['content-length'] = String(Buffer.byteLength(send.body));
    else headers['transfer-encoding'] = 'chunked';
    const req = http.request(`${svc.base}/api/v1/internal_transfer`, { method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
    });
    // The server may answer and stop reading before every byte is sent; the answer is what counts.
    req.on('error', reject);
    for (let at = 0; at < send.body.length; at += CHUNK_BYTES) req.write(send.body.slice(at, at + CHUNK_BYTES));
    req.end();
  });
}

/** Sends only the headers, declaring `declared` bytes, and waits for the answer without sending any. */
function declareOnly(declared: number, token?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'content-length': String(declared) };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    const req = http.request(`${svc.base}/api/v1/internal_transfer`, { method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> });
      });
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}

async function transfersOf(user: bigint): Promise<number> {
  const rows = await svc.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE user_id = ${user.toString()}`;
  return rows[0]?.n as number;
}

for (const mode of ['length', 'chunked'] as const) {
  test(`${mode}: a transfer of exactly BODY_BYTES_MAX bytes is served`, async () => {
    const before = await transfersOf(USER);
    const r = await post({ mode, token: svc.userToken(USER), body: transferOfBytes(BODY_BYTES_MAX) });
    assert.is(r.status, 200, JSON.stringify(r.body));
    assert.is(r.body.state, 'COMMITTED');
    assert.is(await transfersOf(USER), before + 1);
  });

  test(`${mode}: one byte over BODY_BYTES_MAX, and far over it, is 413 PAYLOAD_TOO_LARGE and records nothing`, async () => {
    const before = await transfersOf(USER);
    for (const bytes of [BODY_BYTES_MAX + 1, 40 * BODY_BYTES_MAX]) {
      const r = await post({ mode, token: svc.userToken(USER), body: transferOfBytes(bytes) });
      assert.is(r.status, 413, `${bytes} bytes: ${JSON.stringify(r.body)}`);
      assert.is(r.body.code, 'PAYLOAD_TOO_LARGE');
    }
    assert.is(await transfersOf(USER), before);
  });
}

test('a declared length over the limit is refused before any body byte arrives, and before the token is checked', async () => {
  const withToken = await declareOnly(1_000_000, svc.userToken(USER));
  assert.equal([withToken.status, withToken.body.code], [413, 'PAYLOAD_TOO_LARGE']);
  const withoutToken = await declareOnly(BODY_BYTES_MAX + 1);
  assert.equal([withoutToken.status, withoutToken.body.code], [413, 'PAYLOAD_TOO_LARGE']);
});

test('the service still serves after refusing bodies, and funds moved only for the served transfers', async () => {
  const r = await post({ mode: 'length', token: svc.userToken(USER), body: transferOfBytes(100) });
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.equal(await fundsOf(svc, USER, 'USDT'), { funding: 97n * COIN, spot: 3n * COIN });
});

test.run();
