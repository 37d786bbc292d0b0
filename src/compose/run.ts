// The process's life: read the configuration, start the service on the threads actors/main.ts gives,
// print how to use it (development only), stop cleanly on Ctrl-C or SIGTERM, and exit with a code
// that says why a start failed.

import { ConfigError, loadConfig, type Config } from '../config/config.js';
import { banner } from './banner.js';
import { JwksError } from '../http/auth/jwks-keys.js';
import { createLogger, type Logger } from '../log.js';
import { OwnershipError } from '../ownership/errors.js';
import { MigrationError } from '../db/migrations.js';
import { startService, type Service } from './service.js';
import { END_NOW_FALLBACK_MS, SIGNAL_REPEAT_WINDOW_MS } from '../limits.js';
import type { ServiceThreads, UbsCore } from '../threads.js';
import { errorDetail } from '../error-text.js';

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
  onStopSignals(service, config, log);
  if (config.printBanner) process.stdout.write(banner(config, service));
}

type StopRequest = { readonly signal: NodeJS.Signals; readonly at: number };

/**
 * The first SIGINT or SIGTERM drains and stops in order, within SHUTDOWN_TIMEOUT_MS. The same
 * signal again within SIGNAL_REPEAT_WINDOW_MS is that stop reaching the process a second way (a
 * process group's signal, relayed once more by `make`): ignored. A different signal, or the same
 * one after the window, is a deliberate second request: the process ends at once, as does a stop
 * past its deadline; the stores recover whatever was cut off, as after a crash.
 */
function onStopSignals(service: Service, config: Config, log: Logger): void {
  let first: StopRequest | null = null;
  const onSignal = (signal: NodeJS.Signals): void => {
    const now = Date.now();
    if (first === null) {
      first = { signal, at: now };
      stopInOrder(service, config, log, signal);
      return;
    }
    if (signal === first.signal && now - first.at < SIGNAL_REPEAT_WINDOW_MS) {
      log.info('the same stop signal again within the repeat window: the stop already under way goes on', {
        signal,
        signal_repeat_window_ms: SIGNAL_REPEAT_WINDOW_MS,
      });
      return;
    }
    log.critical('second stop request: exiting now, without finishing the stop', { signal, first_signal: first.signal });
    endNow(service, signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

function stopInOrder(service: Service, config: Config, log: Logger, signal: NodeJS.Signals): void {
  log.info('stopping: draining requests in flight, then stopping in order', { signal, shutdown_drain_ms: config.shutdownDrainMs });
  setTimeout(() => {
    log.critical('the stop did not finish in time: exiting now', { shutdown_timeout_ms: config.shutdownTimeoutMs });
    endNow(service, signal);
  }, config.shutdownTimeoutMs).unref();
  service.stop().then(
    () => {
      log.info('stopped in order', { signal });
      process.exit(0);
    },
    (error: unknown) => {
      log.error('stop failed', { error: String(error) });
      process.exit(1);
    },
  );
}

/**
 * Ends the process at once. process.exit is not used here: it stops the worker threads wherever
 * they are, and a thread stopped inside one of LMDB's native calls can no longer throw that
 * call's error, which lmdb's node-addon-api build turns into an abort of the whole process
 * (`FATAL ERROR: Error::ThrowAsJavaScriptException napi_throw`, seen once in the issue). Instead
 * the embedded PostgreSQL is stopped first, synchronously (it runs in a session of its own, and
 * nothing else would stop it), then the signal is raised again with no listener left, so the
 * process ends by it as a process without handlers does (exit status 128 + the signal's number)
 * and no teardown runs at all. SIGKILL backs that up.
 */
function endNow(service: Service, signal: NodeJS.Signals): void {
  service.stopNow();
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.kill(process.pid, signal);
  setTimeout(() => process.kill(process.pid, 'SIGKILL'), END_NOW_FALLBACK_MS);
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
