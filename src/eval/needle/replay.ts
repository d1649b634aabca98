/**
 * The replay harness (ENGRAM §11.1, Annex A.9): a recorded transcript, in any format `engram ingest` reads,
 * is replayed turn by turn through ingest, compaction and context assembly at a chosen window, and paused at
 * the compaction checkpoints to probe, in every condition of the synthetic benchmark. The needles are
 * derived mechanically from the transcript itself: exact strings of the five types (hashes, paths with line
 * numbers, error codes with addresses, flag strings, "because" clauses) that occur in its first part, each
 * asked for with the words found beside it on its line.
 */
import { createReadStream, statSync } from 'node:fs';
import { basename } from 'node:path';
import { performance } from 'node:perf_hooks';
import { defaultCacheMarks } from '../../context/context-engine.js';
import { EngramError } from '../../errors.js';
import type { EventInput } from '../../model/event.js';
import { SESSION_ID_PATTERN } from '../../model/ids.js';
import { detectFormat, parseImport, readTranscriptHead, type ImportFormat } from '../../memory/importers/index.js';
import { validateEventInput } from '../../memory/ingest.js';
import type { Embedder } from '../../providers/embedder.js';
import type { Tokenizer } from '../../providers/tokenizer.js';
import { CONDITIONS, summarizeCycle, type ConditionName, type CycleSummary } from './metrics.js';
import { findCandidates } from './needle-patterns.js';
import { NEEDLE_TYPES, type Needle, type NeedleTraceSource, type NeedleType, type Probe, type TraceTurn } from './needle-types.js';
import { cueTerms } from './reader.js';
import type { Summarizer } from './summarizer.js';
import { runTrace, type TraceStats } from './trace-runner.js';

export interface ReplayOptions {
  file: string;
  /** Default: detected, as `engram ingest` does. */
  format?: ImportFormat;
  /** The session to replay when the file holds several. Default: the one with the most events. */
  session?: string;
  windowTokens: number;
  cycles: number[];
  conditions?: readonly ConditionName[];
  embedder: Embedder | null;
  summarizer: Summarizer;
  tokenizer: Tokenizer;
  /** Needles are taken from this first share of the events. Default 0.3. */
  earlyShare?: number;
  /** Most needles. Default 30, spread over the types. */
  maxNeedles?: number;
  bootstrapResamples?: number;
}

export interface ReplayReport {
  benchmark: 'needle-replay';
  version: 1;
  createdAt: string;
  machine: string;
  durationMs: number;
  file: string;
  format: ImportFormat;
  sessionId: string;
  events: number;
  turns: number;
  config: { windowTokens: number; historyBudgetTokens: number; cycles: number[]; conditions: ConditionName[]; embedder: string | null; summarizer: string; isSummarizerSimulation: boolean };
  probes: Array<Probe & { value: string }>;
  /** Per condition, the figures at the last checkpoint it reached (null when it reached none). */
  conditions: Partial<Record<ConditionName, (Pick<CycleSummary, 'checkpoint' | 'probes'> & { zeroHop: number; oneHop: number; twoHop: number; falseRecall: number; precisionAt5: number | null }) | null>>;
  checkpoints: Partial<Record<ConditionName, CycleSummary[]>>;
  stats: TraceStats;
}

/** Words taken from beside a value to ask for it, from at most this far on its line. */
const QUESTION_WORDS = 8;
const LINE_REACH_CHARS = 300;
const MIN_QUESTION_WORDS = 2;

const ASK: Record<NeedleType, (words: string) => string> = {
  hash: (w) => `Which commit or hash was it, the one with: ${w}?`,
  path: (w) => `Which file and line was it, the one with: ${w}?`,
  error: (w) => `Which error and address was it, the one with: ${w}?`,
  parameter: (w) => `Which flag values were they, the ones with: ${w}?`,
  rationale: (w) => `What was the reason given for: ${w}?`,
};

export async function runNeedleReplay(options: ReplayOptions): Promise<ReplayReport> {
  const started = performance.now();
  const { format, sessionId, events } = await readTranscript(options);
  const turns = toTurns(events);
  const { needles, probes } = deriveNeedles(events, options.earlyShare ?? 0.3, options.maxNeedles ?? 30);
  if (needles.length === 0) {
    throw new EngramError('INVALID_INPUT', `${basename(options.file)}: no hash, path:line, error address, flag string or "because" clause with words beside it in its first part; nothing to probe`, { field: 'replay' });
  }
  const source: NeedleTraceSource = { name: basename(options.file), needles, probes, turns: () => turns };
  const conditions = (options.conditions ?? CONDITIONS).filter((c) => c !== 'engram' || options.embedder !== null);
  const historyBudgetTokens = defaultCacheMarks(options.windowTokens).highWaterTokens;
  const cycles = [...new Set(options.cycles)].sort((a, b) => a - b);
  const { records, stats } = await runTrace(source, {
    seed: 0,
    trace: 0,
    sessionId: SESSION_ID_PATTERN.test(sessionId) ? sessionId : 'replay',
    windowTokens: options.windowTokens,
    historyBudgetTokens,
    cycles,
    conditions,
    embedder: options.embedder,
    summarizer: options.summarizer,
    tokenizer: options.tokenizer,
    maxTurns: Number.MAX_SAFE_INTEGER,
  });
  const checkpoints: ReplayReport['checkpoints'] = {};
  const headline: ReplayReport['conditions'] = {};
  for (const condition of conditions) {
    const list = cycles.flatMap((cp) => {
      const of = records.filter((r) => r.condition === condition && r.checkpoint === cp);
      return of.length === 0 ? [] : [summarizeCycle(of, { clusterBy: 'probe', resamples: options.bootstrapResamples ?? 2000, seed: 7 })];
    });
    checkpoints[condition] = list;
    const s = list.at(-1);
    headline[condition] = s
      ? { checkpoint: s.checkpoint, probes: s.probes, zeroHop: s.zeroHop.value, oneHop: s.oneHop.value, twoHop: s.twoHop.value, falseRecall: s.falseRecall.value, precisionAt5: s.precisionAt5?.value ?? null }
      : null;
  }
  return {
    benchmark: 'needle-replay',
    version: 1,
    createdAt: new Date().toISOString(),
    machine: `Node ${process.version}, ${process.platform}/${process.arch}`,
    durationMs: Math.round(performance.now() - started),
    file: basename(options.file),
    format,
    sessionId,
    events: events.length,
    turns: turns.length,
    config: {
      windowTokens: options.windowTokens,
      historyBudgetTokens,
      cycles,
      conditions,
      embedder: options.embedder?.name ?? null,
      summarizer: options.summarizer.name,
      isSummarizerSimulation: options.summarizer.isSimulation,
    },
    probes: probes.map((p) => ({ ...p, value: needles.find((n) => n.id === p.needleId)!.value })),
    conditions: headline,
    checkpoints,
    stats,
  };
}

/** The transcript's events of one session (valid ones only), in order, with labels. */
async function readTranscript(options: ReplayOptions): Promise<{ format: ImportFormat; sessionId: string; events: Array<{ label: string; event: EventInput }> }> {
  let size: number;
  try {
    size = statSync(options.file).size;
  } catch {
    throw new EngramError('NOT_FOUND', `${options.file}: no such file`, { field: 'replay' });
  }
  const format = options.format ?? sniff(options.file);
  const bySession = new Map<string, EventInput[]>();
  const fallback = basename(options.file).replace(/\.[^.]+$/, '').replace(/[^\w.:@-]/g, '-') || 'replay';
  // Whole-JSON chats may hold a list of conversations, which the importer splits into `<base>:<n>` sessions.
  const importOptions = format === 'openai' || format === 'anthropic' ? { sessionId: fallback } : {};
  for await (const item of parseImport({ sizeBytes: size, stream: () => createReadStream(options.file) }, format, importOptions)) {
    if (item.type !== 'event') continue;
    try {
      validateEventInput(item.value.event);
    } catch {
      continue;
    }
    const id = item.value.sessionId ?? fallback;
    bySession.set(id, [...(bySession.get(id) ?? []), item.value.event]);
  }
  const chosen = options.session ?? [...bySession.entries()].sort((a, b) => b[1].length - a[1].length)[0]?.[0];
  const list = chosen === undefined ? undefined : bySession.get(chosen);
  if (!list || list.length === 0) {
    throw new EngramError('INVALID_INPUT', `${basename(options.file)}: ${options.session ? `no events of session ${options.session}` : 'no valid events'}`, { field: 'replay' });
  }
  return { format, sessionId: chosen!, events: list.map((event, i) => ({ label: `e${i + 1}`, event })) };
}

function sniff(file: string): ImportFormat {
  const format = detectFormat(readTranscriptHead(file).text);
  if (!format) throw new EngramError('INVALID_INPUT', `${basename(file)}: cannot tell the transcript format; pass --format`, { field: 'format' });
  return format;
}

/** Turns: a tool call and the results that follow it form one turn; every other event is a turn of its own. */
export function toTurns(events: ReadonlyArray<{ label: string; event: EventInput }>): TraceTurn[] {
  const turns: TraceTurn[] = [];
  for (const e of events) {
    const current = turns[turns.length - 1];
    const lastKind = current?.events[current.events.length - 1]?.event.kind;
    if (current && e.event.kind === 'tool_result' && (lastKind === 'tool_call' || lastKind === 'tool_result')) current.events.push(e);
    else turns.push({ phase: 'flood', events: [e] });
  }
  return turns;
}

/**
 * Needles from the first `earlyShare` of the events: each distinct string of a needle type with at least
 * two probe words beside it on its line, taken in order of first occurrence, round robin over the types.
 * The probe asks for it with those words; its relevant events are every event that contains it.
 */
export function deriveNeedles(events: ReadonlyArray<{ label: string; event: EventInput }>, earlyShare: number, maxNeedles: number): { needles: Needle[]; probes: Probe[] } {
  const early = events.slice(0, Math.max(1, Math.ceil(events.length * earlyShare)));
  const found = new Map<NeedleType, Array<{ value: string; words: string[] }>>(NEEDLE_TYPES.map((t) => [t, []]));
  const seen = new Set<string>();
  for (const { event } of early) {
    for (const type of NEEDLE_TYPES) {
      for (const c of findCandidates(event.content, type)) {
        if (seen.has(c.value)) continue;
        seen.add(c.value);
        const words = wordsBeside(event.content, c.index, c.value, type);
        if (words.length >= MIN_QUESTION_WORDS) found.get(type)!.push({ value: c.value, words });
      }
    }
  }
  const needles: Needle[] = [];
  const probes: Probe[] = [];
  for (let round = 0; needles.length < maxNeedles; round++) {
    const before = needles.length;
    for (const type of NEEDLE_TYPES) {
      const pick = found.get(type)![round];
      if (!pick || needles.length >= maxNeedles) continue;
      const question = ASK[type](pick.words.join(' '));
      if (question.includes(pick.value)) continue;
      const id = `n${needles.length + 1}`;
      needles.push({ id, type, value: pick.value, subject: pick.words.join(' '), episodeLabels: events.filter((e) => e.event.content.includes(pick.value)).map((e) => e.label) });
      probes.push({ id: `p${needles.length}`, needleId: id, type, question });
    }
    if (needles.length === before) break;
  }
  return { needles, probes };
}

/**
 * Up to QUESTION_WORDS content words nearest the value on its line and the line before (a stack frame's
 * error, a table's header), other candidates masked, in text order.
 */
function wordsBeside(text: string, index: number, value: string, type: NeedleType): string[] {
  const lineStart = text.lastIndexOf('\n', index) + 1;
  const previousStart = lineStart > 0 ? text.lastIndexOf('\n', lineStart - 2) + 1 : lineStart;
  const start = Math.max(previousStart, index - LINE_REACH_CHARS);
  const endAt = text.indexOf('\n', index + value.length);
  const end = Math.min(endAt < 0 ? text.length : endAt, index + value.length + LINE_REACH_CHARS);
  // A rationale is asked for with what precedes "because": the decision, not its reason.
  const sides = [
    { text: mask(text.slice(start, index)), after: false },
    ...(type === 'rationale' ? [] : [{ text: mask(text.slice(index + value.length, end)), after: true }]),
  ];
  const words: Array<{ w: string; distance: number; order: number }> = [];
  for (const side of sides) {
    for (const m of side.text.matchAll(/[\p{L}\p{N}_-]+/gu)) {
      const w = m[0];
      if (w.length < 3 || /^[\d_-]+$/.test(w) || cueTerms(w).length === 0) continue;
      const distance = side.after ? m.index : side.text.length - m.index;
      words.push({ w, distance, order: side.after ? 1e9 + m.index : m.index });
    }
  }
  return words
    .sort((a, b) => a.distance - b.distance)
    .slice(0, QUESTION_WORDS)
    .sort((a, b) => a.order - b.order)
    .map(({ w }) => w);
}

/** Blanks out every needle-like string, so a probe never quotes another value. */
function mask(text: string): string {
  let out = text;
  for (const t of NEEDLE_TYPES) for (const c of findCandidates(out, t)) out = out.slice(0, c.index) + ' '.repeat(c.end - c.index) + out.slice(c.end);
  return out;
}
