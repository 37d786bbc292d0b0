// Patroni's REST API, the only way the harness asks a node anything: GET /cluster for the members
// and their roles, POST /switchover to move the leader.

/** A switchover waits for Patroni to finish it; a question is answered at once by a live node. */
const SWITCHOVER_TIMEOUT_MS = 30_000;
const QUESTION_TIMEOUT_MS = 2_000;

/** One member of GET /cluster: role leader, sync_standby or replica; state running, streaming, stopped, ... */
export type Member = { readonly name: string; readonly role: string; readonly state: string; readonly lag?: number | string };

export async function members(restPort: number): Promise<Member[]> {
  const r = await restCall(restPort, 'GET', '/cluster');
  if (r.status !== 200) throw new Error(`GET /cluster: HTTP ${r.status}`);
  return ((JSON.parse(r.text) as { members?: Member[] }).members ?? []).map((m) => ({
    name: m.name,
    role: m.role,
    state: m.state,
    lag: m.lag,
  }));
}

export async function restCall(
  restPort: number,
  method: 'GET' | 'POST',
  route: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const r = await fetch(`http://127.0.0.1:${restPort}${route}`, {
    method,
    signal: AbortSignal.timeout(method === 'POST' ? SWITCHOVER_TIMEOUT_MS : QUESTION_TIMEOUT_MS),
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: r.status, text: await r.text() };
}
