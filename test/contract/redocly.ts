// Redocly CLI's lint on a document, with the repository's redocly.yaml and no network use, as
// `make lint` runs it: its problems as readable lines (rule and message), none when it passes.

import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../support/process.js';

type Json = Record<string, unknown>;
type Problem = { ruleId: string; severity: string; message: string };

export async function redoclyProblems(doc: Json): Promise<string[]> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'redocly-'));
  const file = path.join(dir, 'openapi.json');
  await fs.writeFile(file, JSON.stringify(doc));
  const args = ['lint', '--config', path.join(PROJECT_ROOT, 'redocly.yaml'), '--format', 'json', file];
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' };
  // A document with errors makes it exit 1 with the same report on stdout.
  const stdout = await promisify(execFile)(path.join(PROJECT_ROOT, 'node_modules/.bin/redocly'), args, { env }).then(
    (r) => r.stdout,
    (e: { stdout?: string }) => e.stdout ?? '',
  );
  await fs.rm(dir, { recursive: true, force: true });
  const report = JSON.parse(stdout) as { problems: Problem[] };
  return report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`);
}
