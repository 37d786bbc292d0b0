// The real service, started in this process on a fresh database, a fresh data directory and a
// free port, with helpers to call it over HTTP the way a client does (`call`) or in-process
// through its Hono apps' `app.request(...)`, with no socket (`request`, `adminRequest`): the same
// apps, the same PostgreSQL, UBSCore and coordinators behind them. stop() removes it all.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Hono } from 'hono';
import { loadConfig } from '../../src/config/config.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { signJwt } from '../../src/http/auth/jwt.js';
import { createLogger } from '../../src/log.js';
import { startService } from '../../src/compose/service.js';
import { serviceThreads } from '../../actors/threads.js';
import { createTestDatabase } from './database.js';

export const TEST_JWT_SECRET = 'test-secret-0123456789-0123456789-abcdef';

export type Reply = { readonly status: number; readonly body: Record<string, unknown> };

/** An in-process answer: the JSON body when it is JSON (else `{}`), and the raw text and headers. */
export type AppReply = Reply & { readonly text: string; readonly headers: Headers };

export type RequestOpts = {
  readonly token?: string;
  /** A string is sent as it is; anything else as JSON. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
};

export type TestService = {
  readonly base: string;
  /** The admin listener's base URL with ADMIN_PORT, else null (admin routes are on `base`). */
  readonly adminBase: string | null;
  /** An unfenced pool on the service's database (no owner epoch: the fence lets it write). */
  readonly sql: Sql;
  /** The service's database, for a test that opens a connection of its own (one at the owner's epoch, say). */
  readonly databaseUrl: string;
  readonly userToken: (userId: bigint | number | string) => string;
  readonly adminToken: () => string;
  readonly call: (method: string, urlPath: string, opts?: { token?: string; body?: unknown }) => Promise<Reply>;
  /** The public app's `app.request`: the client routes, the probes, the docs (and the admin routes without ADMIN_PORT). */
  readonly request: (method: string, urlPath: string, opts?: RequestOpts) => Promise<AppReply>;
  /** The app that serves the admin routes: the admin app with ADMIN_PORT, else the public one. */
  readonly adminRequest: (method: string, urlPath: string, opts?: RequestOpts) => Promise<AppReply>;
  readonly stop: () => Promise<void>;
};

export async function startTestService(env: Record<string, string> = {}): Promise<TestService> {
  const db = await createTestDatabase();
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-svc-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: db.url,
    PORT: '0',
    JWT_SECRET: TEST_JWT_SECRET,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
    // Two shards whatever the machine's default, so routing across shards is always exercised.
    COORDINATORS: '2',
    ...env,
  });
  const service = await startService(config, createLogger({ level: config.logLevel, name: 'test' }), serviceThreads);
  const sql = openSql(db.url, { max: 2, application: 'test' });
  const base = `http://127.0.0.1:${service.port}`;
  const exp = () => Math.floor(Date.now() / 1000) + 3600;
  return {
    base,
    adminBase: service.adminPort === null ? null : `http://127.0.0.1:${service.adminPort}`,
    sql,
    databaseUrl: db.url,
    userToken: (userId) => signJwt({ sub: String(userId), exp: exp() }, TEST_JWT_SECRET),
    adminToken: () => signJwt({ sub: '1', exp: exp(), role: 'admin' }, TEST_JWT_SECRET),
    call: async (method, urlPath, opts = {}) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
      const init: RequestInit = { method, headers };
      if (opts.body !== undefined) init.body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      const response = await fetch(base + urlPath, init);
      const text = await response.text();
      return { status: response.status, body: JSON.parse(text) as Record<string, unknown> };
    },
    request: (method, urlPath, opts) => appRequest(service.apps.public, method, urlPath, opts),
    adminRequest: (method, urlPath, opts) => appRequest(service.apps.admin ?? service.apps.public, method, urlPath, opts),
    stop: async () => {
      await sql.end({ timeout: 5 });
      await service.stop();
      await db.drop();
      await fs.rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** One request through `app.request`, with no socket: what `call` does, without the network. */
async function appRequest(app: Hono, method: string, urlPath: string, opts: RequestOpts = {}): Promise<AppReply> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...opts.headers };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  const init: RequestInit = { method, headers };
  if (opts.body !== undefined) init.body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  const response = await app.request(urlPath, init);
  const text = await response.text();
  const isJson = (response.headers.get('content-type') ?? '').includes('application/json');
  return { status: response.status, body: isJson ? (JSON.parse(text) as Record<string, unknown>) : {}, text, headers: response.headers };
}
