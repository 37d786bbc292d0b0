// A small typed client of the internal-transfer API, written against the types openapi-typescript
// generates from the service's OpenAPI document into examples/generated/api.d.ts (README: "A
// typed client"). It funds a user with an admin deposit, moves funds FUNDING → SPOT and back, and
// pages the user's history. Amounts stay decimal strings from end to end.
//
// Run against a service: API_BASE=http://127.0.0.1:8080 USER_ID=42 USER_TOKEN=… ADMIN_TOKEN=…
// node dist/examples/client.js (after `tsc -p examples/tsconfig.json`).

import { pathToFileURL } from 'node:url';
import type { components, operations } from './generated/api.js';

type Schemas = components['schemas'];
type OperationId = keyof operations;
type BodyOf<R> = R extends { content: { 'application/json': infer T } } ? T : never;
type Responses<O extends OperationId> = operations[O]['responses'];
type Query<O extends OperationId> = NonNullable<operations[O]['parameters']['query']>;

/** Every answer the document gives an operation, as {status, body}: checking status narrows body. */
export type Answer<O extends OperationId> = {
  [S in keyof Responses<O> & number]: { readonly status: S; readonly body: BodyOf<Responses<O>[S]> };
}[keyof Responses<O> & number];

const POLLS_MAX = 50;
const POLL_MS = 100;
const PAGES_MAX = 100;

export class ApiClient {
  constructor(
    private readonly base: string,
    private readonly token: string,
  ) {}

  deposit(body: Schemas['MovementRequest']): Promise<Answer<'deposit'>> {
    return this.send('POST', '/admin/v1/deposit', body);
  }

  createTransfer(body: Schemas['TransferRequest']): Promise<Answer<'createTransfer'>> {
    return this.send('POST', '/api/v1/internal_transfer', body);
  }

  getTransfer(reqId: string): Promise<Answer<'getTransfer'>> {
    return this.send('GET', `/api/v1/internal_transfer/${encodeURIComponent(reqId)}`);
  }

  listTransfers(query: Query<'listTransfers'>): Promise<Answer<'listTransfers'>> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
    return this.send('GET', `/api/v1/internal_transfer?${params.toString()}`);
  }

  getBalances(): Promise<Answer<'getBalances'>> {
    return this.send('GET', '/api/v1/balances');
  }

  /** The status and JSON the service sent; that they match the document is the service's promise (and its tests'). */
  private async send<A>(method: string, path: string, body?: unknown): Promise<A> {
    const init: RequestInit = { method, headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const response = await fetch(this.base + path, init);
    return { status: response.status, body: (await response.json()) as unknown } as A;
  }
}

export type ExampleOptions = {
  readonly base: string;
  readonly userId: string;
  readonly userToken: string;
  readonly adminToken: string;
  readonly asset: string;
  readonly ref: string;
};
export type ExampleRun = {
  readonly moved: readonly Schemas['TransferAnswer'][];
  readonly history: readonly Schemas['TransferAnswer'][];
  readonly pages: number;
  readonly balances: Schemas['Balances'];
};

/** Funds the user, moves 30 to SPOT and 12.5 back, then reads the history one item a page. */
export async function runExample(o: ExampleOptions): Promise<ExampleRun> {
  const admin = new ApiClient(o.base, o.adminToken);
  const user = new ApiClient(o.base, o.userToken);
  const funded = await admin.deposit({ user_id: o.userId, account: 'FUNDING', asset: o.asset, amount: '100', ref: o.ref });
  if (funded.status !== 200) throw new Error(`deposit answered ${funded.status}: ${JSON.stringify(funded.body)}`);
  const there = await finished(
    user,
    await user.createTransfer({ from: 'FUNDING', to: 'SPOT', asset: o.asset, amount: '30', client_order_id: `${o.ref}-to-spot` }),
  );
  const back = await finished(
    user,
    await user.createTransfer({ from: 'SPOT', to: 'FUNDING', asset: o.asset, amount: '12.5', client_order_id: `${o.ref}-back` }),
  );
  const history: Schemas['TransferAnswer'][] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: Answer<'listTransfers'> = await user.listTransfers({ asset: o.asset, limit: 1, ...(cursor === null ? {} : { cursor }) });
    if (page.status !== 200) throw new Error(`history answered ${page.status}: ${page.body.code}`);
    history.push(...page.body.items);
    cursor = page.body.next_cursor;
    pages++;
  } while (cursor !== null && pages < PAGES_MAX);
  const balances = await user.getBalances();
  if (balances.status !== 200) throw new Error(`balances answered ${balances.status}: ${balances.body.code}`);
  return { moved: [there, back], history, pages, balances: balances.body };
}

/** The transfer once terminal: a 202 is polled by its req_id, a bounded number of times. */
async function finished(client: ApiClient, answer: Answer<'createTransfer'>): Promise<Schemas['TransferAnswer']> {
  if (answer.status !== 200 && answer.status !== 202)
    throw new Error(`transfer answered ${answer.status}: ${answer.body.code} ${answer.body.message}`);
  let transfer: Schemas['TransferAnswer'] = answer.body;
  for (let poll = 0; transfer.state === 'PENDING' && poll < POLLS_MAX; poll++) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const read = await client.getTransfer(transfer.req_id);
    if (read.status !== 200) throw new Error(`transfer ${transfer.req_id} answered ${read.status}: ${read.body.code}`);
    transfer = read.body;
  }
  return transfer;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const env = (name: string): string => {
    const value = process.env[name];
    if (value !== undefined) return value;
    process.stderr.write(`${name} is required\n`);
    process.exit(2);
  };
  const run = await runExample({
    base: env('API_BASE'),
    userId: env('USER_ID'),
    userToken: env('USER_TOKEN'),
    adminToken: env('ADMIN_TOKEN'),
    asset: process.env.ASSET ?? 'USDT',
    ref: `example-${Date.now()}`,
  });
  process.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
}
