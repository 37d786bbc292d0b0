// summary.md's section on one explained batch of the writer (bench/parts/explain-batch.ts): its
// statements, the costliest first, then every plan whole.

import type { BatchPlans } from '../parts/explain-batch.js';
import { figuresOf, type BenchReport } from './report.js';

/** The statements of one explained batch, the costliest first, then every plan whole. */
export function batchPlanLines(r: BenchReport): string[] {
  const out = ['## One batch of the writer explained', ''];
  if (r.batchPlans === undefined) return [];
  const plans = figuresOf(r.batchPlans);
  if (plans === null)
    return [...out, r.batchPlans.status === 'failed' ? `FAILED: ${r.batchPlans.error.split('\n')[0] ?? ''}` : 'skipped.', ''];
  const buffers = (text: string): string => /Buffers: ([^\n]*)/.exec(text)?.[1]?.trim() ?? '—';
  const rows = (name: string, list: BatchPlans['create']) =>
    [...list]
      .sort((a, b) => b.ms - a.ms)
      .map((p) => `| ${name} | ${p.ms.toFixed(3)} | \`${p.query.replace(/\|/g, '\\|')}\` | ${buffers(p.text)} |`);
  const whole = (name: string, list: BatchPlans['create']) => [`${name}:`, '', '```', ...list.map((p) => p.text.trim()), '```', ''];
  return [
    ...out,
    `\`${plans.form}\` with ${plans.items} transfers, half each way, on the service's database after the levels, in a transaction rolled back; auto_explain with ANALYZE and BUFFERS and nested statements, so every statement inside the function has its plan (the call itself is the line that holds them all).`,
    '',
    '| batch | ms | statement (its first line) | buffers of its top node |',
    '|---|---|---|---|',
    ...rows('creating', plans.create),
    ...rows('completing', plans.complete),
    '',
    '<details><summary>The plans</summary>',
    '',
    ...whole('Creating batch', plans.create),
    ...whole('Completing batch', plans.complete),
    '</details>',
    '',
  ];
}
