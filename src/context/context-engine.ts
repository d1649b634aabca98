import { EngramError, isEngramError } from '../errors.js';
import type { EventRecord } from '../model/event.js';
import type { EventId, SessionId } from '../model/ids.js';
import type { TaskState } from '../model/task-state.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import type { StorageBackend } from '../store/backend.js';
import type { AssembleOptions, CodexDocument, ContextPack, HistoryItem, KarmaItem } from './assembly/context-pack.js';
import { assemblePack, HISTORY_SEPARATOR, karmaBlockTokens, renderHistoryItem } from './assembly/assembler.js';
import type { BlockKind, PackBudgets, StableBlock } from './assembly/blocks.js';
import { defaultBudgets, lendUnusedBudget } from './assembly/blocks.js';
import { decideCodexMode } from './assembly/cag-rag.js';
import type { KvBudgetDecision, KvDtype, ModelProfile, ModelProfileId } from './assembly/governor.js';
import { checkKvBudget, governHistory, MODEL_PROFILES } from './assembly/governor.js';
import type { FormatterRegistry } from './assembly/formatters.js';
import type { CacheItem } from './cache-item.js';
import type { CompactionDone, CompactionResult } from './compactor.js';
import { compact } from './compactor.js';
import type { ContextStateRecord, StoredCacheEntry } from './context-state.js';
import { buildMarker, createMarker, renderMarker } from './markers.js';
import { computeTermStats, eventTerms } from './topic-terms.js';
import { cacheHeadLength, MAX_HEAD_SHARE_OF_LOW_WATER } from './cache-head.js';
import { markerWindowTokens, newMarkerWindowTokens, splitMarkers } from './inline-markers.js';
import { maskPrivate } from '../memory/private-spans.js';
import type { Marker } from '../model/marker.js';

export interface ContextOptions {
  /** The model's context window, in tokens. */
  windowTokens: number;
  /**
   * Per-block budgets, taken exactly as given. Default `defaultBudgets(windowTokens)` with what identity,
   * codex and karma do not use lent to the history (`lendUnusedBudget`): the cache's high-water mark is then
   * the window less the headroom, the task card and query budgets, and the stable blocks as they are.
   */
  budgets?: PackBudgets;
  /**
   * Compaction evicts down to this share of the cache budget (history + markers) once the cache exceeds it.
   * Default 0.6 (`DEFAULT_LOW_WATER_FRACTION`): the gap is the hysteresis that keeps the prompt prefix
   * unchanged between compactions.
   */
  lowWaterFraction?: number;
  /** The last k events are never evicted. Default 8. */
  keepLastTurns?: number;
  /** Most markers in the window before merging (K_max). Default 8. */
  maxMarkers?: number;
  /**
   * Compaction keeps the first items of the window in place until the prompt up to them holds this many tokens
   * (the stable head, `cache-head.ts`), so a prompt cache still reads that prefix on a compacting turn. Default
   * 1,024 (`DEFAULT_MIN_CACHEABLE_TOKENS`: Anthropic's minimum cacheable prefix for Sonnet and Opus, and OpenAI's);
   * 2,048 suits Anthropic's Haiku models; 0 turns the head off.
   */
  minCacheableTokens?: number;
}

export interface PackOptions extends ContextOptions {
  /** The stable system prompt / persona block. Default empty. */
  identity?: string;
  /**
   * Static knowledge (documents, a codebase): inlined when under `maxCodexFraction` of the window and within
   * its budget (CAG), otherwise indexed into the `codex` session and served through recall (RAG). The
   * decision and its numbers are in `pack.decisions.codex`.
   */
  codex?: CodexDocument[];
  /** CAG threshold as a share of the window. Default 0.7 (Deep Memory §2). */
  maxCodexFraction?: number;
  /** Governor (Deep Memory §5): keep at most this many history messages (pinned ones always). */
  maxHistoryMessages?: number;
  /** Governor: character cap of the whole prompt. */
  maxTotalChars?: number;
  /**
   * Governor: the model's KV-cache budget. When prompt + headroom would need more than 90 % of it, the window
   * is compacted further before the pack is returned.
   */
  kv?: { profile: ModelProfile | ModelProfileId; kvBudgetBytes: number; dtype?: KvDtype };
  karma?: KarmaItem[];
  /** The new user message. Default empty. */
  query?: string;
  order?: readonly BlockKind[];
}

export interface SessionPack {
  pack: ContextPack;
  /** What the governor did: history pruned by depth or characters, and the KV decision. */
  governor?: { droppedByDepth: number; droppedByCharCap: number; kv?: KvBudgetDecision; kvCondensedTokens?: number };
  /** The compaction this call ran first, if the cache was over high water. */
  compaction?: CompactionDone;
  taskState?: TaskState;
  /** Cache version the pack was built from (0 before the first compaction). */
  cacheVersion: number;
}

/**
 * Compaction evicts down to this share of the high-water mark. A compaction moves the whole history in the
 * prompt, so a prompt cache reads none of it on that turn, and each turn between compactions re-sends what it
 * appended plus the card and the query. A lower mark makes compactions rarer but the packs between them
 * smaller, and the two cancel: the mean cache read per pack stays within 1.5 points from 0.2 to 0.6 on the
 * synthetic session and the Claude Code transcript at 8K-32K windows (`npm run bench -- context`, its low-water
 * sweep). A lower mark does re-send less history per compaction (at 0.4, 17 % fewer tokens processed at the
 * full price per turn than at 0.6, synthetic session at 8K), but keeps less verbatim history after it: at 0.4
 * the needle benchmark's 1-hop recall fell from 99.6 to 98.4 % (seed 1; the reader took look-alikes from the
 * longer flood a cycle then holds), and where no budget is lent (a codex, explicit budgets) its 0-hop recall
 * fell from 80 to 5 % (quick run). The gap in tokens grew anyway: the high-water mark it is a share of is 2.3x
 * larger at 8K since unused budgets are lent to the history (`lendUnusedBudget`).
 */
export const DEFAULT_LOW_WATER_FRACTION = 0.6;
/** An event costs at least this many tokens in the window: its label, two separators, one token of text. */
const MIN_EVENT_TOKENS = 8;
/** Texts this long (code units) are counted ahead with `Tokenizer.countAsync` (see countLargeTexts). */
const LARGE_TEXT_CHARS = 16 * 1024;
const YIELD_EVERY_MS = 4;
const BULK_PAGE_EVENTS = 2000;
/** Events sampled per bulk-evicted run for its marker's topics. */
const BULK_SAMPLE_EVENTS = 400;

interface BulkRun {
  first?: EventRecord;
  last?: EventRecord;
  count: number;
  sample: EventRecord[];
  tools: Map<string, number>;
}

function newRun(): BulkRun {
  return { count: 0, sample: [], tools: new Map() };
}
const MAX_SAVE_ATTEMPTS = 5;

/**
 * The window as a cache over the store (ENGRAM §4, §6): loads a session's cache (the persisted entries of
 * the last compaction plus every later event), compacts it when it exceeds high water, persists the result,
 * and assembles the context pack. Wiring of the pure parts in `context/`; no driver, no interface.
 */
export class ContextEngine {
  constructor(
    private readonly store: StorageBackend,
    private readonly tokenizer: Tokenizer,
    private readonly taskState: (sessionId: SessionId) => Promise<TaskState | undefined>,
    private readonly formatters: FormatterRegistry,
    /** Stores codex documents so recall can serve them (RAG mode); idempotent per document content. */
    private readonly indexDocuments: (docs: CodexDocument[]) => Promise<void> = async () => {},
  ) {}

  /** The session's cache as it stands: items in turn order, and the persisted version it came from. */
  async loadCache(sessionId: SessionId): Promise<{ items: CacheItem[]; state: ContextStateRecord | null }> {
    const state = await this.store.getContextState(sessionId);
    const items: CacheItem[] = [];
    if (state) {
      const ids = state.entries.flatMap((e) => (e.t === 'e' ? [e.id] : []));
      const events = new Map((await this.store.getEvents(ids)).map((e) => [e.id, e]));
      for (const entry of state.entries) {
        if (entry.t === 'm') {
          // A marker may be shown in the history (in its run's place), where it costs a label and separators too.
          items.push({ type: 'marker', marker: entry.marker, tokens: Math.max(entry.tokens, markerWindowTokens(entry.marker, this.tokenizer)) });
          continue;
        }
        const event = events.get(entry.id);
        if (!event) throw new EngramError('INTERNAL', `cache of session ${sessionId} names event ${entry.id}, which the store does not hold`);
        items.push({ type: 'event', event, tokens: entry.tokens, isIndexed: true, ...(entry.pinned ? { isPinned: true } : {}) });
      }
    }
    const tail = await this.store.listEvents({ sessionId, afterTurn: state?.upToTurn ?? 0 });
    const tokens = await this.tailTokens(tail);
    for (const event of tail) {
      // The current task card has a block of its own; its old versions are history, reachable by recall.
      if (event.kind === 'task_state') continue;
      items.push({ type: 'event', event, tokens: tokens.get(event) ?? this.eventTokens(event), isIndexed: true });
    }
    // Indexing before eviction (ENGRAM §4.4): while an event waits for its vector, semantic recall could not
    // find it once evicted, so the policy must keep it in the window.
    const pending = await this.pendingEmbeddings(items.flatMap((i) => (i.type === 'event' ? [i.event.id as EventId] : [])));
    if (pending.size > 0) {
      for (const [i, item] of items.entries()) {
        if (item.type === 'event' && pending.has(item.event.id as EventId)) items[i] = { ...item, isIndexed: false };
      }
    }
    return { items, state };
  }

  /** Which of `ids` still wait for their vector; none when the store has no embedding model. */
  private async pendingEmbeddings(ids: EventId[]): Promise<Set<EventId>> {
    if (ids.length === 0 || (await this.store.getVectorModel()) === null) return new Set();
    return this.store.pendingEmbeddings(ids);
  }

  /**
   * Compacts the session's cache if it exceeds its high-water mark (the history and markers budgets of the
   * window) and persists the new cache. Evicted events stay in the store: only the window lets go of them.
   * With the default budgets, give it the `identity` and `codex` the next `pack()` will use (pack() itself
   * does): what they leave unused of their budgets is the history's, so both then compact at the same mark.
   * Without them, none is assumed; karma is read from the store unless given.
   */
  async compact(sessionIdInput: string, options: PackOptions): Promise<CompactionResult & { cacheVersion: number }> {
    const sessionId = sessionIdInput as SessionId;
    const karma = await this.karmaFor(sessionId, options);
    const budgets = this.budgetsFor(options, karma);
    return this.compactWithin(sessionId, options, budgets, this.prefixTokens(options, karma, budgets));
  }

  private async compactWithin(
    sessionId: SessionId,
    options: ContextOptions,
    budgets: PackBudgets,
    prefixTokens: number,
  ): Promise<CompactionResult & { cacheVersion: number }> {
    const highWaterTokens = cacheBudget(budgets);
    const lowWater = lowWaterTokens(highWaterTokens, options.lowWaterFraction ?? DEFAULT_LOW_WATER_FRACTION);
    const first = await this.compactTo(sessionId, options, highWaterTokens, lowWater, prefixTokens);
    const after = first.shouldCompact ? first.tokensAfter : first.tokensBefore;
    if (after <= highWaterTokens) return first;
    // The protected last turns alone exceed the budget (e.g. a few 1,000-token file writes): the pack could
    // not hold them all, and the assembler would drop older ones that no marker covers. Protect only the
    // newest event this once, so every event is either in the window or behind a marker. (Found by the
    // context benchmark replaying a Claude Code transcript at an 8K window.)
    const second = await this.compactTo(sessionId, { ...options, keepLastTurns: 1 }, highWaterTokens, lowWater, prefixTokens);
    return second.shouldCompact ? second : first;
  }

  private async compactTo(
    sessionId: SessionId,
    options: ContextOptions,
    highWaterTokens: number,
    lowWaterTokens: number,
    prefixTokens?: number,
  ): Promise<CompactionResult & { cacheVersion: number }> {
    for (let attempt = 1; ; attempt++) {
      const taskState = await this.taskState(sessionId);
      try {
        await this.evictHugeTail(sessionId, highWaterTokens, taskTerms(taskState));
      } catch (err) {
        if (isEngramError(err, 'CONFLICT') && attempt < MAX_SAVE_ATTEMPTS) continue;
        throw err;
      }
      const { items, state } = await this.loadCache(sessionId);
      if (items.reduce((sum, i) => sum + i.tokens, 0) > highWaterTokens) await this.extractTopicTerms(items.flatMap((i) => (i.type === 'event' ? [i.event] : [])));
      const keepHeadItems = prefixTokens === undefined ? 0 : this.headLength(items, options, prefixTokens, lowWaterTokens);
      const compacted = compact(
        items,
        {
          highWaterTokens,
          lowWaterTokens,
          keepHeadItems,
          markerTokens: newMarkerWindowTokens(this.tokenizer),
          ...(options.keepLastTurns !== undefined ? { keepLastTurns: options.keepLastTurns } : {}),
          ...(options.maxMarkers !== undefined ? { maxMarkers: options.maxMarkers } : {}),
        },
        this.tokenizer,
        { taskTerms: taskTerms(taskState) },
      );
      const result = compacted.shouldCompact ? withWindowMarkerTokens(compacted, this.tokenizer, lowWaterTokens) : compacted;
      const version = state?.version ?? 0;
      if (!result.shouldCompact) return { ...result, cacheVersion: version };
      try {
        await this.store.putContextState({
          sessionId,
          version: version + 1,
          upToTurn: lastTurn(result.items),
          entries: result.items.map(toEntry),
          evictedEvents: (state?.evictedEvents ?? 0) + result.evicted.length,
          createdAt: new Date().toISOString(),
        });
        return { ...result, cacheVersion: version + 1 };
      } catch (err) {
        // Another process compacted the same session first: start again from its result.
        if (isEngramError(err, 'CONFLICT') && attempt < MAX_SAVE_ATTEMPTS) continue;
        throw err;
      }
    }
  }

  /**
   * The context pack for the session's next turn: compacts first when the cache is over high water, then
   * assembles identity, codex, karma, markers, the recent tail, the task card and the query under the
   * window's budgets (the pack invariant is checked; a violation is an error, never a silent overflow).
   */
  async pack(sessionIdInput: string, options: PackOptions): Promise<SessionPack> {
    const first = await this.packOnce(sessionIdInput as SessionId, options, undefined);
    if (!options.kv) return first;
    const profile = typeof options.kv.profile === 'string' ? MODEL_PROFILES[options.kv.profile] : options.kv.profile;
    if (!profile) throw new EngramError('INVALID_INPUT', `kv.profile: unknown model profile "${String(options.kv.profile)}"`, { field: 'kv.profile' });
    const kvOptions = { profile, kvBudgetBytes: options.kv.kvBudgetBytes, ...(options.kv.dtype ? { dtype: options.kv.dtype } : {}) };
    const decision = checkKvBudget(first.pack, kvOptions);
    if (!decision.mustCondense) return { ...first, governor: { ...(first.governor ?? { droppedByDepth: 0, droppedByCharCap: 0 }), kv: decision } };
    // Condense before inference (Deep Memory §5): compact the window by what the KV budget cannot hold.
    const second = await this.packOnce(sessionIdInput as SessionId, options, decision.condenseTokens);
    const after = checkKvBudget(second.pack, kvOptions);
    return { ...second, governor: { ...(second.governor ?? { droppedByDepth: 0, droppedByCharCap: 0 }), kv: after, kvCondensedTokens: decision.condenseTokens } };
  }

  private async packOnce(sessionId: SessionId, options: PackOptions, condenseTokens: number | undefined): Promise<SessionPack> {
    const karma = await this.karmaFor(sessionId, options);
    const budgets = this.budgetsFor(options, karma);
    const prefixTokens = this.prefixTokens(options, karma, budgets);
    const compaction =
      condenseTokens === undefined
        ? await this.compactWithin(sessionId, options, budgets, prefixTokens)
        : await this.condense(sessionId, options, condenseTokens);
    if (options.codex && options.codex.length > 0) await this.indexCodexIfNeeded(options.codex, budgets, options);
    const { items, state } = await this.loadCache(sessionId);
    // Markers before every kept event form the markers block; later ones stay in their runs' places in the
    // history, so a compaction that keeps the stable head adds its markers after the head, not before it.
    const { leading: markers, history: inPlace } = splitMarkers(items, (i) => toHistoryItem(i.event, i.isPinned === true));
    const highWater = cacheBudget(budgets);
    const head = this.headLength(items, options, prefixTokens, lowWaterTokens(highWater, options.lowWaterFraction ?? DEFAULT_LOW_WATER_FRACTION));
    // The head's last item in the history (an event or a marker in its run's place), if the head reaches past the markers block.
    const headEnd = head > markers.length ? head - 1 - markers.length : -1;
    // The formatters put the prompt-cache breakpoint that survives compactions at the head's end.
    const allHistory = headEnd >= 0 ? inPlace.map((h, i) => (i === headEnd ? { ...h, isCacheHeadEnd: true } : h)) : inPlace;
    const governed =
      options.maxHistoryMessages !== undefined || options.maxTotalChars !== undefined
        ? governHistory(allHistory, {
            ...(options.maxHistoryMessages !== undefined ? { maxHistoryMessages: options.maxHistoryMessages } : {}),
            ...(options.maxTotalChars !== undefined ? { maxTotalChars: options.maxTotalChars } : {}),
            fixedChars: (options.identity ?? '').length + (options.query ?? '').length,
          })
        : undefined;
    const history = governed ? governed.kept : allHistory;
    // Compaction keeps markers + history within their combined budget; give the markers exactly what they
    // use and the history the rest, so the assembler never drops an event that no marker covers.
    const markerTexts = markers.map((m) => renderMarker(m.marker));
    // The assembler fits a block by the sum of its items' counts plus one separator between items (an upper
    // bound of the joined text's count): size the markers block the same way so every marker fits.
    const separatorTokens = this.tokenizer.count(HISTORY_SEPARATOR);
    const markerTokens = markers.reduce((sum, m) => sum + m.tokens, 0) + Math.max(0, markers.length - 1) * separatorTokens;
    const packBudgets: PackBudgets = { ...budgets, markers: markerTokens, history: cacheBudget(budgets) - markerTokens };
    const taskState = await this.taskState(sessionId);
    const assembleOptions: AssembleOptions = {
      tokenizer: this.tokenizer,
      windowTokens: options.windowTokens,
      budgets: packBudgets,
      ...(options.order ? { order: options.order } : {}),
      ...(options.maxCodexFraction !== undefined ? { maxCodexFraction: options.maxCodexFraction } : {}),
    };
    const pack = assemblePack(
      {
        identity: options.identity ?? '',
        ...(options.codex ? { codex: options.codex } : {}),
        karma,
        markers: markerTexts,
        history,
        ...(taskState ? { taskState: cardForPack(taskState) } : {}),
        query: options.query ?? '',
      },
      assembleOptions,
    );
    return {
      pack,
      ...(governed ? { governor: { droppedByDepth: governed.droppedByDepth, droppedByCharCap: governed.droppedByCharCap } } : {}),
      ...(compaction.shouldCompact ? { compaction } : {}),
      ...(taskState ? { taskState } : {}),
      cacheVersion: state?.version ?? 0,
    };
  }

  /**
   * The cold path (a large session imported, never compacted): events older than the newest
   * `highWater / MIN_EVENT_TOKENS` can never all fit, so instead of loading and token-counting the whole
   * tail, the older part is paged through once and each run of it becomes one marker, built from a
   * deterministic sample (topics) and exact counts (range, events, tools). Events tagged `constraint` stay
   * in the window. Measured on 100K imported events: the first pack took 16 s and ~1 GB before this.
   */
  private async evictHugeTail(sessionId: SessionId, highWaterTokens: number, terms: string[]): Promise<void> {
    const [session, state] = await Promise.all([this.store.getSession(sessionId), this.store.getContextState(sessionId)]);
    if (!session) return;
    const from = state?.upToTurn ?? 0;
    let cutoff = session.lastTurn - Math.ceil(highWaterTokens / MIN_EVENT_TOKENS);
    if (cutoff <= from) return;
    const stride = Math.max(1, Math.floor((cutoff - from) / BULK_SAMPLE_EVENTS));
    const entries: StoredCacheEntry[] = [];
    let run: BulkRun = newRun();
    let evicted = 0;
    const flush = async (): Promise<void> => {
      if (run.first === undefined || run.last === undefined) return;
      await this.extractTopicTerms(run.sample);
      const marker = this.bulkMarker(run, terms);
      entries.push({ t: 'm', marker, tokens: this.tokenizer.count(renderMarker(marker)) });
      evicted += run.count;
      run = newRun();
    };
    for (let after = from; after < cutoff; ) {
      let page = await this.store.listEvents({ sessionId, afterTurn: after, toTurn: cutoff, limit: BULK_PAGE_EVENTS });
      if (page.length === 0) break;
      // Indexing before eviction: the bulk eviction stops at the first event still waiting for its vector.
      const pending = await this.pendingEmbeddings(page.map((e) => e.id as EventId));
      const firstPending = pending.size > 0 ? page.findIndex((e) => pending.has(e.id as EventId)) : -1;
      if (firstPending >= 0) {
        cutoff = page[firstPending]!.turn - 1;
        page = page.slice(0, firstPending);
        if (page.length === 0) break;
      }
      for (const e of page) {
        if (e.tags.includes('constraint')) {
          await flush();
          entries.push({ t: 'e', id: e.id, turn: e.turn, tokens: this.eventTokens(e) });
          continue;
        }
        run.first ??= e;
        run.last = e;
        run.count++;
        if (e.kind !== 'task_state' && (e.turn - from) % stride === 0) run.sample.push(e);
        if (e.toolName && e.kind === 'tool_call') run.tools.set(e.toolName, (run.tools.get(e.toolName) ?? 0) + 1);
      }
      after = page[page.length - 1]!.turn;
    }
    await flush();
    if (cutoff <= from) return;
    await this.store.putContextState({
      sessionId,
      version: (state?.version ?? 0) + 1,
      upToTurn: cutoff,
      entries: [...(state?.entries ?? []), ...entries],
      evictedEvents: (state?.evictedEvents ?? 0) + evicted,
      createdAt: new Date().toISOString(),
    });
  }

  /** A marker for a bulk-evicted run: topics from its sample, range and tool counts exact. */
  private bulkMarker(run: BulkRun, terms: string[]): Marker {
    const first = run.first!;
    const last = run.last!;
    const sample = run.sample.length > 0 ? run.sample : [first];
    const fromSample = buildMarker(sample, { taskTerms: terms, background: computeTermStats(sample) }, this.tokenizer);
    const top = Math.max(1, ...fromSample.topicWeights);
    const tools = [...run.tools.entries()]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, 2)
      .map(([name, n]) => ({ text: `${name} x${n}`, weight: top }));
    // Tool counts of the sample would understate the run: replace them with the exact ones.
    const topics = fromSample.topics.flatMap((text, i) => (/^\S+ x\d+$/.test(text) ? [] : [{ text, weight: fromSample.topicWeights[i]! }]));
    return createMarker(
      {
        fromTurn: first.turn,
        toTurn: last.turn,
        sessionId: first.sessionId as SessionId,
        level: 0,
        eventCount: run.count,
        firstTs: first.ts < last.ts ? first.ts : last.ts,
        lastTs: first.ts < last.ts ? last.ts : first.ts,
        topics: [...tools, ...topics],
      },
      this.tokenizer,
    );
  }

  /**
   * Pins (or unpins) an event in the session's window: a pinned event is never evicted and never pruned by
   * the governor. Only events still in the window can be pinned; an evicted one is out of the prompt (recall
   * finds it; promote the fact as karma to keep it in every pack).
   */
  async pin(sessionIdInput: string, eventId: string, isPinned = true): Promise<void> {
    const sessionId = sessionIdInput as SessionId;
    for (let attempt = 1; ; attempt++) {
      const { items, state } = await this.loadCache(sessionId);
      const index = items.findIndex((i) => i.type === 'event' && i.event.id === eventId);
      if (index < 0) {
        const event = await this.store.getEvent(eventId as EventId);
        if (!event || event.sessionId !== sessionId) {
          throw new EngramError('NOT_FOUND', `no event ${eventId} in session ${sessionId}`, { field: 'eventId' });
        }
        throw new EngramError(
          'INVALID_INPUT',
          `event ${eventId} was evicted from the window of ${sessionId} (turn ${event.turn}); recall finds it, or add the fact as karma`,
          { field: 'eventId' },
        );
      }
      const next = items.map((item, i) => (i === index && item.type === 'event' ? { ...item, isPinned } : item));
      try {
        await this.store.putContextState({
          sessionId,
          version: (state?.version ?? 0) + 1,
          upToTurn: lastTurn(next),
          entries: next.map(toEntry),
          evictedEvents: state?.evictedEvents ?? 0,
          createdAt: new Date().toISOString(),
        });
        return;
      } catch (err) {
        if (isEngramError(err, 'CONFLICT') && attempt < MAX_SAVE_ATTEMPTS) continue;
        throw err;
      }
    }
  }

  /**
   * A compaction forced by the governor: the high-water mark is the cache's current size less what the KV
   * budget cannot hold, so the window shrinks by at least that many tokens (evicted events stay stored).
   */
  private async condense(sessionId: SessionId, options: ContextOptions, condenseTokens: number): Promise<CompactionResult & { cacheVersion: number }> {
    const { items } = await this.loadCache(sessionId);
    const size = items.reduce((sum, i) => sum + i.tokens, 0);
    const target = Math.max(1, size - condenseTokens);
    return this.compactTo(sessionId, options, Math.max(0, target - 1), Math.floor(target * (options.lowWaterFraction ?? DEFAULT_LOW_WATER_FRACTION)));
  }

  /** In RAG mode the codex is served through recall: its documents are stored (once) in the `codex` session. */
  private async indexCodexIfNeeded(codex: CodexDocument[], budgets: PackBudgets, options: PackOptions): Promise<void> {
    const codexTokens = codex.reduce((sum, d) => sum + this.tokenizer.count(d.text), 0);
    const decision = decideCodexMode(codexTokens, options.windowTokens, {
      codexBudgetTokens: budgets.codex,
      ...(options.maxCodexFraction !== undefined ? { maxFraction: options.maxCodexFraction } : {}),
    });
    if (decision.mode === 'rag') await this.indexDocuments(codex);
  }

  /** Renders a pack with a registered formatter (`text`, `openai`, `anthropic`, or one you registered). */
  format(pack: ContextPack, name: string): unknown {
    return this.formatters.get(name)(pack);
  }

  /**
   * Tokens of the prompt before the cache, as a prompt cache sees them: the identity, the karma block and an
   * inlined codex (one the CAG/RAG decision keeps in the window). Only compared with the minimum cacheable prefix.
   */
  private prefixTokens(options: PackOptions, karma: readonly KarmaItem[], budgets: PackBudgets): number {
    let tokens = this.tokenizer.count(options.identity ?? '') + karmaBlockTokens(karma, this.tokenizer);
    if (options.codex && options.codex.length > 0) {
      const codexTokens = options.codex.reduce((sum, d) => sum + this.tokenizer.count(d.text), 0);
      const decision = decideCodexMode(codexTokens, options.windowTokens, {
        codexBudgetTokens: budgets.codex,
        ...(options.maxCodexFraction !== undefined ? { maxFraction: options.maxCodexFraction } : {}),
      });
      if (decision.mode === 'cag') tokens += codexTokens;
    }
    return tokens;
  }

  /** The stable head of `items` (`cacheHeadLength`) under these options and this low-water mark. */
  private headLength(items: readonly CacheItem[], options: ContextOptions, prefixTokens: number, lowWater: number): number {
    return cacheHeadLength(items, {
      prefixTokens,
      ...(options.minCacheableTokens !== undefined ? { minCacheableTokens: options.minCacheableTokens } : {}),
      maxHeadTokens: Math.floor(lowWater * MAX_HEAD_SHARE_OF_LOW_WATER),
      // An item's text alone: the formatters drop the history labels (and the markers' when in the history), and a
      // head counted with them fell short of the minimum in the Anthropic payload (bench context, seed 1234 at 8K).
      cachedTokensOf: (i) => this.tokenizer.count(i.type === 'event' ? toHistoryItem(i.event, false).text : renderMarker(i.marker)),
    });
  }

  /** Verified facts of this session and the store-wide ones, unless the caller gives its own list. */
  private async karmaFor(sessionId: SessionId, options: PackOptions): Promise<KarmaItem[]> {
    return options.karma ?? (await this.store.listKarma({ sessionId })).map((k) => ({ id: k.id, text: k.text, verifiedAt: k.verifiedAt }));
  }

  /**
   * The budgets of this call: `options.budgets` as given, or the window's defaults with what identity, codex and
   * karma leave unused lent to the history. A codex keeps its whole budget: whether it is inlined (CAG) or
   * indexed (RAG) is decided against that budget, and lending part of it would change the decision.
   */
  private budgetsFor(options: PackOptions, karma: readonly KarmaItem[]): PackBudgets {
    const budgets = this.budgets(options);
    if (options.budgets) return budgets;
    return lendUnusedBudget(budgets, {
      identity: this.tokenizer.count(options.identity ?? ''),
      codex: options.codex && options.codex.length > 0 ? budgets.codex : 0,
      karma: karmaBlockTokens(karma, this.tokenizer),
    });
  }

  private budgets(options: ContextOptions): PackBudgets {
    if (!Number.isInteger(options.windowTokens) || options.windowTokens < 256) {
      throw new EngramError('INVALID_INPUT', 'windowTokens: must be an integer of at least 256', { field: 'windowTokens' });
    }
    const f = options.lowWaterFraction;
    if (f !== undefined && !(f > 0 && f < 1)) {
      throw new EngramError('INVALID_INPUT', 'lowWaterFraction: must be between 0 and 1 (exclusive)', { field: 'lowWaterFraction' });
    }
    const m = options.minCacheableTokens;
    if (m !== undefined && !(Number.isSafeInteger(m) && m >= 0)) {
      throw new EngramError('INVALID_INPUT', 'minCacheableTokens: must be an integer >= 0', { field: 'minCacheableTokens' });
    }
    return options.budgets ?? defaultBudgets(options.windowTokens);
  }

  /**
   * Tokens an event takes in the history block, counted on the same rendering the assembler uses, plus two
   * separators. The assembler joins items with a separator, and the markers block (given exactly its joined
   * size) holds n-1 separators the marker items do not count. Charging each event one extra separator
   * covers those as long as there are at least n-2 events in the cache, which always holds: the last
   * 8 events are never evicted and adjacent markers merge above K_max = 8. So history always fits whole.
   */
  private eventTokens(event: EventRecord): number {
    return this.tokenizer.count(renderHistoryItem(toHistoryItem(event, false))) + 2 * this.tokenizer.count(HISTORY_SEPARATOR);
  }

  /**
   * {@link eventTokens} of the tail's events, counted without holding the event loop for long: large texts with the
   * tokenizer's stepped count (which remembers them, so the assembler's own counts of them are free), the others
   * with a yield every few milliseconds. A megabyte of new messages, or thousands of small ones, would otherwise
   * hold a server's only thread for a tenth of a second or more (bench/results/adversarial.md).
   */
  /**
   * Extracts the topic terms of `events` ahead of a compaction, with a yield every few milliseconds: markers need
   * them, and extraction (memoized per event object) scans up to 16 K characters of each event, which for the
   * thousands of events of a large cache held the event loop for 100 ms or more (bench/results/adversarial.md).
   */
  private async extractTopicTerms(events: readonly EventRecord[]): Promise<void> {
    let sliceStart = performance.now();
    for (const event of events) {
      eventTerms(event);
      if (performance.now() - sliceStart >= YIELD_EVERY_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
  }

  private async tailTokens(events: readonly EventRecord[]): Promise<Map<EventRecord, number>> {
    const out = new Map<EventRecord, number>();
    const countAsync = this.tokenizer.countAsync?.bind(this.tokenizer);
    const newest = events.findLast((e) => e.kind !== 'task_state');
    let sliceStart = performance.now();
    for (const event of events) {
      if (event.kind === 'task_state') continue;
      const item = toHistoryItem(event, false);
      if (countAsync && item.text.length >= LARGE_TEXT_CHARS) {
        await countAsync(renderHistoryItem(item));
        // The assembler cuts the newest item when it does not fit, and counts its text alone for that.
        if (event === newest) await countAsync(item.text);
        sliceStart = performance.now();
      } else if (performance.now() - sliceStart >= YIELD_EVERY_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
      out.set(event, this.eventTokens(event));
    }
    return out;
  }
}

/** The tokens the cache (history + markers) may hold: its compaction high-water mark. */
export function cacheBudget(budgets: PackBudgets): number {
  return budgets.history + budgets.markers;
}

/**
 * The marks `compact()` and `pack()` compact between with the default budgets of `windowTokens`, when identity,
 * codex and karma take `used` tokens (none by default; a codex keeps its whole budget, see `budgetsFor`):
 * compaction starts above `highWaterTokens` and evicts down to `lowWaterTokens`. For reports and for baselines
 * that should hold the same history as the engine.
 */
export function defaultCacheMarks(
  windowTokens: number,
  used: Partial<Record<StableBlock, number>> = {},
  lowWaterFraction = DEFAULT_LOW_WATER_FRACTION,
): { highWaterTokens: number; lowWaterTokens: number } {
  const budgets = defaultBudgets(windowTokens);
  const highWaterTokens = cacheBudget(lendUnusedBudget(budgets, { identity: used.identity ?? 0, codex: used.codex ?? 0, karma: used.karma ?? 0 }));
  return { highWaterTokens, lowWaterTokens: lowWaterTokens(highWaterTokens, lowWaterFraction) };
}

function lowWaterTokens(highWaterTokens: number, lowWaterFraction: number): number {
  return Math.floor(highWaterTokens * lowWaterFraction);
}

/** How an event reads in the recent tail. */
export function toHistoryItem(stored: EventRecord, isPinned: boolean): HistoryItem {
  // Private spans are stored, never packed (memory/private-spans.ts).
  const content = maskPrivate(stored.content);
  const event = content === stored.content ? stored : { ...stored, content };
  const base = { id: event.id, turn: event.turn, ts: event.ts, ...(isPinned ? { isPinned } : {}) };
  const tool = { ...(event.toolName ? { toolName: event.toolName } : {}), ...(event.toolCallId ? { toolCallId: event.toolCallId } : {}) };
  switch (event.kind) {
    case 'user':
      return { ...base, role: 'user', text: event.content };
    case 'assistant':
      return { ...base, role: 'assistant', text: event.content };
    case 'tool_call':
      return { ...base, ...tool, role: 'assistant', text: event.content };
    case 'tool_result':
      return { ...base, ...tool, role: 'tool', text: event.content };
    case 'decision':
      return { ...base, role: 'system', text: `[decision] ${event.content}` };
    case 'note':
      return { ...base, role: 'system', text: `[note] ${event.content}` };
    default:
      return { ...base, role: 'system', text: event.content };
  }
}

function toEntry(item: CacheItem): StoredCacheEntry {
  if (item.type === 'marker') return { t: 'm', marker: item.marker, tokens: item.tokens };
  return { t: 'e', id: item.event.id as EventId, turn: item.event.turn, tokens: item.tokens, ...(item.isPinned ? { pinned: true as const } : {}) };
}

function lastTurn(items: readonly CacheItem[]): number {
  let max = 0;
  for (const i of items) max = Math.max(max, i.type === 'event' ? i.event.turn : i.marker.toTurn);
  return max;
}

/**
 * The card as the model sees it: only fields that say something (empty lists, false flags and empty
 * extensions are left out), so the hard-capped task block holds content, not scaffolding.
 */
export function cardForPack(state: TaskState): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(state).filter(([, v]) => {
      if (v === false || v === undefined) return false;
      if (Array.isArray(v)) return v.length > 0;
      if (v && typeof v === 'object') return Object.keys(v).length > 0;
      return true;
    }),
  );
}

function taskTerms(state: TaskState | undefined): string[] {
  if (!state) return [];
  return [...state.goals, ...state.nextActions, ...state.openLoops];
}

/**
 * The compaction's new and merged markers charged what they cost where the pack may show them (`markerWindowTokens`),
 * as `loadCache` charges stored ones, so the cache is checked against high water with the same counts.
 */
function withWindowMarkerTokens(result: CompactionDone, tokenizer: Tokenizer, lowWaterTokens: number): CompactionDone {
  const items = result.items.map((i) => (i.type === 'marker' ? { ...i, tokens: Math.max(i.tokens, markerWindowTokens(i.marker, tokenizer)) } : i));
  const tokensAfter = items.reduce((sum, i) => sum + i.tokens, 0);
  return { ...result, items, tokensAfter, isLowWaterReached: tokensAfter <= lowWaterTokens };
}
