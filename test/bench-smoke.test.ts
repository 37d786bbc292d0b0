// Proves that the benchmark (`make bench`) runs end to end at a tiny scale: the real service commits transfers under autocannon, every baseline is measured, conservation holds, and the JSON and summary land in the directory it is given.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runBench } from '../bench/run.js';

test('make bench, tiny: committed > 0, every part measured, zero conservation differences, results written to the given directory', async () => {
  const outDir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-smoke-'));
  try {
    const { report, files } = await runBench({
      levels: [8],
      durationS: 2,
      warmupS: 1,
      memoryS: 4,
      users: 100,
      seedConcurrency: 32,
      ubsCommands: 5_000,
      ubsInFlight: 1_000,
      restart: null,
      recovery: null,
      profile: 'never',
      profileS: 0,
      outDir,
      log: () => undefined,
    });
    const level = report.levels[0];
    assert.ok(level !== undefined, 'one connection level');
    assert.is(level.connections, 8);
    assert.ok(level.service.committed > 0, 'the service committed transfers');
    assert.ok(level.service.committedPerSecond > 0);
    for (const key of ['p50', 'p99', 'p99_9', 'mean', 'max'] as const) assert.type(level.service.latencyMs[key], 'number');
    for (const key of ['errors', 'timeouts', 'non2xx'] as const) assert.type(level.service[key], 'number');
    assert.ok(level.pg !== null && level.pg.postgresJs.perSecond > 0, '(a) measured through postgres.js');
    assert.ok(level.http !== null && level.http.responsesPerSecond > 0, '(b) measured');
    assert.type(level.ratioToPostgresJs, 'number');
    assert.type(level.ratioToHttp, 'number');
    assert.is(report.memory.status, 'measured');
    assert.is(report.ubscore.status, 'measured');
    assert.ok(report.ubscore.status === 'measured' && report.ubscore.figures.applied === 5_000, '(c) every command applied');
    assert.is(report.restart.status, 'skipped');
    assert.is(report.recovery.status, 'skipped');
    assert.ok(report.conservation.status === 'measured', 'conservation checked');
    assert.is(report.conservation.figures.differences, 0);
    assert.ok(report.conservation.figures.ok);
    assert.ok(report.targets.length > 0 && report.targets.every((t) => typeof t.goal === 'string' && typeof t.measured === 'string'));
    assert.ok(report.machine.cpus > 0 && report.machine.node.startsWith('v') && report.machine.commit.length > 0);
    assert.is(path.dirname(files.json), outDir);
    assert.is(files.summary, path.join(outDir, 'summary.md'));
    const written = JSON.parse(await fs.readFile(files.json, 'utf8')) as { levels: unknown[] };
    assert.is(written.levels.length, 1);
    assert.match(await fs.readFile(files.summary, 'utf8'), '## Targets');
  } finally {
    await fs.rm(outDir, { recursive: true, force: true });
  }
});

test.run();
