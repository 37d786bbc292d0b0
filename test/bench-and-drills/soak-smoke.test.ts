// Proves that the soak (`make soak`) runs end to end at a small scale, so the tool cannot rot: a 40-second run at a low fixed rate samples the service's memory, UBSCore's data file and directory, the processed set's entries, PostgreSQL's size and the answers' latency on schedule, kills the service once and times its restart, ends with every transfer final and funds conserved, judges every item of the soak's verdict (the judgements' outcomes on flatness and latency are not asserted: 40 seconds is too short a run to judge them), and writes its JSON and markdown into the directory it is given.
// test-runner: own-postgres

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FLAT_JUDGED_RUN_S_MIN } from '../../bench/soak/judge.js';
import { calibratedRate } from '../../bench/soak/options.js';
import { runSoak } from '../../bench/soak/run.js';

const DURATION_S = 40;
const SAMPLE_S = 5;

test('the default rate is a third of what a closed loop committed on this machine; a calibration that committed nothing stops the soak', () => {
  const rate = calibratedRate(3000);
  assert.is(rate.perSecond, 1000);
  assert.match(rate.source, '3000 committed/s');
  assert.is(calibratedRate(1).perSecond, 1, 'never 0');
  assert.throws(() => calibratedRate(0), /committed nothing/);
  assert.throws(() => calibratedRate(Number.NaN), /committed nothing/);
});

test('make soak, 40 s: samples on schedule, one restart timed, every transfer final, conserved, every judgement made, results written', async () => {
  const outDir = await fs.mkdtemp(path.join(os.tmpdir(), 'soak-smoke-'));
  try {
    const { report, files } = await runSoak({
      durationS: DURATION_S,
      ratePerSecond: 40,
      rateSource: 'the smoke test',
      sampleS: SAMPLE_S,
      users: 50,
      seedConcurrency: 16,
      retentionS: 30,
      pruneIntervalS: 2,
      outDir,
      log: () => undefined,
    });
    const samples = report.samples;
    assert.ok(samples.length >= DURATION_S / SAMPLE_S - 1, `a sample every ${SAMPLE_S} s: ${samples.length}`);
    for (let i = 1; i < samples.length; i++) assert.ok((samples[i]?.atS ?? 0) > (samples[i - 1]?.atS ?? 0), 'in time order');
    // The restart: one SIGKILL in the middle, timed until /readyz, its errors counted apart.
    const restart = report.restart;
    assert.ok('readyMs' in restart && restart.readyMs > 0, `restart timed: ${JSON.stringify(restart)}`);
    assert.ok(restart.atS >= DURATION_S / 2 - 1 && restart.atS <= DURATION_S / 2 + 2, `in the middle: ${restart.atS}`);
    assert.ok(new Set(samples.map((s) => s.pid)).size === 2, 'a sample of each process');
    // Outside the restart every reading is there; a sample taken while the service was down may lack some.
    const down = (s: (typeof samples)[number]): boolean => s.atS >= restart.atS && s.atS <= restart.atS + restart.readyMs / 1000;
    const read = samples.filter((s) => s.vmRssMiB !== null && s.processedEntries !== null && s.committed !== null);
    assert.equal(
      samples.filter((s) => !down(s) && !read.includes(s)),
      [],
      'every sample outside the restart has every reading',
    );
    for (const s of read) {
      assert.ok(s.vmRssMiB !== null && s.rssAnonMiB !== null && s.vmRssMiB >= s.rssAnonMiB && s.rssAnonMiB > 0, JSON.stringify(s));
      assert.ok((s.dataMdbBytes ?? 0) > 0 && (s.dataMdbApparentBytes ?? 0) > 0, 'data.mdb on disk and its apparent size');
      assert.ok((s.ubscoreDirBytes ?? 0) >= (s.dataMdbBytes ?? 0), "UBSCore's directory holds data.mdb");
      assert.ok((s.pgDatabaseBytes ?? 0) > 0, "PostgreSQL's database size");
    }
    const last = read[read.length - 1];
    assert.ok(last !== undefined && (last.processedEntries ?? 0) > (read[0]?.processedEntries ?? 0), 'the processed set grew');
    assert.ok(
      samples.some((s) => s.p50Ms !== null && s.p99Ms !== null && s.p50Ms <= s.p99Ms && s.answered2xx > 0),
      'latencies per window',
    );
    assert.is(report.load.errorsOutsideRestart + report.load.errorsDuringRestart, report.load.errors + report.load.non2xx);
    assert.is(report.load.scheduled, DURATION_S * 40);
    // Correctness holds whatever the growth: every transfer final, funds conserved.
    assert.ok(report.end.committed > 0);
    assert.is(report.end.unfinished, 0);
    assert.ok(report.end.conservation !== null && report.end.conservation.differences === 0 && report.end.conservation.ok);
    const ids = report.judgements.map((j) => j.id).sort();
    assert.equal(ids, ['conservation', 'errors', 'final', 'p99', 'pruning', 'rss-flat', 'ubscore-dir-flat']);
    assert.is(
      report.passed,
      report.judgements.every((j) => j.met !== false),
    );
    // Memory, the directory and the restarted process's answers ramp for minutes: a 40 s run
    // reports them and leaves the verdict to a long one.
    for (const id of ['rss-flat', 'ubscore-dir-flat', 'p99']) {
      const j = report.judgements.find((x) => x.id === id);
      assert.is(j?.met, null, `${id} not judged in a 40 s run`);
      assert.match(j?.measured ?? '', `shorter than the ${FLAT_JUDGED_RUN_S_MIN} s`);
    }
    const growth = report.growthPerMinute;
    assert.ok(growth.beforeKill !== null && growth.whole !== null && (growth.whole.processedEntries ?? 0) > 0, JSON.stringify(growth));
    assert.equal([report.parameters.retentionS, report.parameters.pruneIntervalS], [30, 2]);
    // The files: JSON equal to the report, markdown with each section.
    assert.is(path.dirname(files.json), outDir);
    assert.match(path.basename(files.json), /^soak-.*\.json$/);
    assert.equal(JSON.parse(await fs.readFile(files.json, 'utf8')), JSON.parse(JSON.stringify(report)));
    const md = await fs.readFile(files.markdown, 'utf8');
    for (const heading of ['## Judgements', '## Growth per minute', '## The load', '## Samples']) assert.match(md, heading);
    assert.match(md, 'PROCESSED_RETENTION_S=30, a prune pass every 2 s.');
  } finally {
    await fs.rm(outDir, { recursive: true, force: true });
  }
});

test.run();
