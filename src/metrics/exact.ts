// A gauge whose values are amounts of money in smallest units: printed as exact decimal integers
// from bigints, never through a float. prom-client keeps numbers, which lose precision above
// 2^53, so this one family is rendered here and appended to prom-client's text.

type ExactSeries = { readonly labels: Readonly<Record<string, string>>; readonly value: bigint };

export function renderExactGauge(name: string, help: string, series: readonly ExactSeries[]): string {
  const lines = [`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} gauge`];
  for (const s of series) lines.push(`${name}${labelText(s.labels)} ${s.value.toString()}`);
  return `${lines.join('\n')}\n`;
}

function labelText(labels: Readonly<Record<string, string>>): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) return '';
  return `{${entries.map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`).join(',')}}`;
}

function escapeHelp(help: string): string {
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}
