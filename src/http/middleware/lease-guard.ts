// Rule 7 at the last moment: a process answers clients only while its owner lease is proven.
// Every answer is checked here, the outermost layer, once the routes have made it, and again as
// its bytes go to the socket; a request is checked as it arrives too.
//
// Two ways to lose the proof between a request and its answer:
// - `lapsed`: the process did not run for a whole lease (it was stopped with SIGSTOP, or its
//   event loop blocked past the lease) and may have been replaced meanwhile. The connection is
//   destroyed without an answer and the process stops.
// - `standing-by`: the process kept running but a renewal was slow or failing, so its proof ended
//   (owner-gate.ts refuses what arrives then). An answer made or written then is not sent either:
//   another process may own the ledger by the time it arrives. Made, it becomes the gate's 503
//   OWNER_LEASE_UNPROVEN; already being written, the connection is destroyed without an answer.
//   The process is not stopped: a late renewal that still finds its epoch proves the lease again.
// What may go out unproven: the probes (GET /healthz and /readyz, which say why it is not ready)
// and a 503, which refuses without telling anything the ledger's owner might contradict.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { MiddlewareHandler } from 'hono';
import type { LeaseState } from '../../ownership/lease.js';
import { isProbe, unprovenAnswer } from './owner-gate.js';

type LeaseGuardOptions = {
  readonly state: () => LeaseState;
  /** Stops the process (the fatal stop): called once the connection is destroyed. */
  readonly onLapsed: (reason: string) => void;
};

/** A refusal: it tells the client to come back, nothing about the ledger. */
const REFUSAL_STATUS = 503;

/** Whether the answer's bytes may leave now: true to write them, false when the answer was withheld. */
type WriteCheck = () => boolean;

export function leaseGuard(opts: LeaseGuardOptions): MiddlewareHandler {
  return async function leaseGuardMiddleware(c, next) {
    let withheld = false;
    const withhold = (reason: string, lapsed: boolean) => {
      if (withheld) return;
      withheld = true;
      (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket.destroy();
      if (lapsed) opts.onLapsed(reason);
    };
    if (opts.state() === 'lapsed') return withhold('a request arrived after the owner lease lapsed unnoticed', true);
    let mayGoUnproven = isProbe(c);
    const mayWrite: WriteCheck = () => {
      if (withheld) return false;
      const state = opts.state();
      if (state === 'proven' || (state === 'standing-by' && mayGoUnproven)) return true;
      if (state === 'lapsed') withhold('an answer was being written after the owner lease lapsed unnoticed: not sent', true);
      else withhold('an answer was being written after the owner lease stopped being proven: not sent', false);
      return false;
    };
    guardWrites(c.env, mayWrite);
    await next();
    const state = opts.state();
    if (state === 'lapsed') return withhold('an answer was ready after the owner lease lapsed unnoticed: not sent', true);
    if (c.res.status === REFUSAL_STATUS) mayGoUnproven = true;
    if (state === 'standing-by' && !mayGoUnproven) {
      c.res = undefined; // the made answer's headers must not carry over to the refusal
      c.res = unprovenAnswer(c, state);
      mayGoUnproven = true;
    }
  };
}

/**
 * The last checks, as the answer's bytes are written. node-server writes them after this
 * middleware has returned, a few awaits later: a process stopped there (a SIGSTOP in a burst of
 * answers that one group commit released) sent them all the moment it ran again, after its
 * successor was promoted (a failover drill saw four 200s 0.43 s after the promotion). Checked at
 * the response's write and end, and again where the socket hands the bytes to the kernel: a
 * stop inside `end()`, after its check, once let one COMMITTED out 296 ms after a promotion.
 */
function guardWrites(env: unknown, mayWrite: WriteCheck): void {
  const outgoing = (env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (outgoing === undefined) return;
  const { write, end, flushHeaders } = outgoing;
  outgoing.write = function guardedWrite(this: ServerResponse, ...args: Parameters<ServerResponse['write']>) {
    return mayWrite() ? write.apply(this, args) : false;
  } as ServerResponse['write'];
  outgoing.end = function guardedEnd(this: ServerResponse, ...args: Parameters<ServerResponse['end']>) {
    return mayWrite() ? end.apply(this, args) : this;
  } as ServerResponse['end'];
  outgoing.flushHeaders = function guardedFlushHeaders(this: ServerResponse) {
    if (mayWrite()) flushHeaders.call(this);
  };
  const socket = (env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket;
  if (socket !== undefined) guardSocket(socket, mayWrite);
}

const CHECK = Symbol('lease-guard check');
type GuardedSocket = Socket & { [CHECK]?: WriteCheck };

/**
 * The socket's writes go through the check of the answer it carries now (a kept-alive connection
 * carries one answer after another; each request sets its own). `_write` and `_writev` are what
 * a Writable calls to hand its bytes on; the response's `end()` reaches them when it uncorks.
 */
function guardSocket(socket: GuardedSocket, mayWrite: WriteCheck): void {
  const installed = socket[CHECK] !== undefined;
  socket[CHECK] = mayWrite;
  if (installed) return;
  const refused = () => new Error('the owner lease is not proven: the answer was not sent');
  const { _write: writeOne, _writev: writeMany } = socket;
  socket._write = function guardedSocketWrite(this: GuardedSocket, ...args: Parameters<Socket['_write']>) {
    if (this[CHECK]?.() === false) return args[2](refused());
    writeOne.apply(this, args);
  };
  if (writeMany !== undefined)
    socket._writev = function guardedSocketWritev(this: GuardedSocket, ...args: Parameters<NonNullable<Socket['_writev']>>) {
      if (this[CHECK]?.() === false) return args[1](refused());
      writeMany.apply(this, args);
    };
}
