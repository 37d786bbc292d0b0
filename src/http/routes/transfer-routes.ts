// Client routes: create a transfer, read one. Checks run in the order of src/domain/check-order.ts
// (spec 001 §1.5.8) and answer the first failing code; admission (src/services/admission.ts)
// checks the halt, and the coordinator re-checks all of it on its own.

import { haltRefusal } from '../../services/admission.js';
import { requestLog, tagTransfer } from '../middleware/access-log.js';
import { Hono, type Context } from 'hono';
import type { SubmitReply } from '../../domain/transfer.js';
import { newReqId } from '../req-ids.js';
import * as v from 'valibot';
import { checkAmountRange, checkAssetOpen } from '../../domain/asset.js';
import { isReqId } from '../../domain/checks.js';
import { isTerminal } from '../../domain/fsm.js';
import { formatAmount, parseAmount } from '../../domain/money.js';
import type { AppDeps } from '../deps.js';
import { userAuth, type AuthEnv } from '../auth/auth.js';
import { jsonObject } from '../body.js';
import { fail } from '../errors.js';
import { frequencyWatch } from '../middleware/frequency-watch.js';
import { listHistory } from './history.js';
import { perUserRateLimit } from '../middleware/rate-limit.js';
import { firstCode, TransferBody } from './schemas.js';
import { transferPulse } from '../middleware/transfer-pulse.js';
import { historyJson, transferJson } from './views.js';

export function transferRoutes(deps: AppDeps): Hono<AuthEnv> {
  const routes = new Hono<AuthEnv>();
  routes.use('/internal_transfer', transferPulse({ pulse: deps.pulse }));
  routes.use('*', userAuth({ tokens: deps.tokens }));
  routes.use('*', perUserRateLimit({ perSecond: deps.rateLimitPerSecond }));
  routes.use(
    '/internal_transfer',
    frequencyWatch({ alerts: deps.alerts, perWindowMax: deps.abnormalTransfersPerMinute, windowMs: 60_000 }),
  );

  routes.post('/internal_transfer', async (c) => {
    const claims = c.get('claims');
    // Refused before the body is read: the cheapest answer while halted (CHECK_ORDER's step).
    const halted = haltRefusal(deps.halt);
    if (halted !== null) return fail(c, halted);
    const raw = await jsonObject(c, deps.bodyBytesMax);
    if (!raw.ok) return fail(c, raw.code);
    if (raw.value.user_id !== undefined && String(raw.value.user_id) !== claims.userId.toString()) return fail(c, 'FORBIDDEN');
    const parsed = v.safeParse(TransferBody, raw.value, { abortEarly: true });
    if (!parsed.success) return fail(c, firstCode(parsed.issues));
    const body = parsed.output;
    const asset = await deps.assets.get(body.asset);
    if (asset === null) return fail(c, 'INVALID_ASSET');
    // A suspended or non-transferable asset is refused before any transfer exists (step 5).
    const closed = checkAssetOpen(asset);
    if (closed !== null) return fail(c, closed);
    const amount = parseAmount(body.amount, asset.precision);
    if (!amount.ok) return fail(c, amount.code);
    const range = checkAmountRange(asset, amount.units);
    if (range !== null) return fail(c, range);

    // From here on the transfer may exist: every answer names its req_id, so a client without a
    // client_order_id can ask what became of it instead of sending it again.
    const reqId = newReqId();
    tagTransfer(c, reqId);
    const reply = await deps.submit({
      reqId,
      userId: claims.userId,
      from: body.from,
      to: body.to,
      asset: body.asset,
      amount: amount.units,
      clientOrderId: body.client_order_id ?? null,
    });
    if (reply.kind === 'error')
      requestLog(c, deps.log).error('coordinator error', { user_id: claims.userId, req_id: reqId, error: reply.message });
    return submitAnswer(c, reply, reqId, asset.precision);
  });

  routes.get('/internal_transfer', (c) => listHistory(c, deps));

  routes.get('/internal_transfer/:req_id', async (c) => {
    const reqId = c.req.param('req_id');
    if (!isReqId(reqId)) return fail(c, 'NOT_FOUND');
    tagTransfer(c, reqId);
    const view = await deps.transfers.get(reqId);
    // Another user's transfer answers exactly as an unknown one.
    if (view === null || view.userId !== c.get('claims').userId) return fail(c, 'NOT_FOUND');
    const asset = await deps.assets.get(view.asset);
    const history = await deps.transfers.history(reqId);
    return c.json({ ...transferJson(view, asset?.precision ?? 0), error_code: view.errorCode, history: historyJson(history) });
  });

  routes.get('/balances', async (c) => {
    const balances = await deps.balances.read(c.get('claims').userId);
    if (balances === null) return fail(c, 'SERVICE_UNAVAILABLE');
    const show = async (b: { asset: string; available: bigint; status: string }) => {
      const asset = await deps.assets.get(b.asset);
      return { asset: b.asset, available: formatAmount(b.available, asset?.precision ?? 0), status: b.status };
    };
    return c.json({
      funding: await Promise.all(balances.funding.map(show)),
      spot: await Promise.all(balances.spot.map(show)),
    });
  });

  return routes;
}

/** The answer to a submitted transfer: the shard's reply, with the req_id wherever one exists. */
function submitAnswer(c: Context, reply: SubmitReply, reqId: string, precision: number): Response {
  switch (reply.kind) {
    case 'refused':
      // Nothing was recorded under it: GET by req_id answers NOT_FOUND, which is the truth.
      return fail(c, reply.code, { req_id: reqId });
    case 'duplicate':
      // Named, so a client that lost track of its first request can read it (GET by req_id).
      return fail(c, 'DUPLICATE_REQUEST', { req_id: reqId, original_req_id: reply.originalReqId });
    case 'busy':
      return fail(c, 'SERVICE_UNAVAILABLE', { req_id: reqId });
    case 'error':
      return fail(c, 'SYSTEM_ERROR', { req_id: reqId });
    case 'transfer':
      if (reply.view.state === 'FAILED') {
        return fail(c, reply.view.errorCode ?? 'SYSTEM_ERROR', {
          req_id: reply.view.reqId,
          state: 'FAILED',
          transfer_id: reply.view.transferId,
        });
      }
      return c.json(transferJson(reply.view, precision), isTerminal(reply.view.state) ? 200 : 202);
  }
}
