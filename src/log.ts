// Structured JSON log lines on stderr, one object per line. bigint fields print as strings.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'critical';
export type LogFields = Readonly<Record<string, unknown>>;

export type Logger = {
  readonly debug: (msg: string, fields?: LogFields) => void;
  readonly info: (msg: string, fields?: LogFields) => void;
  readonly warn: (msg: string, fields?: LogFields) => void;
  readonly error: (msg: string, fields?: LogFields) => void;
  /** Funds need attention: always written, whatever the level. */
  readonly critical: (msg: string, fields?: LogFields) => void;
};

const RANK: Readonly<Record<LogLevel, number>> = { debug: 10, info: 20, warn: 30, error: 40, critical: 50 };

export function createLogger(opts: { level: LogLevel; name: string; write?: (line: string) => void }): Logger {
  const write = opts.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const emit = (level: LogLevel) => (msg: string, fields?: LogFields) => {
    if (RANK[level] < RANK[opts.level]) return;
    const record = { time: new Date().toISOString(), level, name: opts.name, msg, ...fields };
    write(JSON.stringify(record, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value)));
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error'), critical: emit('critical') };
}
