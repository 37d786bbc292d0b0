// The few HTTP/1.1 bytes the open-loop generator needs on its own keep-alive sockets: a request
// written in one buffer, and the responses read back off the stream one at a time. Node's
// `http.request` cost the generator about 0.18 ms of CPU a request (0.18 cores at 1,000/s, on a
// 2-core machine it shares with the service it measures); on raw sockets it costs half of that,
// about what autocannon pays, which frames responses the same way.

/** One request, whole: its head and its body, in one buffer for one socket write. */
export function requestBytes(host: string, method: string, path: string, headers: Readonly<Record<string, string>>, body: string): Buffer {
  const bodyBytes = Buffer.from(body, 'utf8');
  let head = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) throw new Error(`requestBytes: header ${JSON.stringify(name)} holds a line break`);
    const lower = name.toLowerCase();
    if (lower === 'content-length' || lower === 'host') continue;
    head += `${name}: ${value}\r\n`;
  }
  head += `content-length: ${bodyBytes.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), bodyBytes]);
}

/** A response read whole: its status, and whether the server closes the connection after it. */
export type ResponseEnd = { readonly status: number; readonly close: boolean };

const HEAD_END = Buffer.from('\r\n\r\n');
const LINE_END = Buffer.from('\r\n');
// The header fields read; names are case-insensitive, and each field starts a line of its own.
const CONNECTION = /\r\nconnection:[ \t]*([^\r]*)/i;
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*([^\r]*)/i;
const TRANSFER_ENCODING = /\r\ntransfer-encoding:[ \t]*([^\r]*)/i;
/** A head longer than this is not one our services send. */
const HEAD_BYTES_MAX = 64 * 1024;

type Phase =
  | { readonly kind: 'head' }
  | { readonly kind: 'body'; readonly left: number }
  | { readonly kind: 'chunk-size' }
  | { readonly kind: 'chunk'; readonly left: number }
  | { readonly kind: 'trailer' };

/**
 * Reads the responses of one connection off its byte stream, in order: the body framed by
 * Content-Length or by chunked encoding, as HTTP/1.1 keep-alive requires. Anything else (a
 * response that is not HTTP/1.x, a body framed only by the connection's close, a bad chunk size)
 * throws: the generator counts the request as an error and drops the connection.
 */
export class ResponseFramer {
  private buffered: Buffer = Buffer.alloc(0);
  private phase: Phase = { kind: 'head' };
  private current: ResponseEnd = { status: 0, close: false };

  push(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
  }

  /** The next response once all of it has arrived (and consumed), or null until then. */
  next(): ResponseEnd | null {
    for (;;) {
      switch (this.phase.kind) {
        case 'head': {
          const end = this.buffered.indexOf(HEAD_END);
          if (end < 0) {
            if (this.buffered.length > HEAD_BYTES_MAX) throw new Error(`response head longer than ${HEAD_BYTES_MAX} bytes`);
            return null;
          }
          const head = this.buffered.toString('latin1', 0, end);
          this.buffered = this.buffered.subarray(end + HEAD_END.length);
          this.startBody(head);
          break;
        }
        case 'body': {
          if (this.buffered.length < this.phase.left) return null;
          this.buffered = this.buffered.subarray(this.phase.left);
          return this.finish();
        }
        case 'chunk-size': {
          const end = this.buffered.indexOf(LINE_END);
          if (end < 0) return null;
          const line = this.buffered.toString('latin1', 0, end).split(';')[0]?.trim() ?? '';
          if (!/^[0-9a-fA-F]{1,8}$/.test(line)) throw new Error(`bad chunk size ${JSON.stringify(line)}`);
          const size = Number.parseInt(line, 16);
          this.buffered = this.buffered.subarray(end + LINE_END.length);
          // A chunk's data is followed by its own CRLF.
          this.phase = size === 0 ? { kind: 'trailer' } : { kind: 'chunk', left: size + LINE_END.length };
          break;
        }
        case 'chunk': {
          if (this.buffered.length < this.phase.left) return null;
          this.buffered = this.buffered.subarray(this.phase.left);
          this.phase = { kind: 'chunk-size' };
          break;
        }
        case 'trailer': {
          const end = this.buffered.indexOf(LINE_END);
          if (end < 0) return null;
          this.buffered = this.buffered.subarray(end + LINE_END.length);
          // Trailer fields end with an empty line.
          if (end === 0) return this.finish();
          break;
        }
      }
    }
  }

  private startBody(head: string): void {
    const status = /^HTTP\/1\.[01] (\d{3})[ \r]/.exec(`${head}\r`);
    if (status === null) throw new Error(`not an HTTP/1.x response: ${JSON.stringify(head.slice(0, 40))}`);
    const code = Number(status[1]);
    // The generator never asks for an interim answer (no Expect: 100-continue).
    if (code < 200) throw new Error(`an interim ${code} response was not asked for`);
    const field = (re: RegExp): string | undefined => re.exec(head)?.[1]?.trim();
    this.current = { status: code, close: (field(CONNECTION) ?? '').toLowerCase() === 'close' };
    const length = field(CONTENT_LENGTH);
    if ((field(TRANSFER_ENCODING) ?? '').toLowerCase().includes('chunked')) {
      this.phase = { kind: 'chunk-size' };
    } else if (length !== undefined) {
      if (!/^\d{1,15}$/.test(length)) throw new Error(`bad content-length ${JSON.stringify(length)}`);
      this.phase = { kind: 'body', left: Number(length) };
    } else if (code === 204 || code === 304) {
      this.phase = { kind: 'body', left: 0 };
    } else {
      throw new Error(`a ${code} response without Content-Length or chunked encoding cannot be reused`);
    }
  }

  private finish(): ResponseEnd {
    this.phase = { kind: 'head' };
    return this.current;
  }
}
