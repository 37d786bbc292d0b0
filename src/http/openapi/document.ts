// The OpenAPI 3.1 document, generated from the valibot schemas that validate the requests, and
// the interactive page at /docs (Swagger UI, served from the swagger-ui-dist package).

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Hono } from 'hono';
import { ERROR_CODES } from '../../domain/errors.js';
import { statusOf } from '../errors.js';
import { adminPaths } from './admin-paths.js';
import { apiPaths } from './api-paths.js';
import { componentSchemas, securitySchemes } from './components.js';

const TAGS = [
  { name: 'transfers', description: "A user's transfers between FUNDING and SPOT" },
  { name: 'balances', description: "A user's balances" },
  { name: 'admin', description: 'External movements, assets and account statuses (role=admin)' },
  { name: 'operator', description: 'What an operator reads and does: alerts, stuck transfers, the halt, the console (role=admin)' },
  { name: 'audit', description: 'The admin audit trail (role=admin)' },
  { name: 'health', description: 'Probes and metrics, public' },
  { name: 'docs', description: 'This document and its page, public' },
];

/** package.json is private and names no licence: none is granted (an SPDX LicenseRef of our own). */
const LICENSE = { name: 'Proprietary: private, no licence is granted', identifier: 'LicenseRef-Proprietary' };

export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Internal transfers: FUNDING ⇄ SPOT',
      version: '1.0.0',
      license: LICENSE,
      description:
        'Amounts are decimal strings in the asset\'s units, never JSON numbers. Every error answer is {"code","message"}, plus req_id and state when a transfer exists; the status follows from the code (x-error-codes).',
    },
    // Relative: the document is served by the service it describes, on whatever host and port.
    servers: [{ url: '/', description: 'The service that serves this document' }],
    tags: TAGS,
    paths: { ...apiPaths, ...adminPaths },
    components: { schemas: componentSchemas(), securitySchemes },
    'x-error-codes': ERROR_CODES.map((code) => ({ code, status: statusOf(code) })),
  };
}

const SWAGGER_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Readonly<Record<string, string>> = { 'swagger-ui.css': 'text/css', 'swagger-ui-bundle.js': 'text/javascript' };

const DOCS_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Internal transfers API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui' });</script>
</body></html>`;

export function mountDocs(app: Hono): void {
  const document = openApiDocument();
  const files = new Map(Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(path.join(SWAGGER_DIR, name)) }]));
  app.get('/openapi.json', (c) => c.json(document));
  app.get('/docs', (c) => c.html(DOCS_PAGE));
  app.get('/docs/:file', (c) => {
    const file = files.get(c.req.param('file'));
    if (file === undefined) return c.json({ code: 'NOT_FOUND', message: 'No such resource' }, 404);
    return c.body(new Uint8Array(file.body), 200, { 'content-type': file.type, 'cache-control': 'max-age=3600' });
  });
}
