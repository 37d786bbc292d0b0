// The process's life: read the configuration, start the service on the threads actors/main.ts gives,
// print how to use it (development only), stop cleanly on Ctrl-C or SIGTERM, and exit with a code
// that says why a start failed.

import { ConfigError, loadConfig, type Config } from './config.js';
import { banner } from './banner.js';
import { JwksError } from './http/jwks-keys.js';
import { createLogger } from './log.js';
import { OwnershipError } from './ownership/errors.js';
import { MigrationError } from './db/migrations.js';
import { startService } from './service.js';
import type { ServiceThreads, UbsCore } from './threads.js';
import { errorDetail } from './error-text.js';

async function main<Core extends UbsCore>(threads: ServiceThreads<Core>): Promise<void> {
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
  if (config.jwt.hs256SecretIsDevDefault)
    log.warn(
      'JWT_SECRET is not set: development mode accepts tokens signed with the public development secret; NODE_ENV=production refuses to start this way',
    );
  const service = await startService(config, log, threads);
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
  if (config.printBanner) process.stdout.write(banner(config, service));
}

/** Runs the service until a signal stops it; a start that fails exits the process with its code. */
export function run<Core extends UbsCore>(threads: ServiceThreads<Core>): void {
  main(threads).catch(exitOnStartFailure);
}

function exitOnStartFailure(error: unknown): never {
  if (error instanceof JwksError) {
    process.stderr.write(`configuration error: ${error.message}\n`);
    process.exit(2);
  }
  if (error instanceof OwnershipError) {
    process.stderr.write(`refused to start: ${error.message}\n`);
    process.exit(3);
  }
  if (error instanceof MigrationError) {
    process.stderr.write(`refused to start: ${error.message}\n`);
    process.exit(4);
  }
  process.stderr.write(`failed to start: ${errorDetail(error)}\n`);
  process.exit(1);
}
