// Signing keys, JWKS documents and a local JWKS server (127.0.0.1; the network here reaches no
// identity provider), for tests of RS256, ES256 and EdDSA tokens.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { JwksAlgorithm } from '../../src/http/auth/jwks-keys.js';

export type TestKey = { readonly kid: string; readonly alg: JwksAlgorithm; readonly privateKey: CryptoKey; readonly publicJwk: JWK };

export async function testKey(alg: JwksAlgorithm, kid: string): Promise<TestKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicJwk };
}

export function jwksOf(keys: readonly TestKey[]): string {
  return JSON.stringify({ keys: keys.map((k) => k.publicJwk) });
}

/** A token signed by `key`, with `kid` and `alg` in its header unless `header` says otherwise. */
export async function signWith(key: TestKey, claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header }).sign(key.privateKey);
}

export type JwksServer = {
  readonly url: string;
  /** How many times the JWKS was fetched. */
  readonly fetches: () => number;
  readonly serve: (text: string) => void;
  readonly close: () => Promise<void>;
};

export async function startJwksServer(text: string): Promise<JwksServer> {
  let body = text;
  let fetches = 0;
  const server = http.createServer((req, res) => {
    fetches += 1;
    res.writeHead(req.url === '/jwks.json' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(req.url === '/jwks.json' ? body : '{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/jwks.json`,
    fetches: () => fetches,
    serve: (next) => {
      body = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
