// Proves the container files say only what the service understands: every variable the
// Dockerfile and compose.yaml set for the service is one that src/config/ reads (a misspelt
// one would be ignored in silence), the values they give are accepted, the image is built in
// stages and runs as an unprivileged user with DATA_DIR as its volume. No Docker engine runs on
// the build machines, so the files are checked, not built.

import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../src/config/config.js';
import { PROJECT_ROOT } from '../support/process.js';

/** The variables loadConfig reads when given `env`, recorded as it reads them. */
function variablesRead(env: Record<string, string>): Set<string> {
  const read = new Set<string>();
  const recording = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return target[name as string];
    },
  });
  loadConfig(recording);
  return read;
}

async function dockerfileEnv(): Promise<Record<string, string>> {
  const text = await fs.readFile(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
  const env: Record<string, string> = {};
  for (const line of text.split('\n').filter((l) => /^ENV\s/.test(l))) {
    for (const pair of line
      .replace(/^ENV\s+/, '')
      .trim()
      .split(/\s+/)) {
      const [key, ...value] = pair.split('=');
      assert.ok(key !== undefined && value.length > 0, `ENV in KEY=VALUE form: ${line}`);
      env[key as string] = value.join('=');
    }
  }
  return env;
}

/** The `environment:` mapping of compose.yaml's `transfer` service, with ${VAR...} filled in. */
async function composeEnv(): Promise<Record<string, string>> {
  const lines = (await fs.readFile(path.join(PROJECT_ROOT, 'compose.yaml'), 'utf8')).split('\n');
  const start = lines.findIndex((l) => /^ {2}transfer:\s*$/.test(l));
  assert.ok(start >= 0, 'compose.yaml has a transfer service');
  const env: Record<string, string> = {};
  let inEnv = false;
  for (const line of lines.slice(start + 1)) {
    if (/^ {2}\S/.test(line) || /^\S/.test(line)) break;
    if (/^ {4}environment:\s*$/.test(line)) {
      inEnv = true;
      continue;
    }
    if (/^ {4}\S/.test(line)) inEnv = false;
    const entry = /^ {6}([A-Za-z_][A-Za-z0-9_]*):\s*(.*)$/.exec(line);
    if (inEnv && entry !== null) {
      const value = (entry[2] ?? '').replace(/^"(.*)"$/, '$1');
      env[entry[1] as string] = value.replace(/\$\{[A-Z_]+[^}]*\}/g, 'x'.repeat(40));
    }
  }
  return env;
}

test('every variable the Dockerfile sets for the service is read by src/config/, and accepted', async () => {
  const env = { ...(await dockerfileEnv()), JWT_SECRET: 'x'.repeat(40) };
  const read = variablesRead(env);
  for (const name of Object.keys(env)) assert.ok(read.has(name), `the Dockerfile sets ${name}, which the service never reads`);
});

test('every variable compose.yaml sets for the service is read by src/config/, and accepted', async () => {
  const env = await composeEnv();
  assert.ok(Object.keys(env).length >= 5, `found the service's environment: ${JSON.stringify(env)}`);
  const read = variablesRead(env);
  for (const name of Object.keys(env)) assert.ok(read.has(name), `compose.yaml sets ${name}, which the service never reads`);
});

test('the image is built in stages and runs unprivileged, with DATA_DIR as its volume', async () => {
  const text = await fs.readFile(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
  assert.ok((text.match(/^FROM\s/gm) ?? []).length >= 2, 'multi-stage');
  const user = /^USER\s+(\S+)/m.exec(text)?.[1];
  assert.ok(user !== undefined && user !== 'root' && user !== '0', `runs as a non-root user, not ${user}`);
  const dataDir = (await dockerfileEnv()).DATA_DIR;
  assert.ok(dataDir !== undefined && new RegExp(`^VOLUME\\s+\\[?"?${dataDir}"?`, 'm').test(text), `DATA_DIR (${dataDir}) is a volume`);
  const compose = await composeEnv();
  assert.is(compose.DATA_DIR, dataDir, 'compose keeps the image DATA_DIR, the volume it mounts');
});

test.run();
