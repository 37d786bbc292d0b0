// Proves that the OpenAPI document generates a usable client: openapi-typescript turns the
// running service's document into types, examples/client.ts compiles against them (strict), and
// run against the service it funds a user, moves funds both ways and pages the history, with the
// answers checked here. A misuse of the generated types must not compile.
// test-runner: alone

import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GENERATED_DIR, ROOT, generateApiTypes, tsc } from './api-types.js';
import { startTestService, type TestService } from '../support/service.js';

type Transfer = { readonly req_id: string; readonly from: string; readonly to: string; readonly amount: string; readonly state: string };
type Line = { readonly asset: string; readonly available: string };
type ExampleRun = {
  readonly moved: Transfer[];
  readonly history: Transfer[];
  readonly pages: number;
  readonly balances: { funding: Line[]; spot: Line[] };
};
type ClientModule = { readonly runExample: (o: Record<string, string>) => Promise<ExampleRun> };

const USER = 5151n;
let svc: TestService;

test.before(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0' });
});

test.after(async () => {
  await svc.stop();
});

test('types generated from GET /openapi.json compile with examples/client.ts (strict)', async () => {
  const doc = await svc.call('GET', '/openapi.json');
  assert.is(doc.status, 200);
  const file = await generateApiTypes(doc.body);
  assert.match(await fs.readFile(file, 'utf8'), 'createTransfer');
  const compiled = await tsc(['-p', path.join('examples', 'tsconfig.json')]);
  assert.is(compiled.code, 0, compiled.output);
});

test('the generated types refuse a misuse: an unknown account, an amount as a number, an unknown state', async () => {
  const misuse = path.join(GENERATED_DIR, 'misuse.ts');
  await fs.writeFile(
    misuse,
    [
      "import type { components, operations } from './api.js';",
      "export const a: components['schemas']['TransferRequest'] = { from: 'FUTURE', to: 'SPOT', asset: 'USDT', amount: '1' };",
      "export const b: components['schemas']['TransferRequest'] = { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: 1 };",
      "export const c: NonNullable<operations['listTransfers']['parameters']['query']> = { state: 'DONE' };",
      '',
    ].join('\n'),
  );
  const compiled = await tsc([
    '--noEmit',
    '--strict',
    '--skipLibCheck',
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--types',
    'node',
    misuse,
  ]);
  await fs.rm(misuse);
  assert.is.not(compiled.code, 0);
  for (const line of ['misuse.ts(2,', 'misuse.ts(3,', 'misuse.ts(4,']) assert.match(compiled.output, line, compiled.output);
});

test('the typed client funds a user, transfers both ways and pages the history', async () => {
  const client = (await import(pathToFileURL(path.join(ROOT, 'dist', 'examples', 'client.js')).href)) as ClientModule;
  const run = await client.runExample({
    base: svc.base,
    userId: String(USER),
    userToken: svc.userToken(USER),
    adminToken: svc.adminToken(),
    asset: 'USDT',
    ref: 'client-example',
  });
  assert.equal(
    run.moved.map((t) => [t.from, t.to, t.state]),
    [
      ['FUNDING', 'SPOT', 'COMMITTED'],
      ['SPOT', 'FUNDING', 'COMMITTED'],
    ],
  );
  assert.equal(
    run.history.map((t) => t.req_id),
    run.moved.map((t) => t.req_id).reverse(),
    'newest first, one a page',
  );
  assert.is(run.pages, 2);
  // Decimal strings in the asset's precision: 100 − 30 + 12.5 and 30 − 12.5.
  const available = (lines: Line[]) => lines.find((l) => l.asset === 'USDT')?.available ?? '';
  assert.match(available(run.balances.funding), /^82\.50*$/);
  assert.match(available(run.balances.spot), /^17\.50*$/);
});

test.run();
