// Checks an OpenAPI document the way a client generator relies on it: valid OpenAPI 3.1, an
// operationId and a declared tag on every operation, bearer security exactly on /api and /admin,
// every $ref resolving, every example valid against its schema, and every error status listing
// only codes of that status, a 400 with the error schema on every operation that checks its input,
// and servers and a licence at the top. Each check returns the problems found as readable lines.

import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { isErrorCode } from '../../src/domain/errors.js';
import { statusOf } from '../../src/http/errors.js';

type Json = Record<string, unknown>;
export type Operation = { readonly method: string; readonly path: string; readonly op: Json };

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const DOC_ID = 'https://openapi.invalid/document';
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export function operationsOf(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const method of METHODS) if (item[method] !== undefined) out.push({ method, path, op: item[method] as Json });
  }
  return out;
}

export async function specProblems(doc: Json): Promise<string[]> {
  const result = await new Validator().validate(structuredClone(doc));
  return result.valid ? [] : [`not OpenAPI 3.1: ${JSON.stringify(result.errors).slice(0, 2000)}`];
}

export function operationProblems(doc: Json): string[] {
  const problems: string[] = [];
  const ids = new Set<string>();
  const tags = new Set((doc.tags as { name: string }[] | undefined)?.map((t) => t.name));
  for (const { method, path, op } of operationsOf(doc)) {
    const name = `${method.toUpperCase()} ${path}`;
    const id = op.operationId;
    if (typeof id !== 'string' || !/^[a-z][A-Za-z0-9]*$/.test(id)) problems.push(`${name}: operationId missing or not camelCase`);
    else if (ids.has(id)) problems.push(`${name}: operationId ${id} used twice`);
    else ids.add(id);
    const opTags = op.tags as string[] | undefined;
    if (opTags === undefined || opTags.length === 0 || !opTags.every((t) => tags.has(t)))
      problems.push(`${name}: no tag, or a tag not declared at the top`);
    const isProtected = path.startsWith('/api/') || path.startsWith('/admin/');
    const security = JSON.stringify(op.security);
    if (isProtected && security !== '[{"bearer":[]}]') problems.push(`${name}: protected, but security is ${security}`);
    if (!isProtected && security !== '[]') problems.push(`${name}: public, but security is ${security}`);
    problems.push(...errorStatusProblems(name, op));
  }
  return problems;
}

/** Each 4xx/5xx answer is JSON whose code enum lists only codes of that status. */
function errorStatusProblems(name: string, op: Json): string[] {
  const problems: string[] = [];
  for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
    if (Number(status) < 400) continue;
    const codes = codeEnumOf(response);
    if (codes === null) problems.push(`${name} ${status}: no error schema with a code enum`);
    else
      for (const code of codes)
        if (!isErrorCode(code)) problems.push(`${name} ${status}: ${code} is no error code`);
        else if (String(statusOf(code)) !== status) problems.push(`${name} ${status}: ${code} is answered with ${statusOf(code)}`);
  }
  return problems;
}

function codeEnumOf(response: Json): string[] | null {
  const schema = ((response.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema as Json | undefined;
  const error = ((schema?.anyOf as Json[] | undefined)?.at(-1) ?? schema) as Json | undefined;
  const narrow = (error?.allOf as Json[] | undefined)?.[1] as Json | undefined;
  const codes = ((narrow?.properties as Json | undefined)?.code as Json | undefined)?.enum;
  return Array.isArray(codes) ? (codes as string[]) : null;
}

/**
 * Every operation that checks a body, a query or a path documents its 400 with the error schema,
 * where a validating proxy or a client generator looks for the answer to a bad request.
 */
export function inputProblems(doc: Json): string[] {
  const problems: string[] = [];
  for (const { method, path, op } of operationsOf(doc)) {
    const checks = op.requestBody !== undefined || ((op.parameters as Json[] | undefined) ?? []).length > 0;
    if (!checks) continue;
    const bad = (op.responses as Record<string, Json>)['400'];
    const schema = ((bad?.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema as Json | undefined;
    const error = ((schema?.anyOf as Json[] | undefined)?.at(-1) ?? schema) as Json | undefined;
    const base = ((error?.allOf as Json[] | undefined)?.[0] as Json | undefined)?.$ref;
    if (base !== '#/components/schemas/ErrorAnswer')
      problems.push(`${method.toUpperCase()} ${path}: checks its input, but no 400 with ErrorAnswer`);
  }
  return problems;
}

/** The document names its servers and its licence (Redocly's recommended rules ask for both). */
export function topProblems(doc: Json): string[] {
  const problems: string[] = [];
  const servers = doc.servers as { url?: unknown }[] | undefined;
  if (!Array.isArray(servers) || servers.length === 0 || !servers.every((s) => typeof s.url === 'string')) problems.push('no servers');
  const license = (doc.info as Json | undefined)?.license as Json | undefined;
  if (typeof license?.name !== 'string' || (typeof license.identifier !== 'string' && typeof license.url !== 'string'))
    problems.push('no licence with a name and an identifier or url');
  return problems;
}

export function refProblems(doc: Json): string[] {
  const problems: string[] = [];
  const visit = (node: unknown, at: string): void => {
    if (Array.isArray(node))
      node.forEach((n, i) => {
        visit(n, `${at}/${i}`);
      });
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && (typeof value !== 'string' || pointer(doc, value) === undefined))
        problems.push(`${at}: $ref ${String(value)} does not resolve`);
      else visit(value, `${at}/${key}`);
    }
  };
  visit(doc, '#');
  return problems;
}

function pointer(doc: Json, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = doc;
  for (const part of ref.slice(2).split('/')) node = (node as Json | undefined)?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  return node;
}

/** A JSON Schema 2020-12 validator that resolves the document's component references. */
export function schemaValidator(doc: Json): (schema: Json) => ValidateFunction {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  const toDefs = (schema: unknown): Json =>
    JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${DOC_ID}#/$defs/`)) as Json;
  ajv.addSchema({ $id: DOC_ID, $defs: toDefs((doc.components as Json).schemas) });
  return (schema) => ajv.compile(toDefs(schema));
}

/** Every example of a parameter, request body or answer, checked against its schema. */
export function exampleProblems(doc: Json): { problems: string[]; checked: number } {
  const compile = schemaValidator(doc);
  const problems: string[] = [];
  let checked = 0;
  const check = (where: string, holder: Json | undefined): void => {
    if (holder === undefined || !('example' in holder)) return;
    checked++;
    const validate = compile(holder.schema as Json);
    if (!validate(holder.example)) problems.push(`${where}: example does not match its schema: ${JSON.stringify(validate.errors)}`);
  };
  for (const { method, path, op } of operationsOf(doc)) {
    const name = `${method.toUpperCase()} ${path}`;
    for (const p of (op.parameters as Json[] | undefined) ?? []) check(`${name} parameter ${String(p.name)}`, p);
    check(`${name} body`, ((op.requestBody as Json | undefined)?.content as Json | undefined)?.['application/json'] as Json | undefined);
    for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
      check(`${name} ${status}`, (response.content as Json | undefined)?.['application/json'] as Json | undefined);
    }
  }
  return { problems, checked };
}

/** Whether `status` is documented for the operation and `body` matches its schema; null when so. */
export function answerProblem(
  doc: Json,
  compile: (schema: Json) => ValidateFunction,
  method: string,
  path: string,
  status: number,
  body: unknown,
): string | null {
  const op = ((doc.paths as Record<string, Json>)[path] as Json | undefined)?.[method.toLowerCase()] as Json | undefined;
  if (op === undefined) return `${method} ${path}: not in the document`;
  const response = (op.responses as Record<string, Json>)[String(status)];
  if (response === undefined) return `${method} ${path}: answered ${status}, not documented`;
  const schema = ((response.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema as Json | undefined;
  if (schema === undefined) return `${method} ${path} ${status}: no JSON schema`;
  const validate = compile(schema);
  return validate(body) ? null : `${method} ${path} ${status}: ${JSON.stringify(body)} does not match: ${JSON.stringify(validate.errors)}`;
}
