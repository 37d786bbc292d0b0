// `make run`: start the service, print how to use it, stop cleanly on Ctrl-C or SIGTERM.

import { ConfigError, loadConfig, type Config } from './config.js';
import { signJwt } from './http/jwt.js';
import { createLogger } from './log.js';
import { OwnershipError } from './ownership/errors.js';
import { startService } from './service.js';

const DEV_TOKEN_LIFETIME_S = 24 * 3600;

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const log = createLogger({ level: config.logLevel, format: config.logFormat, name: 'main' });
  if (config.jwtSecretIsDevDefault) log.warn('JWT_SECRET is not set: using the development secret; never do this in production');
  const service = await startService(config, log);
  let stopping = false;
  // The first signal drains and stops in order, within SHUTDOWN_TIMEOUT_MS; a second one, or the
  // deadline, exits at once (the stores recover whatever was cut off, as after a crash).
  const shutdown = (signal: string): void => {
    if (stopping) {
      log.critical('second signal: exiting now, without finishing the stop', { signal });
      process.exit(130);
    }
    stopping = true;
    log.info('stopping: draining requests in flight, then stopping in order', { signal, shutdown_drain_ms: config.shutdownDrainMs });
    setTimeout(() => {
      log.critical('the stop did not finish in time: exiting now', { shutdown_timeout_ms: config.shutdownTimeoutMs });
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    service.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error('stop failed', { error: String(error) });
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  if (process.env.PRINT_BANNER !== '0') process.stdout.write(banner(config, service.port));
}

function banner(config: Config, port: number): string {
  const exp = Math.floor(Date.now() / 1000) + DEV_TOKEN_LIFETIME_S;
  const user = signJwt({ sub: '1', exp }, config.jwtSecret);
  const admin = signJwt({ sub: '1', exp, role: 'admin' }, config.jwtSecret);
  const base = `http://${config.host}:${port}`;
  const json = "-H 'Content-Type: application/json'";
  return `
Service ready on ${base}  (data in ${config.dataDir}; Ctrl-C stops it and its PostgreSQL)
Development tokens for user 1, valid 24 h${config.jwtSecretIsDevDefault ? ', signed with the development JWT_SECRET' : ''}.

1. Fund user 1's FUNDING account with 1000 USDT (an operator's deposit, idempotent by ref):
curl -s -X POST ${base}/admin/v1/deposit -H 'Authorization: Bearer ${admin}' ${json} -d '{"user_id":"1","account":"FUNDING","asset":"USDT","amount":"1000","ref":"demo-deposit-1"}'

2. Move 100 USDT from FUNDING to SPOT:
curl -s -X POST ${base}/api/v1/internal_transfer -H 'Authorization: Bearer ${user}' ${json} -d '{"from":"FUNDING","to":"SPOT","asset":"USDT","amount":"100"}'

3. Move 40 USDT back from SPOT to FUNDING:
curl -s -X POST ${base}/api/v1/internal_transfer -H 'Authorization: Bearer ${user}' ${json} -d '{"from":"SPOT","to":"FUNDING","asset":"USDT","amount":"40"}'

4. Read a transfer (use a req_id from the answers above):
curl -s ${base}/api/v1/internal_transfer/REQ_ID -H 'Authorization: Bearer ${user}'

5. Watch it in the operator console: open ${base}/console and paste this admin token:
${admin}

`;
}

main().catch((error: unknown) => {
  if (error instanceof OwnershipError) {
    process.stderr.write(`refused to start: ${error.message}\n`);
    process.exit(3);
  }
  process.stderr.write(`failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
