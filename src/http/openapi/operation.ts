// One OpenAPI operation: its id, tag, security, parameters, body and a response for every status
// it can answer, errors grouped by status with the codes of that status as an enum.

import type { ErrorCode } from '../../domain/errors.js';
import { errorBody, statusOf } from '../errors.js';
import { ref, type SchemaName } from './components.js';

type Json = Record<string, unknown>;

/** Who may call: a user's token (/api), an admin's (/admin), or anyone. */
type Auth = 'user' | 'admin' | 'public';

/**
 * Codes every route can answer before it runs: a malformed Content-Length (400), one above
 * BODY_BYTES_MAX (413), an unhandled failure (500), a stopping service (503), and, on every
 * route but the probes, an owner lease this process cannot prove (503: src/http/middleware/owner-gate.ts).
 */
const EVERY_ROUTE: readonly ErrorCode[] = ['INVALID_REQUEST', 'PAYLOAD_TOO_LARGE', 'SYSTEM_ERROR', 'SERVICE_UNAVAILABLE'];
const OWNER_GATED: readonly ErrorCode[] = ['OWNER_LEASE_UNPROVEN'];
const BY_AUTH: Readonly<Record<Auth, readonly ErrorCode[]>> = {
  user: ['UNAUTHORIZED', 'RATE_LIMIT_EXCEEDED'],
  admin: ['UNAUTHORIZED', 'FORBIDDEN'],
  public: [],
};

type OperationSpec = {
  readonly id: string;
  readonly tag: string;
  readonly summary: string;
  readonly auth: Auth;
  /** Successful answers by status. */
  readonly ok: Readonly<Record<string, Json>>;
  /** The error codes this route answers besides those of every route and of its auth. */
  readonly codes?: readonly ErrorCode[];
  /** An error example to use for a status instead of the bare first code. */
  readonly errorExamples?: Readonly<Record<string, Json>>;
  /** Another shape a status may answer besides the error body (readyz's 503 names what is down). */
  readonly alsoAnswers?: Readonly<Record<string, SchemaName>>;
  readonly parameters?: readonly Json[];
  readonly body?: { readonly schema: SchemaName; readonly example: Json };
  /** /healthz and /readyz: answered whether or not the owner lease is proven. */
  readonly probe?: true;
};

export function operation(spec: OperationSpec): Json {
  const codes = [...new Set([...(spec.codes ?? []), ...BY_AUTH[spec.auth], ...EVERY_ROUTE, ...(spec.probe ? [] : OWNER_GATED)])];
  return {
    operationId: spec.id,
    tags: [spec.tag],
    summary: spec.summary,
    security: spec.auth === 'public' ? [] : [{ bearer: [] }],
    ...(spec.parameters === undefined ? {} : { parameters: spec.parameters }),
    ...(spec.body === undefined
      ? {}
      : {
          requestBody: { required: true, content: { 'application/json': { schema: ref(spec.body.schema), example: spec.body.example } } },
        }),
    responses: { ...spec.ok, ...errorResponses(codes, spec.errorExamples ?? {}, spec.alsoAnswers ?? {}) },
  };
}

/** A JSON answer whose schema is a component. */
export function json(name: SchemaName, description: string, example: unknown): Json {
  return { description, content: { 'application/json': { schema: ref(name), example } } };
}

/** The error answers, one per status, each listing the codes of that status. */
function errorResponses(
  codes: readonly ErrorCode[],
  examples: Readonly<Record<string, Json>>,
  also: Readonly<Record<string, SchemaName>>,
): Record<string, Json> {
  const byStatus = new Map<string, ErrorCode[]>();
  for (const code of codes) byStatus.set(String(statusOf(code)), [...(byStatus.get(String(statusOf(code))) ?? []), code]);
  const out: Record<string, Json> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => Number(a) - Number(b))) {
    const error = { allOf: [ref('ErrorAnswer'), { type: 'object', required: ['code'], properties: { code: { enum: list } } }] };
    const other = also[status];
    const schema = other === undefined ? error : { anyOf: [ref(other), error] };
    out[status] = {
      description: list.join(', '),
      content: { 'application/json': { schema, example: examples[status] ?? errorBody(list[0] as ErrorCode) } },
    };
  }
  return out;
}
