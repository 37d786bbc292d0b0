// Operator routes, behind a token whose role is admin.

import { Hono } from 'hono';
import * as v from 'valibot';
import { isUserId } from '../domain/checks.js';
import { parseAmount } from '../domain/money.js';
import type { AppDeps } from './app.js';
import { bearerAuth, type AuthEnv } from './auth.js';
import { jsonObject } from './body.js';
import { fail } from './errors.js';
import { DepositBody, firstCode } from './schemas.js';

export function adminRoutes(deps: AppDeps): Hono<AuthEnv> {
  const routes = new Hono<AuthEnv>();
  routes.use('*', bearerAuth({ secret: deps.jwtSecret, role: 'admin' }));

  routes.post('/deposit', async (c) => {
    const raw = await jsonObject(c);
    if (raw === null) return fail(c, 'INVALID_REQUEST');
    const parsed = v.safeParse(DepositBody, raw, { abortEarly: true });
    if (!parsed.success) return fail(c, firstCode(parsed.issues));
    const body = parsed.output;
    const userId = BigInt(body.user_id);
    if (!isUserId(userId)) return fail(c, 'INVALID_USER');
    const asset = await deps.assets.get(body.asset);
    if (asset === null) return fail(c, 'INVALID_ASSET');
    const amount = parseAmount(body.amount, asset.precision);
    if (!amount.ok) return fail(c, amount.code);
    const outcome = await deps.external.deposit({
      ref: body.ref,
      userId,
      account: body.account,
      asset: body.asset,
      amount: amount.units,
    });
    switch (outcome.kind) {
      case 'done':
        return c.json({ ref: body.ref, state: 'DONE', duplicate: outcome.duplicate, account: body.account, asset: body.asset, amount: body.amount });
      case 'pending':
        return c.json({ ref: body.ref, state: 'PENDING', message: outcome.reason }, 202);
      case 'refused':
        return fail(c, outcome.code, { ref: body.ref });
    }
  });

  return routes;
}
