/**
 * Leave-one-conversation-out selection over runs of bench/carry-over-dev.ts: for each conversation, the run with the
 * best evidence present on the OTHER conversations (at `--budget`, subject to the noise limits on them) is chosen,
 * and its figure on the held-out conversation is reported. Development figures only.
 *
 *   node --import tsx bench/carry-over-dev-loo.ts --budget 2000 fill0.5 fill0.34 fill0.2 [--dir /tmp/engram-carry-dev]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

interface Run {
  results: Array<{ sampleId: string; evidence: string[]; at: Record<string, { present: string[] }> }>;
  noise: Record<string, { other: number[]; gibberish: number[]; all?: number[] }>;
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { budget: { type: 'string', default: '2000' }, dir: { type: 'string', default: '/tmp/engram-carry-dev' }, 'max-noise': { type: 'string', default: '50' } } });
const runs = new Map(positionals.map((label) => [label, JSON.parse(readFileSync(join(values.dir!, 'results', `${label}.json`), 'utf8')) as Run]));
const budget = values.budget!;
const maxNoise = Number(values['max-noise']);
const share = (run: Run, keep: (id: string) => boolean): number => {
  const qs = run.results.filter((q) => keep(q.sampleId) && q.at[budget]);
  return qs.length === 0 ? 0 : (qs.reduce((s, q) => s + q.at[budget]!.present.length / q.evidence.length, 0) / qs.length) * 100;
};
/** Noise on the given conversations: the mean tokens for other conversations' questions (every one when measured), and gibberish. */
const noiseOk = (run: Run, keep: (id: string) => boolean): boolean => {
  const entries = Object.entries(run.noise ?? {}).filter(([k]) => keep(k));
  const other = entries.flatMap(([, n]) => n.all ?? n.other);
  const gibberish = entries.flatMap(([, n]) => n.gibberish);
  const mean = other.reduce((s, x) => s + x, 0) / Math.max(1, other.length);
  return mean <= maxNoise && gibberish.every((x) => x === 0);
};
const conversations = [...new Set([...runs.values()].flatMap((r) => r.results.map((q) => q.sampleId)))].sort();
console.log(`| held out | chosen on the other three | their figure | held-out figure @${budget} | held-out with each run |`);
console.log('| --- | --- | ---: | ---: | --- |');
for (const held of conversations) {
  const train = (id: string): boolean => id !== held;
  const ranked = [...runs].filter(([, r]) => noiseOk(r, train)).sort((a, b) => share(b[1], train) - share(a[1], train));
  const [label, run] = ranked[0]!;
  const each = [...runs].map(([l, r]) => `${l} ${share(r, (id) => id === held).toFixed(1)}`).join(', ');
  console.log(`| ${held} | ${label} | ${share(run, train).toFixed(1)} | ${share(run, (id) => id === held).toFixed(1)} | ${each} |`);
}
