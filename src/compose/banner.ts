// What `make run` prints once the service is ready (development only: config.printBanner is
// never true in production). Ready-to-paste curl commands; the tokens in them are printed only
// when they are signed with the public development secret, which anyone can read in this
// repository anyway. With a real JWT_SECRET (or no HS256) the commands name $USER_TOKEN and
// $ADMIN_TOKEN for the caller to fill in: a printed long-lived admin token signed with a real
// secret would be a credential in a terminal's scrollback and in every log collector.

import type { Config } from '../config/config.js';
import { signJwt } from '../http/auth/jwt.js';

const DEV_TOKEN_LIFETIME_S = 24 * 3600;
/** The operator the printed admin token names (an admin token's `sub` is any name). */
const DEV_OPERATOR = 'dev-operator';

export function banner(
  config: Config,
  ports: { readonly port: number; readonly adminPort: number | null },
  nowS: number = Date.now() / 1000,
): string {
  const base = `http://${config.host}:${ports.port}`;
  const adminBase = ports.adminPort === null ? base : `http://${config.adminHost}:${ports.adminPort}`;
  const tokens = devTokens(config, nowS);
  const user = tokens?.user ?? '$USER_TOKEN';
  const admin = tokens?.admin ?? '$ADMIN_TOKEN';
  const about =
    tokens === null
      ? 'No tokens printed: they are printed only when signed with the public development secret (JWT_SECRET unset).\nSet USER_TOKEN (sub "1") and ADMIN_TOKEN ("role": "admin") to tokens your issuer signed.'
      : `Development tokens, valid 24 h, signed with the PUBLIC development JWT_SECRET: user 1, and operator "${DEV_OPERATOR}".`;
  const json = "-H 'Content-Type: application/json'";
  return `
Service ready on ${base}${ports.adminPort === null ? '' : `, admin routes and /metrics on ${adminBase}`}  (data in ${config.dataDir}; Ctrl-C stops it and its PostgreSQL)
${about}

1. Fund user 1's FUNDING account with 1000 USDT (an operator's deposit, idempotent by ref):
curl -s -X POST ${adminBase}/admin/v1/deposit -H "Authorization: Bearer ${admin}" ${json} -d '{"user_id":"1","account":"FUNDING","asset":"USDT","amount":"1000","ref":"demo-deposit-1"}'

2. Move 100 USDT from FUNDING to SPOT:
curl -s -X POST ${base}/api/v1/internal_transfer -H "Authorization: Bearer ${user}" ${json} -d '{"from":"FUNDING","to":"SPOT","asset":"USDT","amount":"100"}'

3. Move 40 USDT back from SPOT to FUNDING:
curl -s -X POST ${base}/api/v1/internal_transfer -H "Authorization: Bearer ${user}" ${json} -d '{"from":"SPOT","to":"FUNDING","asset":"USDT","amount":"40"}'

4. Read a transfer (use a req_id from the answers above):
curl -s ${base}/api/v1/internal_transfer/REQ_ID -H "Authorization: Bearer ${user}"

5. Watch it in the operator console: open ${adminBase}/console and paste the admin token:
${admin}

`;
}

/** Tokens signed with the development secret, or null when the service runs on another one. */
function devTokens(config: Config, nowS: number): { readonly user: string; readonly admin: string } | null {
  if (config.nodeEnv !== 'development' || !config.jwt.hs256SecretIsDevDefault || config.jwt.hs256Secret === null) return null;
  const exp = Math.floor(nowS) + DEV_TOKEN_LIFETIME_S;
  const extra = {
    ...(config.jwt.issuer === null ? {} : { iss: config.jwt.issuer }),
    ...(config.jwt.audience === null ? {} : { aud: config.jwt.audience }),
  };
  return {
    user: signJwt({ sub: '1', exp, ...extra }, config.jwt.hs256Secret),
    admin: signJwt({ sub: DEV_OPERATOR, exp, role: 'admin', ...extra }, config.jwt.hs256Secret),
  };
}
