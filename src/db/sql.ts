// One way to open PostgreSQL: postgres.js with BIGINT read and written as JS bigint, so an
// amount never passes through a JS number.

import postgres from 'postgres';

export type Sql = postgres.Sql<{ bigint: bigint }>;
export type Tx = postgres.TransactionSql<{ bigint: bigint }>;

export function openSql(url: string, opts: { max: number; application: string }): Sql {
  return postgres(url, {
    max: opts.max,
    types: { bigint: postgres.BigInt },
    onnotice: () => undefined,
    idle_timeout: 0,
    connect_timeout: 10,
    connection: { application_name: opts.application },
  });
}
