// Who an admin action is recorded as: the admin token's subject, as a string. The one place
// that reads it from what the auth middleware leaves in the context, so a change to the claims
// (an admin `sub` such as "ops-alice") changes this line only.

import type { Context } from 'hono';
import type { AdminEnv } from './auth.js';

export function operatorOf(c: Context<AdminEnv>): string {
  return c.get('operator');
}
