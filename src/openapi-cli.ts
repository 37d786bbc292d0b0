// Writes the OpenAPI document that GET /openapi.json serves to the file named by its argument,
// without starting the service, so that `make lint` can run Redocly's rules on it.

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { openApiDocument } from './http/openapi/document.js';

const file = process.argv[2];
if (file === undefined) {
  console.error('usage: node dist/src/openapi-cli.js <file.json>');
  process.exit(2);
}
mkdirSync(path.dirname(file), { recursive: true });
writeFileSync(file, `${JSON.stringify(openApiDocument(), null, 2)}\n`);
