// The service's own conservation check (GET /admin/v1/invariant), as the benchmark and the soak
// read it at their end: every account's funds against the ledgers that explain them.

import type { Conservation } from '../report/report.js';
import { adminToken } from '../support/seed.js';

export async function conservationCheck(base: string): Promise<Conservation> {
  const r = await fetch(`${base}/admin/v1/invariant`, { headers: { authorization: `Bearer ${adminToken()}` } });
  if (r.status !== 200) throw new Error(`GET /admin/v1/invariant answered ${r.status}: ${await r.text()}`);
  const body = (await r.json()) as {
    ok?: unknown;
    differences?: unknown;
    accounts_checked?: unknown;
    transfers_examined?: unknown;
    wal_seq?: unknown;
    halted?: unknown;
  };
  const differences = Array.isArray(body.differences) ? body.differences.length : -1;
  return {
    ok: body.ok === true,
    differences,
    accountsChecked: Number(body.accounts_checked),
    transfersExamined: Number(body.transfers_examined),
    walSeq: Number(body.wal_seq),
    halted: body.halted === true,
  };
}
