// Proves the open-loop generator's HTTP/1.1 framing: a request written whole with its byte length, and responses read one at a time off a keep-alive stream however TCP cuts them, framed by Content-Length or chunked encoding; anything it cannot frame is refused rather than guessed.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { requestBytes, ResponseFramer } from '../../bench/load/http1-wire.js';

/** Feeds `bytes` to a framer in pieces of `size` bytes and collects every whole response. */
function frameAll(bytes: string, size: number): { status: number; close: boolean }[] {
  const framer = new ResponseFramer();
  const ends: { status: number; close: boolean }[] = [];
  const all = Buffer.from(bytes, 'latin1');
  for (let at = 0; at < all.length; at += size) {
    framer.push(all.subarray(at, at + size));
    for (let end = framer.next(); end !== null; end = framer.next()) ends.push({ ...end });
  }
  return ends;
}

const LENGTH_FRAMED = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"ok":"\r\n\r\n"}';
// Two chunks, the second holding a blank line of its own, then trailers.
const CHUNKED =
  'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{"a"\r\n8\r\n:"\r\n\r\n"}\r\n0\r\nx-trailer: 1\r\n\r\n';

test('a Content-Length body is read to its length, even when it holds a blank line, at any cut of the stream', () => {
  for (const size of [1, 2, 7, 64, 1024]) {
    assert.equal(frameAll(LENGTH_FRAMED + LENGTH_FRAMED, size), [
      { status: 200, close: false },
      { status: 200, close: false },
    ]);
  }
});

test('a chunked body is read to its last chunk and trailers, at any cut of the stream', () => {
  for (const size of [1, 3, 16, 1024]) {
    assert.equal(frameAll(CHUNKED + LENGTH_FRAMED, size), [
      { status: 201, close: false },
      { status: 200, close: false },
    ]);
  }
});

test('nothing is answered before the whole body arrived', () => {
  const framer = new ResponseFramer();
  framer.push(Buffer.from(LENGTH_FRAMED.slice(0, -1), 'latin1'));
  assert.is(framer.next(), null);
  framer.push(Buffer.from(LENGTH_FRAMED.slice(-1), 'latin1'));
  assert.equal(framer.next(), { status: 200, close: false });
  assert.is(framer.next(), null);
});

test('a response that closes its connection says so; 204 and 304 have no body', () => {
  assert.equal(frameAll('HTTP/1.1 503 Busy\r\nconnection: close\r\ncontent-length: 0\r\n\r\n', 5), [{ status: 503, close: true }]);
  assert.equal(frameAll('HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n', 4), [
    { status: 204, close: false },
    { status: 304, close: false },
  ]);
});

test('what cannot be framed is refused: not HTTP/1.x, a body ended only by close, an interim answer, bad sizes, an endless head', () => {
  const refuse = (bytes: string, why: RegExp): void => {
    const framer = new ResponseFramer();
    framer.push(Buffer.from(bytes, 'latin1'));
    assert.throws(() => framer.next(), why);
  };
  refuse('HTTP/2 200\r\n\r\n', /not an HTTP\/1.x response/);
  refuse('SSH-2.0-OpenSSH\r\n\r\n', /not an HTTP\/1.x response/);
  refuse('HTTP/1.1 200 OK\r\n\r\n{}', /without Content-Length or chunked/);
  refuse('HTTP/1.1 100 Continue\r\n\r\n', /interim 100/);
  refuse('HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n', /bad content-length/);
  refuse('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n', /bad chunk size/);
  refuse(`HTTP/1.1 200 OK\r\nx: ${'a'.repeat(70_000)}`, /head longer than/);
});

test('a request is one buffer with its byte length (not its character count), and no header may smuggle a line', () => {
  const bytes = requestBytes('127.0.0.1:8080', 'POST', '/api/v1/x', { authorization: 'Bearer t', 'content-length': '1' }, '{"a":"€"}');
  const text = bytes.toString('utf8');
  assert.is(text, 'POST /api/v1/x HTTP/1.1\r\nhost: 127.0.0.1:8080\r\nauthorization: Bearer t\r\ncontent-length: 11\r\n\r\n{"a":"€"}');
  assert.throws(() => requestBytes('h', 'POST', '/', { 'x-a': 'b\r\nx-b: c' }, ''), /line break/);
});

test.run();
