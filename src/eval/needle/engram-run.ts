/**
 * The Engram condition: one trace appended to a real store (SQLite in a temporary directory), the window
 * compacted by the context engine after every turn exactly as `pack()` would before the next model call,
 * and probes answered from the push pack (0-hop), one `recall` with the probe (1-hop) and the 2-hop rule
 * (second-hop.ts). Full-text-only and hybrid recall are probed on the same store at the same moment.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { collapseIntoRecalled, type RecalledEvidence } from '../../consolidate/summary-collapse.js';
import { SummaryReader } from '../../consolidate/summary-reader.js';
import { openEngram, type Engram } from '../../engine.js';
import { EngramError } from '../../errors.js';
import type { Retriever } from '../../memory/recall.js';
import type { Embedder } from '../../providers/embedder.js';
import { precisionAtK } from './metrics.js';
import type { HopOutcome, Needle, Probe, TraceTurn } from './needle-types.js';
import { isPresent, readAnswer } from './reader.js';
import { secondHop } from './second-hop.js';

/** Budget of one pull (a recall, or the second hop): the product's default recall budget. */
export const PULL_BUDGET_TOKENS = 2000;
/** Depth of the ranking precision@k is measured on. */
export const PRECISION_DEPTH = 20;

export interface EngramProbeOutcome {
  probeId: string;
  retriever: Retriever;
  hops: HopOutcome[];
  /** Relevant events among the top 5, 10, 20 of the ranking, over k (standard precision@k). */
  precision: { at5: number; at10: number; at20: number };
  /** Relevant events in the episode: the best precision@k is min(k, relevant) / k. */
  relevantEvents: number;
  /** The first recall's wall time. */
  recallMs: number;
  /** Hits in the top 5 outside the episode: from another needle's episode, or from the rest of the trace. */
  top5Misses: { otherEpisode: number; other: number };
  /** The first recall's top hits, for the report's list of failed probes. */
  firstHits: Array<{ turn: number; kind: string; isRelevant: boolean }>;
}

export interface EngramRunOptions {
  windowTokens: number;
  /** Binds hybrid recall; without one only full-text is probed. */
  embedder: Embedder | null;
  /** Retrievers probed. Default: `fts`, plus `hybrid` with an embedder. */
  retrievers?: Retriever[];
  /**
   * Consolidation on: before each checkpoint's probes the session is consolidated (deterministic level, the gate
   * not asked, summaries embedded with the embedder), and each pull also reads the summaries that match the probe
   * (as MCP `recall` with `summaries: true` returns them: lines repeating a recalled event collapsed into it), so
   * a look-alike value in a summary can cost a needle.
   */
  consolidate?: boolean;
}

/** Summaries read with each pull when consolidation is on (MCP recall's MCP_SUMMARY_HITS). */
export const SUMMARY_HITS_PER_PULL = 3;

export class EngramRun {
  /** Compaction cycles so far. */
  compactions = 0;
  /** Tokens of the window (history + markers) after the last turn. */
  windowTokens = 0;
  /** Wall times of the per-turn compaction calls (ms). */
  readonly compactMs: number[] = [];
  /** With consolidation on: summaries made, and pulls (per retriever) that read at least one summary, of all pulls. */
  readonly consolidation = { summaries: 0, pullsWithSummaries: 0, pulls: 0 };
  private readonly ids = new Map<string, string>();

  private constructor(
    private readonly mem: Engram,
    private readonly dir: string,
    readonly sessionId: string,
    private readonly options: EngramRunOptions,
  ) {}

  static async open(sessionId: string, options: EngramRunOptions): Promise<EngramRun> {
    const dir = mkdtempSync(join(tmpdir(), 'engram-needle-'));
    try {
      const mem = await openEngram({
        db: join(dir, 'needle.db'),
        ...(options.embedder ? { embedder: borrow(options.embedder), indexing: { background: false } } : {}),
      });
      return new EngramRun(mem, dir, sessionId, options);
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  get retrievers(): Retriever[] {
    return this.options.retrievers ?? (this.options.embedder ? ['hybrid', 'fts'] : ['fts']);
  }

  /** Appends a turn, embeds it (events are evictable once indexed), compacts. Returns the cycles run. */
  async append(turn: TraceTurn): Promise<number> {
    const outcomes = await this.mem.append(this.sessionId, turn.events.map((e) => e.event));
    outcomes.forEach((o, i) => this.ids.set(turn.events[i]!.label, o.record.id));
    if (this.mem.indexer) {
      const indexed = await this.mem.indexer.drain();
      if (indexed.failed > 0) throw new EngramError('PROVIDER_ERROR', `embedder: ${indexed.failed} events failed to embed (${this.mem.indexer.error ?? 'no reason given'})`);
    }
    const t0 = performance.now();
    const result = await this.mem.context.compact(this.sessionId, { windowTokens: this.options.windowTokens });
    this.compactMs.push(performance.now() - t0);
    this.windowTokens = result.shouldCompact ? result.tokensAfter : result.tokensBefore;
    if (result.shouldCompact) this.compactions++;
    return result.shouldCompact ? 1 : 0;
  }

  /** The event id a trace label was stored under. */
  eventId(label: string): string | undefined {
    return this.ids.get(label);
  }

  /** Answers every probe now: 0-hop from the pack, then 1-hop and 2-hop per retriever. */
  async probe(needles: readonly Needle[], probes: readonly Probe[]): Promise<{ outcomes: EngramProbeOutcome[]; packTokens: number }> {
    const { pack } = await this.mem.context.pack(this.sessionId, { windowTokens: this.options.windowTokens });
    const packText = this.mem.context.format(pack, 'text') as string;
    const outcomes: EngramProbeOutcome[] = [];
    if (this.options.consolidate) {
      this.consolidation.summaries += (await this.mem.consolidator().consolidateSession(this.sessionId, { backfill: true })).summaries.length;
      if (this.mem.indexer) await this.mem.indexer.drain();
    }
    for (const probe of probes) {
      const needle = needles.find((n) => n.id === probe.needleId)!;
      const hop = (segments: string[], tokens: number): HopOutcome => {
        const { answer } = readAnswer(probe.type, probe.question, segments);
        return { answer, isExact: answer === needle.value, isPresent: isPresent(needle.value, segments), tokens };
      };
      const zero = hop([packText], pack.totalTokens);
      const relevant = new Set(needle.episodeLabels.flatMap((l) => this.ids.get(l) ?? []));
      for (const retriever of this.retrievers) {
        const options = { sessionIds: [this.sessionId], retriever, logRecall: false };
        const t0 = performance.now();
        const first = await this.mem.recall(probe.question, { ...options, budgetTokens: PULL_BUDGET_TOKENS });
        const recallMs = performance.now() - t0;
        const summaries = this.options.consolidate ? await this.summaryText(probe.question, retriever, first.hits) : [];
        const one = hop([first.text, ...summaries, packText], first.usedTokens);
        let two = one;
        if (!one.isExact) {
          const second = await secondHop(this.mem, this.sessionId, probe.question, first, { retriever, budgetTokens: PULL_BUDGET_TOKENS });
          two = hop([second.text, first.text, ...summaries, packText], second.tokens);
        }
        const ranking = await this.mem.recall(probe.question, { ...options, k: PRECISION_DEPTH, budgetTokens: 1_000_000 });
        const ranked = ranking.hits.map((h) => h.eventId);
        const at = (k: number): number => precisionAtK(ranked, relevant, k);
        const episodes = new Set(needles.filter((n) => n.id !== needle.id).flatMap((n) => n.episodeLabels.flatMap((l) => this.ids.get(l) ?? [])));
        const misses = ranked.slice(0, 5).filter((id) => !relevant.has(id));
        const otherEpisode = misses.filter((id) => episodes.has(id)).length;
        outcomes.push({
          probeId: probe.id,
          retriever,
          hops: [zero, one, two],
          precision: { at5: at(5), at10: at(10), at20: at(20) },
          relevantEvents: relevant.size,
          top5Misses: { otherEpisode, other: misses.length - otherEpisode },
          recallMs,
          firstHits: first.hits.slice(0, 3).map((h) => ({ turn: h.turn, kind: h.toolName ? `${h.kind} ${h.toolName}` : h.kind, isRelevant: relevant.has(h.eventId) })),
        });
      }
    }
    return { outcomes, packTokens: pack.totalTokens };
  }

  /**
   * The summaries matching the probe (full-text only for the `fts` retriever), one segment, or none; lines that
   * repeat the recalled events verbatim are collapsed into them, as MCP and HTTP recall do (summary-collapse.ts).
   */
  private async summaryText(question: string, retriever: Retriever, recalled: readonly RecalledEvidence[]): Promise<string[]> {
    const reader = retriever === 'fts' ? new SummaryReader(this.mem.store) : this.mem.summaries;
    const hits = await reader.search(question, { limit: SUMMARY_HITS_PER_PULL });
    this.consolidation.pulls++;
    if (hits.length > 0) this.consolidation.pullsWithSummaries++;
    return hits.length === 0 ? [] : [hits.map((h) => collapseIntoRecalled(h.summary.text, recalled).text).join('\n\n')];
  }

  async close(): Promise<void> {
    try {
      await this.mem.close();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

/** The caller's embedder without `close`: the engine closes its embedder, and this one is shared by every trace. */
function borrow(embedder: Embedder): Embedder {
  return { name: embedder.name, dimensions: embedder.dimensions, embed: (texts) => embedder.embed(texts) };
}
