/**
 * The context engine under load: prefix reuse of context packs between turns (synthetic session and a real
 * Claude Code transcript), latency of pack() and compaction with 10K and 100K events in a session (steady
 * state and the cold first pack), and an ablation of the task-conditioned recall modifier's factors.
 * Writes bench/results/context.{md,json}.
 *
 *   npm run bench -- context [--parts prefix,sweep,latency,ablation] [--windows 8192,16384,32768] [--turns 300] [--seeds 7,1234]
 *                            [--transcript FILE] [--transcript-windows <--windows>] [--low-water-sweep 0.2,0.3,0.4,0.5,0.6]
 *                            [--sizes 10000,100000] [--steady-turns 200] [--latency-window 32768]
 *                            [--probes 14] [--seed 42] [--no-profile]
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { BlockKind } from '../src/context/assembly/blocks.js';
import { DEFAULT_BLOCK_ORDER } from '../src/context/assembly/blocks.js';
import type { AnthropicMessagesPayload } from '../src/context/assembly/formatters.js';
import { defaultCacheMarks, type PackOptions } from '../src/context/context-engine.js';
import { openEngram, type Engram } from '../src/engine.js';
import type { EventInput, EventRecord } from '../src/model/event.js';
import type { SessionId } from '../src/model/ids.js';
import { MODIFIER_FACTORS, type ModifierFactor } from '../src/memory/task-modifier.js';
import type { ProbeOutcome } from './lib/ablation-score.js';
import { scoreAblation } from './lib/ablation-score.js';
import { agentTrace } from './lib/agent-trace.js';
import { agentTurns, initialCard } from './lib/agent-turns.js';
import type { ColdPackOutput } from './lib/cold-pack-child.js';
import { summarizeCpuProfile, type CpuProfile, type ProfileSummary } from './lib/cpu-profile.js';
import { modifierTrace, type Probe } from './lib/modifier-trace.js';
import { anthropicCacheRead, anthropicUnits, divergenceBlock, textBlockSpans, tokenReuse, unsharedTokensByBlock, type AnthropicUnit } from './lib/prefix-metrics.js';
import { round, summarize } from './lib/stats.js';
import { writeContextReport } from './context-report.js';

export type ContextPart = 'prefix' | 'sweep' | 'latency' | 'ablation';
export const CONTEXT_PARTS: readonly ContextPart[] = ['prefix', 'sweep', 'latency', 'ablation'];

export interface ContextBenchArgs {
  parts: ContextPart[];
  windows: number[];
  turns: number;
  seed: number;
  /** Further seeds of the synthetic session, replayed (default order) at every window by the `prefix` part. Default none. */
  otherSeeds?: number[];
  /** The Claude Code transcript replayed at each of `transcriptWindows`. */
  transcript: string;
  transcriptWindows: number[];
  /** Low-water fractions replayed by the `sweep` part, at every window, on the synthetic session and the transcript. */
  lowWaterSweep: number[];
  sizes: number[];
  steadyTurns: number;
  latencyWindow: number;
  probesPerType: number;
  /** Profile the cold pack of the largest size in a second, identical run (`node --cpu-prof`). */
  profile: boolean;
}

/**
 * The stable system prompt of the replayed agent (~230 tokens): part of every pack's prefix, as in a real
 * agent. Reported separately so the reuse figures can be read without it.
 */
export const IDENTITY = `You are a senior software engineer working in a TypeScript monorepo through tools. You can run shell
commands (Bash), read files (Read), search the code (Grep) and edit files (Edit). Work in small verified steps:
state what you are about to do, run the tool, read its output, then decide the next step. Prefer reading the
code over guessing; quote file paths with line numbers when you refer to code. Keep changes minimal and
consistent with the surrounding style; never disable a failing test to make a build pass. When a command fails,
read the whole error before retrying, and do not retry the same command more than twice without changing
something. The task card below lists the goals, constraints, open loops and next actions of the current task:
keep it up to date when they change. Earlier parts of this conversation may have been evicted from the window;
markers show where, and the recall tool retrieves their exact content by query. Answer the user concisely and
say plainly when something is uncertain or when you could not verify it.`;

/** The alternative order measured against the default: the task card before the history (ENGRAM Annex A.2). */
export const TASK_FIRST_ORDER: readonly BlockKind[] = ['identity', 'codex', 'karma', 'markers', 'task_state', 'history', 'query'];
export const ORDERS = { default: DEFAULT_BLOCK_ORDER, 'task-first': TASK_FIRST_ORDER } as const;
export type OrderName = keyof typeof ORDERS;

/** One pack of a replay, compared with the pack before it. */
export interface TurnRecord {
  turn: number;
  /** This pack() ran a compaction first. */
  compacted: boolean;
  /** The task card changed since the previous pack. */
  cardChanged: boolean;
  packTokens: number;
  packMs: number;
  /** Events appended since the previous pack. */
  newEvents: number;
  markers: number;
  /** Leading markers of the previous pack that this pack repeats byte for byte, in place (all of them unless a compaction rewrote one). */
  markersKept: number;
  /** Markers of the previous pack. */
  previousMarkers: number;
  historyItems: number;
  /** History items the assembler left out (compaction should leave none: every event is in the window or under a marker). */
  historyDropped: number;
  /** `ratio`: shared / this pack's tokens (the reuse figure); `ofPrevious`: shared / the previous pack's tokens. */
  text: { sharedTokens: number; totalTokens: number; ratio: number; ofPrevious: number };
  /** `cacheReadTokens` of `cacheTotalTokens`: what the modelled Anthropic cache reads of this request (`anthropicCacheRead`). */
  anthropic: { sharedTokens: number; totalTokens: number; ratio: number; cacheReadRatio: number; cacheReadTokens: number; cacheTotalTokens: number; cacheOutcome: string };
  /** Tokens after the shared prefix, by block, in the text rendering. */
  unshared: Partial<Record<BlockKind, number>>;
  /** The block holding the first changed character; `history-tail` when it is right after the previous pack's history. */
  divergence: BlockKind | 'none' | 'history-tail';
}

export interface ReplaySummary {
  source: string;
  window: number;
  order: OrderName;
  /** The `lowWaterFraction` the replay passed to pack(); undefined = the engine's default. */
  lowWaterFraction?: number;
  packs: number;
  compactions: number;
  /** Compactions per measured turn. */
  compactionRate: number;
  avgPackTokens: number;
  avgBlockTokens: Partial<Record<BlockKind, number>>;
  turns: TurnRecord[];
}

interface PackState {
  text: string;
  lin: string;
  units: AnthropicUnit[];
  /** Where `</history>` starts in `text`: a pack that only appended history first differs from this one here. */
  historyCloseAt: number | undefined;
  /** Tokens of `text`. */
  textTokens: number;
  /** The markers block's lines (one marker each). */
  markerLines: string[];
}

/** Builds one pack, renders it both ways and measures it against the previous one. */
async function packAndMeasure(
  mem: Engram,
  session: string,
  options: PackOptions,
  prev: PackState | undefined,
  info: { turn: number; cardChanged: boolean; newEvents: number },
  blockTokens: Map<BlockKind, number[]>,
): Promise<{ state: PackState; record: TurnRecord | undefined; compacted: boolean }> {
  const t0 = performance.now();
  const sp = await mem.context.pack(session, options);
  const packMs = performance.now() - t0;
  const text = mem.context.format(sp.pack, 'text') as string;
  const payload = mem.context.format(sp.pack, 'anthropic') as AnthropicMessagesPayload;
  const units = anthropicUnits(payload);
  const lin = units.map((u) => u.text).join('\n');
  const spans = textBlockSpans(sp.pack);
  if ((spans.at(-1)?.end ?? 0) !== text.length) throw new Error('textBlockSpans no longer matches formatText: update bench/lib/prefix-metrics.ts');
  for (const b of sp.pack.blocks) blockTokens.set(b.kind, [...(blockTokens.get(b.kind) ?? []), b.tokens]);
  const historySpan = spans.find((s) => s.kind === 'history');
  const compacted = sp.compaction !== undefined;
  const historyCloseAt = historySpan ? historySpan.end - '</history>'.length : undefined;
  const markersText = sp.pack.blocks.find((b) => b.kind === 'markers')?.text ?? '';
  const markerLines = markersText === '' ? [] : markersText.split('\n');
  if (!prev) return { state: { text, lin, units, historyCloseAt, textTokens: mem.tokenizer.count(text), markerLines }, record: undefined, compacted };
  const t = tokenReuse(prev.text, text, mem.tokenizer);
  const state: PackState = { text, lin, units, historyCloseAt, textTokens: t.totalTokens, markerLines };
  let markersKept = 0;
  while (markersKept < prev.markerLines.length && prev.markerLines[markersKept] === markerLines[markersKept]) markersKept++;
  const a = tokenReuse(prev.lin, lin, mem.tokenizer);
  const cache = anthropicCacheRead(prev.units, units, mem.tokenizer);
  const history = sp.pack.blocks.find((b) => b.kind === 'history');
  const record: TurnRecord = {
    turn: info.turn,
    compacted,
    cardChanged: info.cardChanged,
    packTokens: sp.pack.totalTokens,
    packMs: round(packMs, 2),
    newEvents: info.newEvents,
    markers: sp.pack.blocks.find((b) => b.kind === 'markers')?.items ?? 0,
    markersKept,
    previousMarkers: prev.markerLines.length,
    historyItems: history?.items ?? 0,
    historyDropped: history?.droppedItems ?? 0,
    text: { sharedTokens: t.sharedTokens, totalTokens: t.totalTokens, ratio: round(t.ratio, 4), ofPrevious: round(t.sharedTokens / Math.max(1, prev.textTokens), 4) },
    anthropic: {
      sharedTokens: a.sharedTokens,
      totalTokens: a.totalTokens,
      ratio: round(a.ratio, 4),
      cacheReadRatio: round(cache.ratio, 4),
      cacheReadTokens: cache.readTokens,
      cacheTotalTokens: cache.totalTokens,
      cacheOutcome: cache.outcome,
    },
    unshared: unsharedTokensByBlock(text, spans, t.sharedChars, mem.tokenizer),
    divergence: t.sharedChars === prev.historyCloseAt ? 'history-tail' : divergenceBlock(spans, t.sharedChars),
  };
  return { state, record, compacted };
}

function summarizeReplay(
  source: string,
  window: number,
  order: OrderName,
  lowWaterFraction: number | undefined,
  records: TurnRecord[],
  packs: number,
  compactions: number,
  blockTokens: Map<BlockKind, number[]>,
): ReplaySummary {
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  return {
    source,
    window,
    order,
    ...(lowWaterFraction !== undefined ? { lowWaterFraction } : {}),
    packs,
    compactions,
    compactionRate: round(records.filter((r) => r.compacted).length / Math.max(1, records.length), 4),
    avgPackTokens: round(mean(records.map((r) => r.packTokens)), 0),
    avgBlockTokens: Object.fromEntries([...blockTokens].map(([k, v]) => [k, round(mean(v), 0)])),
    turns: records,
  };
}

/** The synthetic session: pack for the user's message, then append the turn, then maybe update the card. */
export async function replaySynthetic(mem: Engram, window: number, order: OrderName, args: ContextBenchArgs, lowWaterFraction?: number): Promise<ReplaySummary> {
  const session = `prefix-${args.seed}-${window}-${order}-${lowWaterFraction ?? 'default'}`;
  await mem.taskStates.update(session, initialCard(args.seed));
  const records: TurnRecord[] = [];
  const blockTokens = new Map<BlockKind, number[]>();
  let prev: PackState | undefined;
  let cardChanged = true;
  let newEvents = 0;
  let compactions = 0;
  for (const turn of agentTurns(args.turns, { seed: args.seed })) {
    const options: PackOptions = {
      windowTokens: window,
      identity: IDENTITY,
      query: turn.userMessage,
      order: ORDERS[order],
      ...(lowWaterFraction !== undefined ? { lowWaterFraction } : {}),
    };
    const r = await packAndMeasure(mem, session, options, prev, { turn: turn.index, cardChanged, newEvents }, blockTokens);
    if (r.record) records.push(r.record);
    if (r.compacted) compactions++;
    prev = r.state;
    await mem.append(session, turn.events);
    newEvents = turn.events.length;
    cardChanged = turn.cardUpdate !== undefined;
    if (turn.cardUpdate) await mem.taskStates.update(session, turn.cardUpdate);
  }
  return summarizeReplay(args.seed === 42 ? 'synthetic' : `synthetic seed ${args.seed}`, window, order, lowWaterFraction, records, args.turns, compactions, blockTokens);
}

/** An imported event as an input again: artifacts by their full text, so ingest builds the same preview. */
async function asInput(mem: Engram, e: EventRecord): Promise<EventInput> {
  const content = e.artifact ? await mem.readArtifactText(e.artifact.id) : e.content;
  return {
    kind: e.kind as EventInput['kind'],
    content,
    ts: e.ts,
    tags: e.tags,
    ...(e.toolName ? { toolName: e.toolName } : {}),
    ...(e.toolCallId ? { toolCallId: e.toolCallId } : {}),
    ...(e.taskId ? { taskId: e.taskId } : {}),
    ...(e.meta ? { meta: e.meta } : {}),
  };
}

export type TranscriptMode = 'user-turns' | 'model-calls';

/**
 * Replays an imported transcript into a new session. `user-turns`: a turn starts at each user message typed
 * by the person (Claude Code's `isMeta` expansions of a slash command belong to the turn of the command);
 * the pack's query is that message, then the turn's events are appended. `model-calls`: a pack before every
 * run of assistant output (text or tool calls), i.e. every time the agent calls the model, with the new
 * user message or tool results already in the history and an empty query.
 */
export async function replayTranscript(mem: Engram, events: EventInput[], window: number, mode: TranscriptMode, lowWaterFraction?: number): Promise<ReplaySummary> {
  const session = `transcript-${mode}-${window}-${lowWaterFraction ?? 'default'}`;
  const isAssistantSide = (e: EventInput): boolean => e.kind === 'assistant' || e.kind === 'tool_call';
  const startsTurn = (i: number): boolean => {
    const e = events[i]!;
    if (mode === 'user-turns') return e.kind === 'user' && e.meta?.isMeta !== true;
    return isAssistantSide(e) && (i === 0 || !isAssistantSide(events[i - 1]!));
  };
  const starts = events.flatMap((_, i) => (startsTurn(i) ? [i] : []));
  const records: TurnRecord[] = [];
  const blockTokens = new Map<BlockKind, number[]>();
  let prev: PackState | undefined;
  let compactions = 0;
  let appended = 0;
  let lastPackAt = 0;
  for (const [n, start] of starts.entries()) {
    if (start > appended) {
      await mem.append(session, events.slice(appended, start));
      appended = start;
    }
    const query = mode === 'user-turns' ? events[start]!.content : '';
    const options: PackOptions = { windowTokens: window, identity: IDENTITY, query, ...(lowWaterFraction !== undefined ? { lowWaterFraction } : {}) };
    const r = await packAndMeasure(mem, session, options, prev, { turn: n + 1, cardChanged: false, newEvents: start - lastPackAt }, blockTokens);
    lastPackAt = start;
    if (r.record) records.push(r.record);
    if (r.compacted) compactions++;
    prev = r.state;
  }
  return summarizeReplay(`transcript ${mode}`, window, 'default', lowWaterFraction, records, starts.length, compactions, blockTokens);
}

/** Imports the transcript into its own session and returns its events as inputs, to replay into others. */
export async function loadTranscript(mem: Engram, file: string): Promise<{ events: EventInput[]; info: TranscriptInfo }> {
  const report = await mem.importFile({ path: file });
  const imported = (await mem.listEvents({ sessionId: report.sessions[0]!.id as SessionId })).filter((e) => e.kind !== 'task_state');
  const events = await Promise.all(imported.map((e) => asInput(mem, e)));
  const kinds: Record<string, number> = {};
  for (const e of events) kinds[e.kind] = (kinds[e.kind] ?? 0) + 1;
  const info: TranscriptInfo = {
    file: file.split('/').at(-1)!,
    events: events.length,
    kinds,
    tokens: events.reduce((sum, e) => sum + mem.tokenizer.count(e.content), 0),
  };
  return { events, info };
}

async function runPrefix(args: ContextBenchArgs): Promise<{ synthetic: ReplaySummary[]; otherSeeds: ReplaySummary[]; transcript: ReplaySummary[]; transcriptInfo: TranscriptInfo }> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-ctx-prefix-'));
  try {
    const mem = await openEngram({ db: join(dir, 'prefix.db') });
    const synthetic: ReplaySummary[] = [];
    for (const window of args.windows) {
      for (const order of Object.keys(ORDERS) as OrderName[]) {
        const t = performance.now();
        synthetic.push(await replaySynthetic(mem, window, order, args));
        console.error(`prefix: synthetic ${window} ${order} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
      }
    }
    // The same session with other seeds, default order only: is what the first seed shows a property of the policy?
    const otherSeeds: ReplaySummary[] = [];
    for (const seed of args.otherSeeds ?? []) {
      for (const window of args.windows) {
        const t = performance.now();
        otherSeeds.push(await replaySynthetic(mem, window, 'default', { ...args, seed }));
        console.error(`prefix: synthetic seed ${seed} ${window} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
      }
    }
    const { events, info: transcriptInfo } = await loadTranscript(mem, args.transcript);
    const transcript: ReplaySummary[] = [];
    for (const window of args.transcriptWindows) {
      for (const mode of ['user-turns', 'model-calls'] as const) transcript.push(await replayTranscript(mem, events, window, mode));
    }
    await mem.close();
    return { synthetic, otherSeeds, transcript, transcriptInfo };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One replay of the low-water sweep, summarized (the per-turn rows stay out of the JSON). */
export interface SweepRow {
  source: string;
  window: number;
  lowWaterFraction: number;
  packs: number;
  compactions: number;
  /** Mean over all compared packs of the modelled Anthropic cache read (compaction turns count as what they read). */
  cacheReadAllTurns: number;
  /** The same, token-weighted: read tokens over all tokens sent. */
  cacheReadTokenWeighted: number;
  /** Mean over the packs that did not compact. */
  cacheReadWithoutCompaction: number;
  /** Tokens per pack the cache does not read (what is processed, and billed, at the full input price). */
  avgUncachedTokens: number;
  avgPackTokens: number;
}

/** Replays the synthetic session (default order) and the transcript's model calls at each low-water fraction and window. */
async function runSweep(args: ContextBenchArgs): Promise<SweepRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-ctx-sweep-'));
  try {
    const mem = await openEngram({ db: join(dir, 'sweep.db') });
    const { events } = await loadTranscript(mem, args.transcript);
    const rows: SweepRow[] = [];
    for (const fraction of args.lowWaterSweep) {
      const t = performance.now();
      for (const window of args.windows) rows.push(sweepRow(await replaySynthetic(mem, window, 'default', args, fraction), fraction));
      for (const window of args.transcriptWindows) rows.push(sweepRow(await replayTranscript(mem, events, window, 'model-calls', fraction), fraction));
      console.error(`sweep: low water ${fraction} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }
    await mem.close();
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function sweepRow(s: ReplaySummary, lowWaterFraction: number): SweepRow {
  const calm = s.turns.filter((t) => !t.compacted);
  return {
    source: s.source,
    window: s.window,
    lowWaterFraction,
    packs: s.turns.length,
    compactions: s.turns.filter((t) => t.compacted).length,
    cacheReadAllTurns: round(cacheReadMean(s.turns), 4),
    cacheReadTokenWeighted: round(cacheReadTokenWeighted(s.turns), 4),
    cacheReadWithoutCompaction: round(cacheReadMean(calm), 4),
    avgUncachedTokens: round(uncachedTokensMean(s.turns), 0),
    avgPackTokens: s.avgPackTokens,
  };
}

/** Mean of the per-pack modelled cache read (each pack counts once). */
export function cacheReadMean(turns: readonly TurnRecord[]): number {
  return turns.length === 0 ? Number.NaN : turns.reduce((sum, t) => sum + t.anthropic.cacheReadRatio, 0) / turns.length;
}

/** Mean tokens per pack that the cache does not read. */
export function uncachedTokensMean(turns: readonly TurnRecord[]): number {
  return turns.length === 0 ? Number.NaN : turns.reduce((sum, t) => sum + t.anthropic.cacheTotalTokens - t.anthropic.cacheReadTokens, 0) / turns.length;
}

/** Tokens read from the cache over tokens sent, summed over the packs. */
export function cacheReadTokenWeighted(turns: readonly TurnRecord[]): number {
  const total = turns.reduce((sum, t) => sum + t.anthropic.cacheTotalTokens, 0);
  return total === 0 ? Number.NaN : turns.reduce((sum, t) => sum + t.anthropic.cacheReadTokens, 0) / total;
}

export interface TranscriptInfo {
  file: string;
  events: number;
  kinds: Record<string, number>;
  tokens: number;
}

// --- latency -----------------------------------------------------------------------------------------------

type LatencySummary = ReturnType<typeof roundSummary>;

export interface LatencyResult {
  events: number;
  window: number;
  ingestSec: number;
  cold: ColdPackOutput;
  profile?: ProfileSummary;
  steady: {
    turns: number;
    pack: LatencySummary;
    /** compact() calls that found the cache under high water (every pack() pays one of these first). */
    compactNoop: LatencySummary;
    /** compact() calls that compacted. */
    compactRan: LatencySummary;
    avgEvictedPerCompaction: number;
    /** Cache tokens after each compaction, on average, against the marks it compacts between. */
    avgTokensAfterCompaction: number;
    highWaterTokens: number;
    lowWaterTokens: number;
  };
}

const INGEST_BATCH = 500;
const BIG_SESSION = 'big';

async function runLatency(args: ContextBenchArgs): Promise<LatencyResult[]> {
  const out: LatencyResult[] = [];
  for (const size of args.sizes) {
    const dir = mkdtempSync(join(tmpdir(), 'engram-ctx-latency-'));
    try {
      const location = { db: join(dir, 'latency.db') };
      let mem = await openEngram(location);
      const t = performance.now();
      let batch: EventInput[] = [];
      for (const e of agentTrace(size, { seed: args.seed, sessions: 1 })) {
        batch.push(e.event);
        if (batch.length >= INGEST_BATCH) {
          await mem.append(BIG_SESSION, batch);
          batch = [];
        }
      }
      if (batch.length > 0) await mem.append(BIG_SESSION, batch);
      const ingestSec = (performance.now() - t) / 1000;
      await mem.close();
      console.error(`latency: ${size} events ingested in ${ingestSec.toFixed(1)} s`);

      // The profiled run works on a copy, taken before the timed run compacts the session.
      const isProfiled = args.profile && size === Math.max(...args.sizes);
      const copy = join(dir, 'copy');
      if (isProfiled) {
        mkdirSync(copy);
        for (const suffix of ['', '-wal', '-shm']) if (existsSync(location.db + suffix)) copyFileSync(location.db + suffix, join(copy, `latency.db${suffix}`));
      }
      const cold = coldPack(location, args.latencyWindow, undefined);
      console.error(`latency: cold pack of ${size} events: ${JSON.stringify(cold)}`);
      let profile: ProfileSummary | undefined;
      if (isProfiled) {
        const profDir = join(dir, 'prof');
        coldPack({ db: join(copy, 'latency.db') }, args.latencyWindow, profDir);
        profile = mainThreadProfile(profDir);
      }

      mem = await openEngram(location);
      // Load the tokenizer's tables (~190 ms, once per process) before anything is timed.
      mem.tokenizer.count('warm up');
      const options = { windowTokens: args.latencyWindow, identity: IDENTITY };
      const packMs: number[] = [];
      const noopMs: number[] = [];
      const ranMs: number[] = [];
      let evicted = 0;
      let tokensAfter = 0;
      const startMs = Date.parse('2026-06-01T00:00:00Z');
      for (const turn of agentTurns(args.steadyTurns, { seed: args.seed + 1, startMs })) {
        await mem.append(BIG_SESSION, turn.events);
        if (turn.cardUpdate) await mem.taskStates.update(BIG_SESSION, turn.cardUpdate);
        const c0 = performance.now();
        const c = await mem.context.compact(BIG_SESSION, options);
        const c1 = performance.now();
        (c.shouldCompact ? ranMs : noopMs).push(c1 - c0);
        if (c.shouldCompact) {
          evicted += c.evicted.length;
          tokensAfter += c.tokensAfter;
        }
        await mem.context.pack(BIG_SESSION, { ...options, query: turn.userMessage });
        packMs.push(performance.now() - c1);
      }
      const identityTokens = mem.tokenizer.count(IDENTITY);
      await mem.close();
      out.push({
        events: size,
        window: args.latencyWindow,
        ingestSec: round(ingestSec, 1),
        cold,
        ...(profile ? { profile } : {}),
        steady: {
          turns: args.steadyTurns,
          pack: roundSummary(packMs),
          compactNoop: roundSummary(noopMs),
          compactRan: roundSummary(ranMs),
          avgEvictedPerCompaction: round(evicted / Math.max(1, ranMs.length), 1),
          avgTokensAfterCompaction: Math.round(tokensAfter / Math.max(1, ranMs.length)),
          // The marks the engine compacts between for this window and identity (no codex, no karma).
          ...defaultCacheMarks(args.latencyWindow, { identity: identityTokens }),
        },
      });
      console.error(`latency: ${JSON.stringify({ ...out.at(-1)!, profile: undefined })}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return out;
}

function coldPack(location: { db: string }, window: number, profDir: string | undefined): ColdPackOutput {
  const flags = profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [];
  const run = spawnSync(process.execPath, [...flags, '--import', 'tsx', 'bench/lib/cold-pack-child.ts', JSON.stringify(location), BIG_SESSION, String(window)], {
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`cold pack child failed (${run.status}): ${run.stderr}`);
  const output = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as ColdPackOutput;
  return { ...output, packMs: round(output.packMs, 0) };
}

/** The child writes one profile per thread (main, tsx loader, WAL checkpoint worker): the busiest is the main thread. */
function mainThreadProfile(profDir: string): ProfileSummary {
  const summaries = readdirSync(profDir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => summarizeCpuProfile(JSON.parse(readFileSync(join(profDir, f), 'utf8')) as CpuProfile, 12))
    .map((s) => ({ s, busyMs: s.totalMs - (s.files.find((f) => f.name === '(idle)')?.selfMs ?? 0) }));
  summaries.sort((a, b) => b.busyMs - a.busyMs);
  if (summaries.length === 0) throw new Error(`no CPU profile in ${profDir}`);
  return summaries[0]!.s;
}

function roundSummary(samples: number[]) {
  if (samples.length === 0) return { p50: 0, p95: 0, p99: 0, max: 0, mean: 0, n: 0 };
  const s = summarize(samples);
  return { p50: round(s.p50, 2), p95: round(s.p95, 2), p99: round(s.p99, 2), max: round(Math.max(...samples), 2), mean: round(s.mean, 2), n: s.n };
}

// --- ablation ----------------------------------------------------------------------------------------------

export interface AblationResult {
  probes: number;
  events: number;
  conditions: Array<{ name: string; disable: ModifierFactor[] }>;
  table: ReturnType<typeof scoreAblation>;
  /** Per probe and condition: rank of the expected event in the top k (0 = not there). For inspection. */
  ranks: Array<{ probe: string; type: string; query: string; ranks: Record<string, number> }>;
}

export const ABLATION_K = 5;

async function runAblation(args: ContextBenchArgs): Promise<AblationResult> {
  const conditions = [
    { name: 'all on', disable: [] as ModifierFactor[] },
    ...MODIFIER_FACTORS.map((f) => ({ name: `-${f}`, disable: [f] })),
    { name: 'all off', disable: [...MODIFIER_FACTORS] },
  ];
  const dir = mkdtempSync(join(tmpdir(), 'engram-ctx-ablation-'));
  try {
    const mem = await openEngram({ db: join(dir, 'ablation.db') });
    const ids = new Map<string, string>();
    const outcomes: ProbeOutcome[] = [];
    const ranks: AblationResult['ranks'] = [];
    let events = 0;
    const probes: Probe[] = [];
    for (const step of modifierTrace({ seed: args.seed, probesPerType: args.probesPerType })) {
      if (step.type === 'append') {
        const inputs = step.events.map((l) => {
          if (!l.supersedesLabel) return l.event;
          const target = ids.get(l.supersedesLabel);
          if (!target) throw new Error(`supersedes label ${l.supersedesLabel} was not appended before`);
          return { ...l.event, supersedes: target };
        });
        const outcomesOfAppend = await mem.append(step.sessionId, inputs);
        step.events.forEach((l, i) => {
          if (l.label) ids.set(l.label, outcomesOfAppend[i]!.record.id);
        });
        events += inputs.length;
      } else if (step.type === 'card') {
        await mem.taskStates.update(step.sessionId, step.card, { replace: true });
      } else {
        const probe = step.probe;
        probes.push(probe);
        const expectedId = ids.get(probe.expectedLabel);
        if (!expectedId) throw new Error(`probe ${probe.id}: expected label ${probe.expectedLabel} was not appended before it`);
        const row: Record<string, number> = {};
        for (const c of conditions) {
          const result = await mem.recall(probe.query, {
            k: ABLATION_K,
            taskState: probe.card,
            askingSessionId: probe.sessionId,
            logRecall: false,
            ...(c.disable.length > 0 ? { disableFactors: c.disable } : {}),
          });
          const rankedIds = result.hits.map((h) => h.eventId);
          outcomes.push({ probeId: probe.id, type: probe.type, condition: c.name, rankedIds, expectedId });
          row[c.name] = rankedIds.indexOf(expectedId) + 1;
        }
        ranks.push({ probe: probe.id, type: probe.type, query: probe.query, ranks: row });
      }
    }
    await mem.close();
    return { probes: probes.length, events, conditions, table: scoreAblation(outcomes, { k: ABLATION_K, baseline: 'all on' }), ranks };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// --- entry -------------------------------------------------------------------------------------------------

export async function runContextBench(args: ContextBenchArgs): Promise<void> {
  if (!existsSync(args.transcript) || !statSync(args.transcript).isFile()) throw new Error(`--transcript: no file ${args.transcript}`);
  const started = performance.now();
  const prefix = args.parts.includes('prefix') ? await runPrefix(args) : undefined;
  const sweep = args.parts.includes('sweep') ? await runSweep(args) : undefined;
  const latency = args.parts.includes('latency') ? await runLatency(args) : undefined;
  const ablation = args.parts.includes('ablation') ? await runAblation(args) : undefined;
  writeContextReport({ args, prefix, sweep, latency, ablation, elapsedSec: round((performance.now() - started) / 1000, 0) });
}
