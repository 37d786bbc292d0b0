// The admin audit trail (admin_audit): one row per admin action with its operator, target,
// parameters and outcome, paged newest first by id.

import type { Sql } from '../db/sql.js';

export const ADMIN_ACTIONS = [
  'deposit',
  'withdraw',
  'asset.put',
  'account.status',
  'transfer.retry',
  'service.halt',
  'service.resume',
  'ledger.backup',
] as const;
export type AdminAction = (typeof ADMIN_ACTIONS)[number];

export type AuditEntry = {
  readonly operator: string;
  readonly action: AdminAction;
  readonly target: Readonly<Record<string, unknown>>;
  readonly parameters: Readonly<Record<string, unknown>>;
  /** The HTTP status the operator was answered. */
  readonly status: number;
  /** `ok`, or the error code of the answer. */
  readonly outcome: string;
  readonly reqId: string | null;
};

type AuditRow = AuditEntry & { readonly id: string; readonly at: string };

type Row = {
  id: bigint;
  at: Date;
  operator: string;
  action: AdminAction;
  target: Record<string, unknown>;
  parameters: Record<string, unknown>;
  status: number;
  outcome: string;
  req_id: string | null;
};

const json = (value: unknown): string => JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));

export class AuditLog {
  constructor(private readonly sql: Sql) {}

  /** Writes one row; answers its id. */
  async record(e: AuditEntry): Promise<string> {
    const rows = await this.sql<{ id: bigint }[]>`
      INSERT INTO admin_audit (operator, action, target, parameters, status, outcome, req_id)
      VALUES (${e.operator}, ${e.action}, ${json(e.target)}::text::jsonb, ${json(e.parameters)}::text::jsonb, ${e.status}, ${e.outcome}, ${e.reqId})
      RETURNING id`;
    const id = rows[0]?.id;
    if (id === undefined) throw new Error('admin_audit insert returned no id');
    return id.toString();
  }

  /** At most `limit` rows with an id below `beforeId` (all when null), newest first. */
  async page(beforeId: bigint | null, limit: number): Promise<AuditRow[]> {
    const rows =
      beforeId === null
        ? await this.sql<Row[]>`SELECT * FROM admin_audit ORDER BY id DESC LIMIT ${limit}`
        : await this.sql<Row[]>`SELECT * FROM admin_audit WHERE id < ${beforeId} ORDER BY id DESC LIMIT ${limit}`;
    return rows.map((r) => ({
      id: r.id.toString(),
      at: r.at.toISOString(),
      operator: r.operator,
      action: r.action,
      target: r.target,
      parameters: r.parameters,
      status: r.status,
      outcome: r.outcome,
      reqId: r.req_id,
    }));
  }
}
