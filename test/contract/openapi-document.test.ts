// Proves that the OpenAPI document the code builds is valid OpenAPI 3.1 that a client generator
// or a validating proxy can rely on (ids, tags, security, resolving $refs, true examples, codes
// by status, a 400 wherever input is checked, servers and a licence, Redocly's recommended rules
// with no problem), and that each check catches the defect it is for.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openApiDocument } from '../../src/http/openapi/document.js';
import {
  exampleProblems,
  inputProblems,
  operationProblems,
  operationsOf,
  refProblems,
  specProblems,
  topProblems,
} from './openapi-check.js';
import { redoclyProblems } from './redocly.js';

type Json = Record<string, unknown>;
const fresh = (): Json => openApiDocument();
const op = (doc: Json, path: string, method: string): Json => ((doc.paths as Record<string, Json>)[path] as Json)[method] as Json;

test('the document is valid OpenAPI 3.1', async () => {
  assert.equal(await specProblems(fresh()), []);
});

test('every operation has a camelCase operationId, a declared tag, and bearer security exactly on /api and /admin', () => {
  const doc = fresh();
  assert.equal(operationProblems(doc), []);
  assert.ok(operationsOf(doc).length >= 23, 'every operation is listed');
});

test('every operation that checks a body, a query or a path documents its 400 with the error schema', () => {
  const doc = fresh();
  assert.equal(inputProblems(doc), []);
  const checked = operationsOf(doc).filter(({ op }) => op.requestBody !== undefined || op.parameters !== undefined);
  assert.ok(checked.length >= 14, `only ${checked.length} operations check input`);
});

test('the document names its servers and its licence', () => {
  assert.equal(topProblems(fresh()), []);
});

test("Redocly's recommended rules (redocly.yaml, as make lint runs them) find nothing, offline", async () => {
  assert.equal(await redoclyProblems(fresh()), []);
});

test('a 500 of a transfer documents the req_id it carries once the transfer was given one', () => {
  const doc = fresh();
  const error = ((doc.components as Json).schemas as Record<string, Json>).ErrorAnswer as Json;
  assert.match(String(((error.properties as Json).req_id as Json).description), '500 included');
  const failed = (op(doc, '/api/v1/internal_transfer', 'post').responses as Record<string, Json>)['500'] as Json;
  assert.ok(typeof (((failed.content as Json)['application/json'] as Json).example as Json).req_id === 'string');
});

test('every $ref resolves, and the shared answers are components', () => {
  const doc = fresh();
  assert.equal(refProblems(doc), []);
  const schemas = Object.keys((doc.components as Json).schemas as Json);
  for (const name of ['TransferAnswer', 'ErrorAnswer', 'HistoryPage', 'Balances', 'Alert', 'AuditEntry', 'TransferRequest'])
    assert.ok(schemas.includes(name), name);
  const ok = (op(doc, '/api/v1/internal_transfer', 'post').responses as Record<string, Json>)['200'] as Json;
  assert.equal(((ok.content as Json)['application/json'] as Json).schema, { $ref: '#/components/schemas/TransferAnswer' });
});

test('every example validates against its schema', () => {
  const { problems, checked } = exampleProblems(fresh());
  assert.equal(problems, []);
  assert.ok(checked >= 100, `only ${checked} examples`);
});

test('query parameters carry the bounds the routes enforce', () => {
  const params = op(fresh(), '/api/v1/internal_transfer', 'get').parameters as Json[];
  const schemaOf = (name: string) => params.find((p) => p.name === name)?.schema as Json;
  assert.equal(schemaOf('limit'), { type: 'integer', minimum: 1, maximum: 100, default: 20 });
  assert.ok((schemaOf('state').enum as string[]).includes('TARGET_PENDING'));
  assert.ok((schemaOf('state').enum as string[]).includes('PENDING'), 'PENDING, the state clients are shown');
  assert.is(((schemaOf('from_time').oneOf as Json[])[0] as Json).format, 'date-time');
});

// The checks above must fail when a defect is put back: each mutation below must be reported.

test('a missing operationId, a missing security, a wrong code for a status are reported', () => {
  const doc = fresh();
  delete op(doc, '/api/v1/balances', 'get').operationId;
  op(doc, '/admin/v1/halt', 'post').security = [];
  const notFound = (op(doc, '/api/v1/internal_transfer/{req_id}', 'get').responses as Record<string, Json>)['404'] as Json;
  const schema = ((notFound.content as Json)['application/json'] as Json).schema as Json;
  (((schema.allOf as Json[])[1] as Json).properties as Json).code = { enum: ['NOT_FOUND', 'FORBIDDEN'] };
  const problems = operationProblems(doc).join('\n');
  assert.match(problems, 'GET /api/v1/balances: operationId missing');
  assert.match(problems, 'POST /admin/v1/halt: protected');
  assert.match(problems, 'FORBIDDEN is answered with 403');
});

test('an example that does not match its schema, and a dangling $ref, are reported', async () => {
  const doc = fresh();
  const ok = (op(doc, '/api/v1/balances', 'get').responses as Record<string, Json>)['200'] as Json;
  ((ok.content as Json)['application/json'] as Json).example = {
    funding: [{ asset: 'USDT', available: 74.5, status: 'ACTIVE' }],
    spot: [],
  };
  (op(doc, '/api/v1/internal_transfer', 'get').parameters as Json[]).push({
    name: 'limit2',
    in: 'query',
    schema: { type: 'integer', maximum: 100 },
    example: 101,
  });
  const problems = exampleProblems(doc).problems.join('\n');
  assert.match(problems, 'GET /api/v1/balances 200: example does not match');
  assert.match(problems, 'parameter limit2');
  const dangling = fresh();
  ((dangling.components as Json).schemas as Json).Oops = { $ref: '#/components/schemas/Nope' };
  assert.match(refProblems(dangling).join('\n'), 'Nope does not resolve');
});

test('an operation checking its input without a 400, no servers and no licence are reported, by us and by Redocly', async () => {
  const doc = fresh();
  const responses = op(doc, '/admin/v1/assets/{symbol}', 'put').responses as Record<string, Json>;
  delete responses['400'];
  delete doc.servers;
  delete (doc.info as Json).license;
  assert.equal(inputProblems(doc), ['PUT /admin/v1/assets/{symbol}: checks its input, but no 400 with ErrorAnswer']);
  assert.equal(topProblems(doc), ['no servers', 'no licence with a name and an identifier or url']);
  const redocly = (await redoclyProblems(doc)).join('\n');
  assert.match(redocly, 'no-empty-servers');
  assert.match(redocly, 'info-license');
});

test('a document that is not OpenAPI 3.1 is reported', async () => {
  const doc = fresh();
  (op(doc, '/healthz', 'get') as Json).responses = 'none';
  assert.ok((await specProblems(doc)).length > 0);
});

test.run();
