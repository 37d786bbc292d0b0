// Request bodies, read with a byte cap; anything else than a JSON object is INVALID_REQUEST and
// anything longer than the cap PAYLOAD_TOO_LARGE, answered as values, never exceptions.
//
// Hono's own body limit wraps the request in a full web `Request` with a stream body, which made
// @hono/node-server leave its fast path on every request (a sixth of the HTTP thread). Here a
// declared Content-Length is checked before anything else runs, and the body is read only
// where a route wants it, counting bytes as they arrive when no length was declared (chunked).

import { IncomingMessage } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import { fail } from './errors.js';

type BodyCode = 'INVALID_REQUEST' | 'PAYLOAD_TOO_LARGE';
export type JsonBody = { readonly ok: true; readonly value: Record<string, unknown> } | { readonly ok: false; readonly code: BodyCode };

type Bytes = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly code: BodyCode };

const DECIMAL = /^[0-9]{1,15}$/;

/** Refuses a declared Content-Length over the cap before authentication or routing run. */
export function bodyLimit(opts: { readonly bytesMax: number }): MiddlewareHandler {
  return async function bodyLimitMiddleware(c, next) {
    const declared = declaredLength(c);
    if (declared === 'malformed') return fail(c, 'INVALID_REQUEST');
    if (declared !== null && declared > opts.bytesMax) return fail(c, 'PAYLOAD_TOO_LARGE');
    await next();
    return undefined;
  };
}

/** Reads the body as one JSON object, at most `bytesMax` bytes of it. */
export async function jsonObject(c: Context, bytesMax: number): Promise<JsonBody> {
  const body = await readText(c, bytesMax);
  if (!body.ok) return body;
  try {
    const value: unknown = JSON.parse(body.text);
    const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
    return isObject ? { ok: true, value: value as Record<string, unknown> } : { ok: false, code: 'INVALID_REQUEST' };
  } catch {
    return { ok: false, code: 'INVALID_REQUEST' };
  }
}

function declaredLength(c: Context): number | null | 'malformed' {
  const header = c.req.header('content-length');
  if (header === undefined) return null;
  return DECIMAL.test(header) ? Number(header) : 'malformed';
}

async function readText(c: Context, bytesMax: number): Promise<Bytes> {
  const declared = declaredLength(c);
  if (declared === 'malformed') return { ok: false, code: 'INVALID_REQUEST' };
  if (declared !== null && declared > bytesMax) return { ok: false, code: 'PAYLOAD_TOO_LARGE' };
  const incoming = nodeIncoming(c);
  if (incoming === null) return readWebStream(c.req.raw.body, bytesMax);
  // Node's HTTP parser ends a body with a Content-Length after exactly that many bytes, so the
  // check above bounds it and @hono/node-server's direct read (its fast path) is safe to use.
  if (declared !== null)
    return c.req.text().then(
      (text) => ({ ok: true, text }),
      () => ({ ok: false, code: 'INVALID_REQUEST' }),
    );
  return readIncoming(incoming, bytesMax);
}

/** The Node request behind the context when served by @hono/node-server; null otherwise (app.request). */
function nodeIncoming(c: Context): IncomingMessage | null {
  const env: unknown = c.env;
  if (typeof env !== 'object' || env === null || !('incoming' in env)) return null;
  return env.incoming instanceof IncomingMessage ? env.incoming : null;
}

/**
 * Reads a body of no declared length, stopping at the first byte over the cap. The rest is left
 * unread: @hono/node-server drains or closes the connection once the answer is sent.
 */
function readIncoming(incoming: IncomingMessage, bytesMax: number): Promise<Bytes> {
  if (incoming.readableDidRead || incoming.readableEnded) return Promise.resolve({ ok: false, code: 'INVALID_REQUEST' });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (result: Bytes): void => {
      incoming.off('data', onData).off('end', onEnd).off('error', onAbort).off('close', onAbort);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > bytesMax) {
        incoming.pause();
        finish({ ok: false, code: 'PAYLOAD_TOO_LARGE' });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => finish({ ok: true, text: Buffer.concat(chunks, size).toString('utf8') });
    // A client that goes away mid-body gets no answer; the value only ends the handler.
    const onAbort = (): void => finish({ ok: false, code: 'INVALID_REQUEST' });
    incoming.on('data', onData).on('end', onEnd).on('error', onAbort).on('close', onAbort);
  });
}

/** The same cap on a web stream body, for requests that did not come through a Node socket. */
async function readWebStream(stream: ReadableStream<Uint8Array> | null, bytesMax: number): Promise<Bytes> {
  if (stream === null) return { ok: true, text: '' };
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > bytesMax) {
        await reader.cancel();
        return { ok: false, code: 'PAYLOAD_TOO_LARGE' };
      }
      chunks.push(value);
    }
  } catch {
    return { ok: false, code: 'INVALID_REQUEST' };
  }
  return { ok: true, text: Buffer.concat(chunks, size).toString('utf8') };
}
