// Who an admin action is recorded as: the admin token's subject, as a string. The one place
// that reads it from what the auth middleware leaves in the context, so a change to the claims
// (an admin `sub` such as "ops-alice") changes this line only.

import type { Context } from 'hono';
import type { AuthEnv } from './auth.js';

export function operatorOf(c: Context<AuthEnv>): string {
  return c.get('claims').userId.toString();
}
