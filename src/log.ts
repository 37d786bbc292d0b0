// Structured JSON log lines (pino) on stderr, one object per line, with an added `critical`
// level for funds that need attention. bigint fields are written as strings; an `err` field is
// written by pino's error serializer (type, message, stack, and the cause chain). In development
// a terminal can show the same lines in a readable form (LOG_FORMAT=pretty): pino-pretty is
// loaded only then, never in production (src/config/vars.ts refuses LOG_FORMAT=pretty there).

import { createRequire } from 'node:module';
import pino from 'pino';

type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'critical';
type LogFormat = 'json' | 'pretty';
export type LogFields = Readonly<Record<string, unknown>>;

export type Logger = {
  readonly debug: (msg: string, fields?: LogFields) => void;
  readonly info: (msg: string, fields?: LogFields) => void;
  readonly warn: (msg: string, fields?: LogFields) => void;
  readonly error: (msg: string, fields?: LogFields) => void;
  /** Funds need attention: always written, whatever the level. */
  readonly critical: (msg: string, fields?: LogFields) => void;
  /** Whether lines of `level` are written: lets a hot path skip building the fields. */
  readonly enabled: (level: LogLevel) => boolean;
  /** The same logger with `fields` on every line (a request's request_id, say). */
  readonly child: (fields: LogFields) => Logger;
};

const CRITICAL_LEVEL = 55;

export function createLogger(opts: { level: LogLevel; name: string; format?: LogFormat; write?: (line: string) => void }): Logger {
  const logger = pino(
    {
      name: opts.name,
      level: opts.level,
      customLevels: { critical: CRITICAL_LEVEL },
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: pino.stdSerializers.err },
      formatters: { level: (label) => ({ level: label }), log: stringifyBigints },
    },
    destination(opts),
  );
  return wrap(logger);
}

function wrap(logger: pino.Logger<'critical'>): Logger {
  const emit = (level: LogLevel) => (msg: string, fields?: LogFields) => logger[level](fields ?? {}, msg);
  return {
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    critical: emit('critical'),
    enabled: (level) => logger.isLevelEnabled(level),
    child: (fields) => wrap(logger.child(fields)),
  };
}

function destination(opts: { format?: LogFormat; write?: (line: string) => void }): pino.DestinationStream {
  if (opts.write !== undefined) {
    const write = opts.write;
    return { write: (line: string) => write(line.trimEnd()) };
  }
  if (opts.format === 'pretty') {
    // Loaded here only: a production process (LOG_FORMAT=json) never loads it.
    const pretty = createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty');
    return pretty({
      colorize: true,
      sync: true,
      destination: 2,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'name',
      messageFormat: '{name}: {msg}',
      customLevels: `critical:${CRITICAL_LEVEL}`,
    });
  }
  return pino.destination({ dest: 2, sync: true });
}

function stringifyBigints(obj: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | null = null;
  for (const [key, value] of Object.entries(obj)) {
    if (typeof value !== 'bigint') continue;
    out ??= { ...obj };
    out[key] = value.toString();
  }
  return out ?? obj;
}
