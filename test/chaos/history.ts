// What the chaos run's clients were told, one JSON line per attempt: the operation and its key
// (client_order_id or ref), the user and body, when it was sent and when answered, the status,
// the body, the x-owner-epoch header and the instance (and pid) that answered. An attempt that got
// no answer has status null. The checker (check.ts) reads only this file and the database.

import fs from 'node:fs';

export type Op = 'transfer' | 'deposit' | 'withdraw';

export type HistoryEntry = {
  readonly op: Op;
  /** client_order_id of a transfer, ref of a deposit or withdrawal. */
  readonly key: string;
  readonly user: string;
  readonly request: Readonly<Record<string, string>>;
  readonly attempt: number;
  readonly sentAt: number;
  readonly answeredAt: number;
  /** null: no answer (no instance ready, connection lost, timed out). */
  readonly status: number | null;
  readonly body: unknown;
  readonly epoch: string | null;
  readonly instance: string | null;
  readonly pid: number | null;
};

export class HistoryFile {
  private readonly fd: number;
  private lines: string[] = [];
  private readonly timer: NodeJS.Timeout;
  count = 0;
  private closed = false;

  constructor(readonly file: string) {
    this.fd = fs.openSync(file, 'a');
    this.timer = setInterval(() => this.flush(), 200);
  }

  append(entry: HistoryEntry): void {
    if (this.closed) return; // only after a failed run, whose clients were not stopped
    this.lines.push(JSON.stringify(entry));
    this.count++;
  }

  flush(): void {
    if (this.lines.length === 0) return;
    const text = `${this.lines.join('\n')}\n`;
    this.lines = [];
    fs.writeSync(this.fd, text);
  }

  /** Writes what is left and closes the file; a second call does nothing. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.flush();
    fs.closeSync(this.fd);
  }
}

/** Every entry of a history file; a torn last line (the run was killed while writing) is left out. */
export function readHistory(file: string): HistoryEntry[] {
  const out: HistoryEntry[] = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line) as HistoryEntry);
    } catch {
      // only the last line can be torn
    }
  }
  return out;
}
