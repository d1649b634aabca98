/**
 * Benchmark entry point: `npm run bench -- <name> [options]`. Each benchmark writes its report to
 * bench/results/ (committed, so numbers in the README and issues can be traced to a run).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CONTEXT_PARTS, runContextBench, type ContextPart } from './context.js';
import { runEmbedderBench } from './embedder.js';
import { HTTP_LOAD_MODES, runHttpLoadSuite, type HttpLoadMode } from './http-load.js';
import { runIngestRecall } from './ingest-recall.js';
import { runAdversarialBench } from './adversarial.js';
import { LOCOMO_RETRIEVERS, runLocomo, type LocomoRetriever } from './locomo.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The development split; the data lives beside the repository, never in it (CC BY-NC, evaluation only). */
const DEFAULT_LOCOMO_DATA = resolve(REPO_ROOT, '../shared/bench-data/locomo/locomo-dev.json');
/** A real Claude Code session (MIT, d-kimuson/claude-code-viewer), beside the repository like the LoCoMo data. */
const DEFAULT_TRANSCRIPT = resolve(REPO_ROOT, '../shared/bench-data/transcripts/claude-code-viewer-sample-fe5e1c67.jsonl');

const USAGE = `usage:
  npm run bench -- ingest-recall [--sizes 10000,100000] [--queries 300] [--single 3000] [--backends sqlite,postgres] [--writers 1,2,4] [--writer-events 5000]
  npm run bench -- embedder [--texts 20000] [--loads 5]
  npm run bench -- http-load [--agents 8,32] [--backends sqlite,postgres] [--embedder none|builtin] [--seconds 20] [--warmup 2] [--batch 4] [--retry-rate 0.05] [--profile] [--workers 1,2]
                               [--client node-http|fetch]
                               [--mode mixed,append,recall] [--prefill-events N] [--servers 1,2] [--store FILE | --store-events N] [--out NAME]
  npm run bench -- context [--parts prefix,sweep,latency,ablation] [--windows 8192,16384,32768] [--turns 300] [--seeds 7,1234] [--transcript FILE] [--transcript-windows <--windows>]
                           [--low-water-sweep 0.2,0.3,0.4,0.5,0.6]
                           [--sizes 10000,100000] [--steady-turns 200] [--latency-window 32768] [--probes 14] [--seed 42] [--no-profile]
  npm run bench -- recall-vectors [--sizes 10000,100000] [--queries 300] [--backends sqlite,postgres]
  npm run bench -- scale-vectors [--events 100000] [--queries 300] [--backends sqlite,postgres] [--pg-events N] [--keep-store DIR]
  npm run bench -- vectors-locomo [--data FILE]
  npm run bench -- bus [--engrams 100000] [--queries 500] [--backends sqlite,postgres] [--pg-engrams 10000]
  npm run bench -- locomo [--data FILE] [--k 5,10,25,50] [--retriever fts,vector,hybrid] [--json] [--ablation] [--out locomo] [--questions FILE]
  npm run bench -- adversarial [--repeats 1] [--no-redact]
  npm run bench -- purge-scrub [--events 100000] [--keep-store DIR]
  npm run bench -- dashboard [--sizes 10000,100000] [--engrams 5000]
  npm run bench -- scale [--events 1000000] [--backends sqlite,postgres] [--pg-events 100000] [--parts fts,ingest,cli,hybrid,http,cache] [--queries 25] [--reuse] [--seconds 20] [--turns 300] [--keep-store DIR]
  npm run bench -- knowledge [--seed 42] [--quick]
  npm run bench -- identifier-append-cost --baseline-tree DIR [--events 20000] [--backends sqlite,postgres] [--rounds 3]
  npm run bench -- ingest-profile [--events 30000] [--rounds 3]
  npm run bench -- identifier-tail [--source /tmp/engram-scale/ours-1000000.db] [--keep-store DIR] [--waiting 3000] [--queries 25]
  npm run bench -- session-span [--events 100000] [--backends sqlite,postgres] [--queries 40] [--dormant] [--out session-span]
  npm run bench -- consolidation [--seed 42] [--quick]
  npm run bench -- granular [--seed 42] [--quick]
  npm run bench -- artifact-lifecycle [--backends sqlite,postgres] [--quick]
  npm run bench -- carry-over [--quick] [--conversations conv-26,conv-30] [--budgets 1000,2000,4000] [--categories 1,2,3,4] [--parts locomo,noise,latency,coding] [--sizes 1000,100000] [--jobs 2] [--brief-share 0.67] [--data FILE] [--out carry-over] [--label TEXT]
  npm run bench -- session-summaries [--quick] [--out session-summaries] [--label TEXT]
  npm run bench -- needle [--quick] [--seed 1,2] [--window 32000] [--cycles 1,3,5] [--json] [--out DIR] [--replay FILE [--format F] [--session S]] [--consolidate]`;

const [name, ...rest] = process.argv.slice(2);
const { values } = parseArgs({
  args: rest,
  options: {
    sizes: { type: 'string', default: '10000,100000' },
    queries: { type: 'string', default: '300' },
    single: { type: 'string', default: '3000' },
    backends: { type: 'string', default: 'sqlite,postgres' },
    writers: { type: 'string', default: '1,2,4' },
    'writer-events': { type: 'string', default: '5000' },
    data: { type: 'string', default: DEFAULT_LOCOMO_DATA },
    k: { type: 'string', default: '5,10,25,50' },
    retriever: { type: 'string', default: LOCOMO_RETRIEVERS.join(',') },
    json: { type: 'boolean', default: false },
    ablation: { type: 'boolean', default: false },
    out: { type: 'string', default: 'locomo' },
    questions: { type: 'string' },
    texts: { type: 'string', default: '20000' },
    loads: { type: 'string', default: '5' },
    parts: { type: 'string', default: CONTEXT_PARTS.join(',') },
    windows: { type: 'string', default: '8192,16384,32768' },
    turns: { type: 'string', default: '300' },
    transcript: { type: 'string', default: DEFAULT_TRANSCRIPT },
    'transcript-windows': { type: 'string' },
    'low-water-sweep': { type: 'string', default: '0.2,0.3,0.4,0.5,0.6' },
    'steady-turns': { type: 'string', default: '200' },
    'latency-window': { type: 'string', default: '32768' },
    probes: { type: 'string', default: '14' },
    seed: { type: 'string', default: '42' },
    seeds: { type: 'string' },
    'no-profile': { type: 'boolean', default: false },
    agents: { type: 'string', default: '8,32' },
    embedder: { type: 'string', default: 'none' },
    seconds: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '2' },
    batch: { type: 'string', default: '4' },
    'retry-rate': { type: 'string', default: '0.05' },
    profile: { type: 'boolean', default: false },
    workers: { type: 'string', default: '1' },
    client: { type: 'string', default: 'node-http' },
    mode: { type: 'string', default: 'mixed,append,recall' },
    'prefill-events': { type: 'string' },
    // http-load: engram serve processes on one store, a prebuilt SQLite store (or scale's of N events)
    servers: { type: 'string', default: '1' },
    store: { type: 'string' },
    'store-events': { type: 'string' },
    engrams: { type: 'string', default: '100000' },
    repeats: { type: 'string', default: '1' },
    'no-redact': { type: 'boolean', default: false },
    'pg-engrams': { type: 'string', default: '10000' },
    events: { type: 'string', default: '100000' },
    'pg-events': { type: 'string' },
    // needle (bench/needle.ts parses its own flags again; these only keep this parser from refusing them)
    quick: { type: 'boolean' },
    window: { type: 'string' },
    cycles: { type: 'string' },
    replay: { type: 'string' },
    format: { type: 'string' },
    session: { type: 'string' },
    traces: { type: 'string' },
    'needles-per-type': { type: 'string' },
    consolidate: { type: 'boolean' },
    // scale (bench/scale.ts); --events, --parts and --queries are shared, with its own defaults when not given
    reuse: { type: 'boolean' },
    dormant: { type: 'boolean' },
    // scale-vectors: keep (and reuse) the SQLite store in this directory
    'keep-store': { type: 'string' },
    // identifier-append-cost: the earlier tree to compare with, and runs per tree
    'baseline-tree': { type: 'string' },
    rounds: { type: 'string' },
    // carry-over (bench/carry-over.ts) and session-summaries
    conversations: { type: 'string' },
    budgets: { type: 'string' },
    categories: { type: 'string' },
    jobs: { type: 'string' },
    'brief-share': { type: 'string' },
    label: { type: 'string' },
    // identifier-tail: the caught-up store copied, and the events appended to the copy without the catch-up
    source: { type: 'string' },
    waiting: { type: 'string' },
  },
});

/** `--mode` of http-load: a comma-separated list of its modes, each run in turn. */
function httpLoadModes(list: string): HttpLoadMode[] {
  const modes = list.split(',');
  for (const m of modes) if (!(HTTP_LOAD_MODES as readonly string[]).includes(m)) fail(`--mode: expected mixed, append and/or recall, found "${list}"`);
  return modes as HttpLoadMode[];
}

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

switch (name) {
  case 'ingest-profile': {
    const { runIngestProfile } = await import('./ingest-profile.js');
    await runIngestProfile({ events: rest.includes('--events') ? Number(values.events) : 30_000, rounds: Number(values.rounds ?? 3) });
    break;
  }
  case 'identifier-tail': {
    const { runIdentifierTail, IDENTIFIER_TAIL_DEFAULTS: d } = await import('./identifier-tail.js');
    await runIdentifierTail({
      source: values.source ?? d.source,
      dir: values['keep-store'] ?? d.dir,
      waiting: values.waiting !== undefined ? Number(values.waiting) : d.waiting,
      queries: rest.includes('--queries') ? Number(values.queries) : d.queries,
    });
    break;
  }
  case 'session-span': {
    if (rest.includes('--out') && !/^[\w.-]+$/.test(values.out)) fail('--out: a file name without directories, e.g. session-span-before');
    const { runSessionSpan } = await import('./session-span.js');
    await runSessionSpan({
      events: rest.includes('--events') ? Number(values.events) : 100_000,
      backends: values.backends.split(',') as Array<'sqlite' | 'postgres'>,
      queries: rest.includes('--queries') ? Number(values.queries) : 40,
      out: rest.includes('--out') ? values.out : values.dormant === true ? 'session-span-dormant' : 'session-span',
      dormant: values.dormant === true,
    });
    break;
  }
  case 'identifier-append-cost': {
    if (values['baseline-tree'] === undefined) fail('identifier-append-cost needs --baseline-tree DIR');
    const { runIdentifierAppendCost } = await import('./identifier-append-cost.js');
    await runIdentifierAppendCost({
      baselineTree: values['baseline-tree'],
      events: rest.includes('--events') ? Number(values.events) : 20_000,
      backends: values.backends.split(',') as Array<'sqlite' | 'postgres'>,
      rounds: Number(values.rounds ?? 3),
    });
    break;
  }
  case 'ingest-recall':
    await runIngestRecall({
      sizes: values.sizes.split(',').map(Number),
      queries: Number(values.queries),
      single: Number(values.single),
      backends: values.backends.split(',') as Array<'sqlite' | 'postgres'>,
      writers: values.writers.split(',').map(Number),
      writerEvents: Number(values['writer-events']),
    });
    break;
  case 'locomo': {
    const ks = values.k.split(',').map(Number);
    if (ks.some((k) => !Number.isInteger(k) || k < 1 || k > 1000)) fail(`--k: expected integers from 1 to 1000, found "${values.k}"`);
    const retrievers = values.retriever.split(',');
    const unknown = retrievers.filter((r) => !(LOCOMO_RETRIEVERS as readonly string[]).includes(r));
    if (unknown.length > 0) fail(`--retriever: unknown "${unknown.join(', ')}"; expected ${LOCOMO_RETRIEVERS.join(', ')}`);
    if (!/^[\w.-]+$/.test(values.out)) fail('--out: a file name without directories, e.g. locomo-heldout');
    const questions = values.questions === undefined ? undefined : resolve(values.questions);
    // The per-question file holds the dataset's text, which must never be copied into the project (its licence).
    if (questions !== undefined && questions.startsWith(REPO_ROOT)) fail('--questions: write it outside the repository, e.g. /tmp/locomo-questions.json');
    await runLocomo({
      data: resolve(values.data),
      ks: [...new Set(ks)].sort((a, b) => a - b),
      retrievers: retrievers as LocomoRetriever[],
      json: values.json,
      ablation: values.ablation,
      out: values.out,
      ...(questions !== undefined ? { questions } : {}),
    });
    break;
  }
  case 'context': {
    const parts = values.parts.split(',');
    const unknown = parts.filter((p) => !(CONTEXT_PARTS as readonly string[]).includes(p));
    if (unknown.length > 0) fail(`--parts: unknown "${unknown.join(', ')}"; expected ${CONTEXT_PARTS.join(', ')}`);
    const ints = (field: string, text: string, min: number): number[] => {
      const list = text.split(',').map(Number);
      if (list.some((n) => !Number.isInteger(n) || n < min)) fail(`--${field}: expected integers >= ${min}, found "${text}"`);
      return list;
    };
    const windows = ints('windows', values.windows, 1024);
    const fractions = values['low-water-sweep'].split(',').map(Number);
    if (fractions.some((f) => !(f > 0 && f < 1))) fail(`--low-water-sweep: expected fractions between 0 and 1, found "${values['low-water-sweep']}"`);
    await runContextBench({
      parts: parts as ContextPart[],
      windows,
      turns: ints('turns', values.turns, 2)[0]!,
      seed: ints('seed', values.seed, 0)[0]!,
      otherSeeds: values.seeds === undefined ? [] : ints('seeds', values.seeds, 0),
      transcript: resolve(values.transcript),
      transcriptWindows: values['transcript-windows'] === undefined ? windows : ints('transcript-windows', values['transcript-windows'], 1024),
      lowWaterSweep: fractions,
      sizes: ints('sizes', values.sizes, 1),
      steadyTurns: ints('steady-turns', values['steady-turns'], 1)[0]!,
      latencyWindow: ints('latency-window', values['latency-window'], 1024)[0]!,
      probesPerType: ints('probes', values.probes, 1)[0]!,
      profile: !values['no-profile'],
    });
    break;
  }
  case 'http-load': {
    const int = (field: string, min: number): number => {
      const n = Number(values[field as 'agents']);
      if (!Number.isInteger(n) || n < min) fail(`--${field}: expected an integer >= ${min}`);
      return n;
    };
    const retryRate = Number(values['retry-rate']);
    if (!(retryRate >= 0 && retryRate <= 1)) fail('--retry-rate: expected a share from 0 to 1');
    const agents = values.agents.split(',').map(Number);
    if (agents.some((n) => !Number.isInteger(n) || n < 1)) fail(`--agents: expected integers >= 1, found "${values.agents}"`);
    const backends = values.backends.split(',');
    if (backends.some((b) => b !== 'sqlite' && b !== 'postgres')) fail(`--backends: expected sqlite and/or postgres, found "${values.backends}"`);
    if (values.embedder !== 'none' && values.embedder !== 'builtin') fail(`--embedder: expected none or builtin, found "${values.embedder}"`);
    await runHttpLoadSuite({
      agents,
      backends: backends as Array<'sqlite' | 'postgres'>,
      embedder: values.embedder,
      seconds: int('seconds', 1),
      warmupSeconds: int('warmup', 0),
      batch: int('batch', 1),
      retryRate,
      profile: values.profile,
      workers: values.workers.split(',').map((w) => (Number.isInteger(Number(w)) && Number(w) >= 1 ? Number(w) : fail(`--workers: expected integers >= 1, found "${values.workers}"`))),
      modes: httpLoadModes(values.mode),
      client: values.client === 'node-http' || values.client === 'fetch' ? values.client : fail(`--client: expected node-http or fetch, found "${values.client}"`),
      ...(values['prefill-events'] !== undefined ? { prefillEvents: int('prefill-events', 1) } : {}),
      servers: values.servers.split(',').map((n) => (Number.isInteger(Number(n)) && Number(n) >= 1 ? Number(n) : fail(`--servers: expected integers >= 1, found "${values.servers}"`))),
      ...(values.store !== undefined ? { store: existsSync(values.store) ? values.store : fail(`--store: no such file: ${values.store}`) } : {}),
      ...(values['store-events'] !== undefined ? { storeEvents: int('store-events', 1) } : {}),
      ...(rest.some((a) => a === '--out' || a.startsWith('--out=')) ? { out: /^[\w.-]+$/.test(values.out) ? values.out : fail('--out: a file name without directories') } : {}),
    });
    break;
  }
  case 'carry-over': {
    const { runCarryOver, CARRY_OVER_DEFAULTS: d, CARRY_OVER_PARTS, DEFAULT_CARRY_OVER_DATA } = await import('./carry-over.js');
    const given = (flag: string): boolean => rest.some((a) => a === `--${flag}` || a.startsWith(`--${flag}=`));
    const ints = (field: string, text: string, min: number): number[] => {
      const list = text.split(',').map(Number);
      if (list.some((n) => !Number.isInteger(n) || n < min)) fail(`--${field}: expected integers >= ${min}, found "${text}"`);
      return list;
    };
    const parts = given('parts') ? values.parts.split(',') : [...d.parts];
    const unknownParts = parts.filter((p) => !(CARRY_OVER_PARTS as readonly string[]).includes(p));
    if (unknownParts.length > 0) fail(`--parts: unknown "${unknownParts.join(', ')}"; expected ${CARRY_OVER_PARTS.join(', ')}`);
    const categories = values.categories === undefined ? d.categories : ints('categories', values.categories, 1);
    if (categories.some((c) => c > 5)) fail('--categories: LoCoMo categories are 1 to 5');
    if (!/^[\w.-]+$/.test(values.out)) fail('--out: a file name without directories');
    const quick = values.quick === true;
    const share = (text: string): number => {
      const n = Number(text);
      if (!(n >= 0 && n <= 1)) fail(`--brief-share: expected a fraction from 0 to 1, found "${text}"`);
      return n;
    };
    await runCarryOver({
      ...d,
      data: given('data') ? resolve(values.data) : DEFAULT_CARRY_OVER_DATA,
      conversations: values.conversations === undefined ? [] : values.conversations.split(','),
      budgets: values.budgets === undefined ? (quick ? [1000, 2000] : d.budgets) : ints('budgets', values.budgets, 100),
      categories: categories as Array<1 | 2 | 3 | 4 | 5>,
      parts: parts as typeof d.parts,
      latencySizes: given('sizes') ? ints('sizes', values.sizes, 10) : quick ? [1000, 10_000] : d.latencySizes,
      jobs: values.jobs === undefined ? d.jobs : ints('jobs', values.jobs, 1)[0]!,
      briefShare: values['brief-share'] === undefined ? d.briefShare : share(values['brief-share']),
      quick,
      out: given('out') ? values.out : quick ? 'carry-over-quick' : d.out,
      ...(values.label !== undefined ? { label: values.label } : {}),
    });
    break;
  }
  case 'session-summaries': {
    const { runSessionSummaries } = await import('./session-summaries.js');
    const given = (flag: string): boolean => rest.some((a) => a === `--${flag}` || a.startsWith(`--${flag}=`));
    if (!/^[\w.-]+$/.test(values.out)) fail('--out: a file name without directories');
    await runSessionSummaries({
      quick: values.quick === true,
      out: given('out') ? values.out : values.quick === true ? 'session-summaries-quick' : 'session-summaries',
      ...(values.label !== undefined ? { label: values.label } : {}),
    });
    break;
  }
  case 'needle':
    await (await import('./needle.js')).runNeedleCli(rest);
    break;
  case 'adversarial': {
    const repeats = Number(values.repeats);
    if (!Number.isInteger(repeats) || repeats < 1 || repeats > 5) fail('--repeats: expected an integer from 1 to 5');
    await runAdversarialBench({ repeats, redact: !values['no-redact'] });
    break;
  }
  case 'purge-scrub':
    await (await import('./purge-scrub.js')).runPurgeScrubBench({ events: Number(values.events), ...(values['keep-store'] ? { keepStore: values['keep-store'] } : {}) });
    break;
  case 'embedder':
    await runEmbedderBench({ texts: Number(values.texts), loads: Number(values.loads) });
    break;
  case 'knowledge': await (await import('./knowledge.js')).runKnowledgeBench({ seed: Number(values.seed), quick: values.quick === true }); break;
  case 'consolidation': await (await import('./consolidation.js')).runConsolidationBench({ seed: Number(values.seed), quick: values.quick === true }); break;
  case 'artifact-lifecycle':
    await (await import('./artifact-lifecycle.js')).runArtifactLifecycleBench({ backends: values.backends!.split(',') as Array<'sqlite' | 'postgres'>, quick: values.quick === true });
    break;
  case 'granular': await (await import('./granular.js')).runGranularBench({ seed: Number(values.seed), quick: values.quick === true }); break;
  case 'bus-deref': await (await import('./bus-deref.js')).runBusDerefBench(); break;
  case 'dashboard': await (await import('./dashboard.js')).runDashboardBench(rest); break;
  case 'scale-vectors': {
    const { writeScaleVectors } = await import('./vectors-report.js');
    await writeScaleVectors({
      events: Number(values.events),
      queries: Number(values.queries),
      backends: values.backends.split(',') as Array<'sqlite' | 'postgres'>,
      ...(values['pg-events'] !== undefined ? { pgEvents: Number(values['pg-events']) } : {}),
      ...(values['keep-store'] !== undefined ? { keepStore: resolve(values['keep-store']) } : {}),
    });
    break;
  }
  case 'vectors-locomo': {
    const { writeVectorsLocomo } = await import('./vectors-report.js');
    await writeVectorsLocomo(resolve(values.data));
    break;
  }
  case 'recall-vectors': {
    const { runRecallVectors } = await import('./recall-vectors.js');
    await runRecallVectors({
      sizes: values.sizes.split(',').map(Number),
      queries: Number(values.queries),
      backends: values.backends.split(',') as Array<'sqlite' | 'postgres'>,
    });
    break;
  }
  case 'bus': {
    const { runBusBench } = await import('./bus.js');
    await runBusBench({
      engrams: Number(values.engrams),
      queries: Number(values.queries),
      backends: values.backends.split(',') as Array<'sqlite' | 'postgres'>,
      pgEngrams: Number(values['pg-engrams']),
    });
    break;
  }
  case 'scale': {
    const { runScale, SCALE_PARTS } = await import('./scale.js');
    const count = (field: string, text: string | undefined, fallback: number): number => {
      const n = Number(text ?? fallback);
      if (!Number.isInteger(n) || n < 1) fail(`--${field}: expected a positive integer, found "${text}"`);
      return n;
    };
    const given = (flag: string): boolean => rest.some((a) => a === `--${flag}` || a.startsWith(`--${flag}=`));
    const parts = (given('parts') ? values.parts : SCALE_PARTS.join(',')).split(',');
    const unknownParts = parts.filter((p) => !(SCALE_PARTS as readonly string[]).includes(p));
    if (unknownParts.length > 0) fail(`--parts: unknown "${unknownParts.join(', ')}"; expected ${SCALE_PARTS.join(', ')}`);
    await runScale({
      events: count('events', given('events') ? values.events : undefined, 1_000_000),
      pgEvents: count('pg-events', values['pg-events'], 100_000),
      backends: values.backends.split(',') as Array<'sqlite' | 'postgres'>,
      parts: parts as Array<(typeof SCALE_PARTS)[number]>,
      queries: count('queries', given('queries') ? values.queries : undefined, 25),
      reuse: values.reuse === true,
      httpSeconds: count('seconds', values.seconds, 20),
      transcript: resolve(values.transcript),
      cacheTurns: count('turns', values.turns, 300),
      ...(values['keep-store'] !== undefined ? { vectorStoreDir: resolve(values['keep-store']) } : {}),
    });
    break;
  }
  default:
    fail(name ? `unknown benchmark "${name}"` : 'name a benchmark');
}
