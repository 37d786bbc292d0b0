// Route tests as a table: each row is one request (method, path, who sends it, body) and what it
// must answer (status, error code, key fields), sent through the real service's Hono apps with
// `app.request`, no socket. A row may prepare its world first (deposits, assets, a halt) and undo
// it after; each row has a fresh user of its own, so the rows do not share balances or limits.
// Every JSON answer must also be what the service's OpenAPI document says for its operation.

import type { ErrorCode } from '../../src/domain/errors.js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { answerProblem, schemaValidator } from './openapi-check.js';
import type { AppReply, RequestOpts, TestService } from '../support/service.js';

export type RowContext = {
  readonly svc: TestService;
  /** A user id no other row uses. */
  readonly user: bigint;
  /** Values a row's setup found (a req_id, a directory), put in the path as `{name}`. */
  readonly vars: Record<string, string>;
  /** Sends a request to the app that serves `urlPath` (the admin app for the admin routes). */
  readonly send: (method: string, urlPath: string, opts?: RequestOpts) => Promise<AppReply>;
};

type Ctx<T> = T | ((ctx: RowContext) => T);

export type Row = {
  /** The test name: it starts with the spec's acceptance ID (ATK-007: ...) where the row is one. */
  readonly name: string;
  readonly method: string;
  /** A concrete path; `{name}` is replaced by `vars.name` after the setup. */
  readonly path: string;
  /** Who sends it: the row's user, an admin, nobody, or a token of the row's making. */
  readonly as: 'user' | 'admin' | 'none' | ((ctx: RowContext) => string);
  /** A string is sent as it is, an object as JSON. */
  readonly body?: Ctx<string | Readonly<Record<string, unknown>>>;
  readonly headers?: Readonly<Record<string, string>>;
  readonly setup?: (ctx: RowContext) => Promise<void>;
  readonly after?: (ctx: RowContext) => Promise<void>;
  readonly status: number;
  /** The error code answered; absent for a success. */
  readonly code?: ErrorCode;
  /** Fields the body must hold with these values. */
  readonly fields?: Ctx<Readonly<Record<string, unknown>>>;
  readonly check?: (reply: AppReply, ctx: RowContext) => void | Promise<void>;
};

/** A code no request can make the service answer, and why. */
export type Unreachable = { readonly code: ErrorCode; readonly why: string };

const ADMIN_PREFIXES = ['/admin/v1/', '/metrics', '/console'];

export function isAdminPath(urlPath: string): boolean {
  return ADMIN_PREFIXES.some((p) => urlPath.startsWith(p));
}

/**
 * Registers one uvu test per row; `svc` is read when the rows run (after `test.before`). Each JSON
 * answer is also checked against the service's own OpenAPI document: its status is documented for
 * the operation and its body matches that status's schema.
 */
export function registerRows(rows: readonly Row[], svc: () => TestService, firstUser: bigint): void {
  let nextUser = firstUser;
  let documented: Documented | undefined;
  for (const row of rows) {
    const user = nextUser++;
    test(row.name, async () => {
      documented ??= await documentOf(svc());
      await withinTime(runRow(row, svc(), user, documented), ROW_TIME_MS_MAX, row.name);
    });
  }
}

type Documented = { readonly doc: Record<string, unknown>; readonly compile: ReturnType<typeof schemaValidator> };

async function documentOf(svc: TestService): Promise<Documented> {
  const doc = (await svc.request('GET', '/openapi.json')).body;
  return { doc, compile: schemaValidator(doc) };
}

/** Null when the answer is what the document says for this operation and status. */
function documentProblem(row: Row, reply: AppReply, documented: Documented): string | null {
  if (!(reply.headers.get('content-type') ?? '').includes('application/json')) return null;
  const operation = operationOf(row, Object.keys(documented.doc.paths as Record<string, unknown>));
  // An unknown route's NOT_FOUND is the only answer of an operation the document cannot name.
  if (operation === null) return reply.status === 404 ? null : `${row.method} ${row.path}: no documented operation`;
  const template = operation.slice(row.method.length + 1);
  return answerProblem(documented.doc, documented.compile, row.method, template, reply.status, reply.body);
}

/** A row that hangs fails by its name instead of stopping the file at the runner's limit. */
const ROW_TIME_MS_MAX = 30_000;

async function withinTime(work: Promise<void>, ms: number, name: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`row did not finish in ${ms} ms: ${name}`)), ms);
  });
  try {
    await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function runRow(row: Row, s: TestService, user: bigint, documented: Documented): Promise<void> {
  const send = (method: string, urlPath: string, opts?: RequestOpts) =>
    isAdminPath(urlPath) ? s.adminRequest(method, urlPath, opts) : s.request(method, urlPath, opts);
  const ctx: RowContext = { svc: s, user, vars: {}, send };
  await row.setup?.(ctx);
  try {
    const reply = await send(row.method, fill(row.path, ctx.vars), requestOpts(row, ctx));
    const what = `${row.method} ${row.path} → ${reply.status} ${reply.text.slice(0, 300)}`;
    assert.is(reply.status, row.status, what);
    if (row.code !== undefined) {
      assert.is(reply.body.code, row.code, what);
      assert.type(reply.body.message, 'string', what);
    } else assert.is(reply.body.code, undefined, what);
    const fields = typeof row.fields === 'function' ? row.fields(ctx) : row.fields;
    for (const [key, value] of Object.entries(fields ?? {})) assert.equal(reply.body[key], value, `${key} in ${what}`);
    await row.check?.(reply, ctx);
    const problem = documentProblem(row, reply, documented);
    assert.ok(problem === null, problem ?? '');
  } finally {
    await row.after?.(ctx);
  }
}

function requestOpts(row: Row, ctx: RowContext): RequestOpts {
  const token =
    row.as === 'none'
      ? undefined
      : row.as === 'admin'
        ? ctx.svc.adminToken()
        : row.as === 'user'
          ? ctx.svc.userToken(ctx.user)
          : row.as(ctx);
  const body = typeof row.body === 'function' ? (row.body as (c: RowContext) => unknown)(ctx) : row.body;
  return {
    ...(token === undefined ? {} : { token }),
    ...(body === undefined ? {} : { body }),
    ...(row.headers === undefined ? {} : { headers: row.headers }),
  };
}

function fill(urlPath: string, vars: Readonly<Record<string, string>>): string {
  return urlPath.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const value = vars[name];
    if (value === undefined) throw new Error(`the setup did not set {${name}} for ${urlPath}`);
    return encodeURIComponent(value);
  });
}

/** The OpenAPI operation (`GET /api/v1/internal_transfer/{req_id}`) a row's request reaches, or null. */
export function operationOf(row: Row, templates: readonly string[]): string | null {
  const bare = row.path.split('?')[0] ?? row.path;
  const literal = templates.find((t) => t === bare);
  const found =
    literal ?? templates.find((t) => new RegExp(`^${t.replace(/\{[a-z_]+\}/g, '[^/]+')}$`).test(bare.replace(/\{[a-z_]+\}/g, 'x')));
  return found === undefined ? null : `${row.method} ${found}`;
}

/** Every operation of the OpenAPI document (`METHOD /path/{param}`). */
export function documentedOperations(doc: Record<string, unknown>): string[] {
  const paths = doc.paths as Record<string, Record<string, unknown>>;
  return Object.entries(paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
}

/** The documented operations that no row reaches. */
export function operationsWithoutRow(doc: Record<string, unknown>, rows: readonly Row[]): string[] {
  const templates = Object.keys(doc.paths as Record<string, unknown>);
  const reached = new Set(rows.map((r) => operationOf(r, templates)));
  return documentedOperations(doc).filter((op) => !reached.has(op));
}
