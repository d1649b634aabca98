import { monotonicFactory } from 'ulid';
import { EngramError } from '../errors.js';
import { checkQuery } from '../model/limits.js';
import type { Embedder } from '../providers/embedder.js';
import { dot } from '../providers/embedder.js';
import type { BusStorage, EngramRow } from '../store/bus-storage.js';
import type { BudgetLimits } from './budget-limits.js';
import type { BusAgent, ScopePolicy } from './bus-agent.js';
import { assertMayWriteScope, SCOPE_RANK } from './bus-agent.js';
import { dedupeKey, deriveHashKeys, normaliseGivenKey, pointerKeys } from './hash-keys.js';
import { buildSharedBrief, isContradiction, type SharedBrief } from './messages/shared-brief.js';
import type { EngramClaim, EngramKind, EngramScope } from '../model/engram.js';
import type { Pointer } from '../model/pointer.js';
import type { TelemetryBuffer } from './telemetry-buffer.js';
import { ENGRAM_KINDS, ENGRAM_SCOPES, MAX_HASH_KEYS_PER_ENGRAM, parseTtl } from '../model/engram.js';
import { validateEngram, validatePointer } from './validation.js';

const nextUlid = monotonicFactory();

/** Engram ids made by the bus: `eng_` + ULID (lowercase), so they sort by creation. */
export const ENGRAM_ID_PREFIX = 'eng_';
/** Candidates read per hash key, newest first (PAS Bus §5.1 "keep top-N per key"). */
export const CANDIDATES_PER_KEY = 64;
/** Candidates ranked, and reranked by embedding when one is available (PAS Bus §5.2 "hash recall top 100"). */
export const RERANK_CANDIDATES = 100;
/** Most engrams one query returns (PAS Bus §5.2: K <= 12). */
export const MAX_QUERY_K = 12;
export const DEFAULT_QUERY_K = 10;
/** Engrams read for an embedding-only query, newest first. */
const EMBEDDING_SCAN_LIMIT = 2000;

/** What an agent sends to store an engram: the v0.1 object; `id` and `provenance` are filled in when absent. */
export type EngramInput = Omit<EngramClaim, 'id' | 'provenance'> & { id?: string; provenance?: Partial<EngramClaim['provenance']> };

export interface EngramQuery {
  /** Hash keys (`service:gateway`, `t:pool`); normalised like stored ones. */
  keys?: string[];
  /** Free text: its tokens and n-grams become keys, and it drives the embedding rerank. */
  text?: string;
  /** Pointers the caller works on: their file keys join the query and overlap breaks ties. */
  pointers?: Pointer[];
  kinds?: EngramKind[];
  scopes?: EngramScope[];
  /** Most results, 1..12. Default 10. */
  k?: number;
  /** Rerank candidates by embedding similarity to `text` when an embedder is bound. Default true. */
  rerank?: boolean;
}

export interface RankedEngram {
  engram: EngramClaim;
  project: string | null;
  runId: string;
  /** Hash keys of the query the engram holds. */
  matchedKeys: number;
  /** Cosine similarity of the claim to the query text, when reranked. */
  similarity?: number;
  expiresAt: string;
  isContradiction: boolean;
}

export interface EngramBusOptions {
  limits: Readonly<BudgetLimits>;
  policy: Readonly<ScopePolicy>;
  countTokens: (text: string) => number;
  /** The bound embedder, for the optional rerank (PAS Bus §5.2); null: keys only. */
  embedder: () => Embedder | null;
  now?: () => number;
  /** Replaces credentials in a claim before it is stored (the engine's redaction policy); absent: verbatim. */
  redact?: (text: string) => Promise<string>;
}

/**
 * The Engram Store and Query (PAS Bus §2.1 ES/EQ; LESS §9): validated puts with deterministic hash keys,
 * dedupe of near-identical claims, rate limits, scopes and TTL; candidate recall by key with stable
 * tie-breakers and an optional embedding rerank; promotion; the SharedBriefMicro of a parent's children;
 * contradictions as first-class queries. State lives in the store ({@link BusStorage}), so every server
 * sharing it agrees.
 */
export class EngramBus {
  private readonly now: () => number;

  constructor(
    private readonly storage: BusStorage,
    private readonly telemetry: TelemetryBuffer,
    private readonly o: EngramBusOptions,
  ) {
    this.now = o.now ?? Date.now;
  }

  /** Stores an engram written by `agent` in `runId`. Duplicates return the stored one. */
  async put(agent: BusAgent, input: unknown, runId: string): Promise<{ status: 'stored' | 'duplicate'; engram: EngramClaim }> {
    const nowMs = this.now();
    const candidate = withDefaults(input, agent, nowMs);
    const validated = validateEngram(candidate);
    // Secrets in a claim are replaced before the claim is keyed, deduplicated or stored, as in events.
    const engram = this.o.redact ? { ...validated, claim: await this.o.redact(validated.claim) } : validated;
    if (engram.provenance.created_by !== agent.id) {
      throw new EngramError('SCOPE_DENIED', `provenance.created_by: an agent writes engrams as itself (${agent.id}), not as ${engram.provenance.created_by}`, {
        field: 'provenance.created_by',
      });
    }
    if (engram.claim.length > this.o.limits.maxEngramChars) {
      throw new EngramError('BUDGET_EXCEEDED', `claim: ${engram.claim.length} characters, the limit is ${this.o.limits.maxEngramChars}; shorten it and point to the details`, {
        field: 'claim',
        limit: 'maxEngramChars',
        measured: engram.claim.length,
        allowed: this.o.limits.maxEngramChars,
      });
    }
    assertMayWriteScope(agent, engram.scope, this.o.policy);
    const ttlMs = ttlToMs(engram.ttl);
    const indexKeys = deriveHashKeys({ claim: engram.claim, kind: engram.kind, pointers: engram.pointers, tags: engram.tags ?? [], keys: engram.hash_keys ?? [] });
    const stored: EngramClaim = { ...engram, hash_keys: pickWireKeys(engram.hash_keys ?? [], indexKeys) };
    const row: EngramRow = {
      engram: stored,
      project: agent.project ?? null,
      runId,
      createdBy: agent.id,
      createdMs: nowMs,
      expiresMs: nowMs + ttlMs,
      dedupeKey: dedupeKey(engram.claim, engram.pointers),
      indexKeys,
    };
    const outcome = await this.storage.putEngram(row, { maxPerAgentPerMinute: this.o.limits.maxEngramsPerAgentPerMinute });
    if (outcome.status === 'rateLimited') {
      await this.log('less.budget.reject', agent, { limit: 'maxEngramsPerAgentPerMinute', measured: outcome.recentCount + 1, allowed: this.o.limits.maxEngramsPerAgentPerMinute });
      throw new EngramError(
        'BUDGET_EXCEEDED',
        `rate limit: ${agent.name} wrote ${outcome.recentCount} engrams in the last minute (limit ${this.o.limits.maxEngramsPerAgentPerMinute}); send fewer, better ones, or retry in a minute`,
        { field: 'engram', limit: 'maxEngramsPerAgentPerMinute', measured: outcome.recentCount + 1, allowed: this.o.limits.maxEngramsPerAgentPerMinute, retryAfterMs: 60_000 },
      );
    }
    await this.log('less.engram.put', agent, {
      id: outcome.row.engram.id,
      kind: outcome.row.engram.kind,
      scope: outcome.row.engram.scope,
      isDuplicate: outcome.status === 'duplicate',
      isContradiction: isContradiction(outcome.row.engram),
      pointers: outcome.row.engram.pointers.length,
    });
    return { status: outcome.status, engram: outcome.row.engram };
  }

  /** Engrams for keys and/or text, visible to `agent` in `runId`, ranked (PAS Bus §5; LESS §9). */
  async query(agent: BusAgent, q: EngramQuery, runId: string): Promise<{ engrams: RankedEngram[]; candidates: number }> {
    const k = checkK(q.k);
    validateQuery(q);
    const queryKeys = new Set<string>();
    for (const key of q.keys ?? []) queryKeys.add(normaliseGivenKey(key));
    if (q.text) for (const key of deriveHashKeys({ claim: q.text })) queryKeys.add(key);
    for (const p of q.pointers ?? []) for (const key of pointerKeys(p)) queryKeys.add(key);
    if (queryKeys.size === 0) throw new EngramError('INVALID_INPUT', 'keys: give hash keys, text or pointers to query by', { field: 'keys' });
    const nowMs = this.now();
    const hits = await this.storage.queryEngramsByKeys({
      keys: [...queryKeys],
      project: agent.project ?? null,
      runId,
      nowMs,
      perKeyLimit: CANDIDATES_PER_KEY,
      // Enough for the embedding rerank (PAS Bus §5.2: top 100), else a few per result for the tie-breakers.
      limit: q.rerank !== false && q.text && this.o.embedder() ? RERANK_CANDIDATES : Math.max(k * 3, 30),
      ...(q.scopes ? { scopes: q.scopes } : {}),
      ...(q.kinds ? { kinds: q.kinds } : {}),
    });
    const queryRefs = new Set((q.pointers ?? []).flatMap((p) => pointerKeys(p)));
    const ranked = hits
      .map((h) => ({ row: h.row, matchedKeys: h.matchedKeys, keyWeight: h.keyWeight, overlap: pointerOverlap(h.row.engram, queryRefs) }))
      // Rare keys first (IDF-weighted, see KeyHit.keyWeight), then the seed's tie-breakers.
      .sort((a, b) => b.keyWeight - a.keyWeight || b.matchedKeys - a.matchedKeys || tieBreak(a, b))
      .slice(0, RERANK_CANDIDATES);
    const embedder = q.rerank !== false && q.text ? this.o.embedder() : null;
    let out: Array<{ row: EngramRow; matchedKeys: number; similarity?: number }> = ranked;
    if (embedder && ranked.length > 1) {
      const [queryVector, ...claims] = await embedder.embed([q.text!, ...ranked.map((r) => r.row.engram.claim)]);
      const maxWeight = Math.max(...ranked.map((r) => r.keyWeight), Number.EPSILON);
      out = ranked
        .map((r, i) => ({ ...r, similarity: dot(queryVector!, claims[i]!) }))
        // Keys and meaning weigh equally; the tie-breakers keep the order stable (PAS Bus §9).
        .map((r) => ({ ...r, score: 0.5 * (r.keyWeight / maxWeight) + 0.5 * Math.max(0, r.similarity) }))
        .sort((a, b) => b.score - a.score || b.keyWeight - a.keyWeight || tieBreak(a, b));
    }
    const engrams = out.slice(0, k).map((r) => toRanked(r.row, r.matchedKeys, r.similarity));
    await this.log('less.engram.query', agent, { keys: queryKeys.size, candidates: hits.length, returned: engrams.length, reranked: embedder !== null });
    return { engrams, candidates: hits.length };
  }

  /**
   * Engrams nearest in meaning to `text` (PAS Bus §6.1 `query_by_embedding`), or to the claim of engram
   * `engramId`: the newest visible engrams are compared with the bound embedder. Needs an embedder.
   */
  async queryByEmbedding(agent: BusAgent, q: { text?: string; engramId?: string; k?: number; kinds?: EngramKind[] }, runId: string): Promise<RankedEngram[]> {
    const k = checkK(q.k);
    const embedder = this.o.embedder();
    if (!embedder) throw new EngramError('INVALID_INPUT', 'embedding queries need an embedder (see --embedder)', { field: 'embedder' });
    let text = q.text;
    if (q.engramId !== undefined) {
      const row = await this.storage.getEngram(q.engramId);
      if (!row || !this.isVisible(row, agent, runId)) throw new EngramError('NOT_FOUND', `no engram ${q.engramId}`, { field: 'engram_ref', id: q.engramId });
      text = row.engram.claim;
    }
    if (!text || text.trim().length === 0) throw new EngramError('INVALID_INPUT', 'text: give a text or an engram_ref to compare with', { field: 'text' });
    if (q.engramId === undefined) checkQuery(text, 'text');
    const rows = await this.storage.listEngrams({
      project: agent.project ?? null,
      runId,
      nowMs: this.now(),
      limit: EMBEDDING_SCAN_LIMIT,
      ...(q.kinds ? { kinds: q.kinds } : {}),
    });
    if (rows.length === 0) return [];
    const [queryVector, ...claims] = await embedder.embed([text, ...rows.map((r) => r.engram.claim)]);
    return rows
      .map((row, i) => ({ row, similarity: dot(queryVector!, claims[i]!), matchedKeys: 0, overlap: 0 }))
      .filter((r) => r.row.engram.id !== q.engramId)
      .sort((a, b) => b.similarity - a.similarity || tieBreak(a, b))
      .slice(0, k)
      .map((r) => toRanked(r.row, 0, r.similarity));
  }

  async get(agent: BusAgent, id: string, runId: string): Promise<RankedEngram> {
    const row = await this.storage.getEngram(id);
    if (!row || row.removedMs !== undefined || !this.isVisible(row, agent, runId)) throw new EngramError('NOT_FOUND', `no engram ${id}`, { field: 'id', id });
    return toRanked(row, 0, undefined);
  }

  /** Removes an engram (kept in the store, left out of every query). Admins only (PAS Bus §6.1). */
  async remove(agent: BusAgent, id: string): Promise<void> {
    if (!agent.isAdmin) throw new EngramError('FORBIDDEN', 'only an admin agent removes engrams', { field: 'agent' });
    if (!(await this.storage.removeEngram(id, agent.id, this.now()))) throw new EngramError('NOT_FOUND', `no live engram ${id}`, { field: 'id', id });
    await this.log('less.engram.remove', agent, { id });
  }

  /**
   * Promotes an engram to a wider scope (LESS §8.2, §13.2): only a parent of its writer (or an admin), only
   * with enough confidence, and org/global only where enabled.
   */
  async promote(agent: BusAgent, id: string, scope: EngramScope, parentOf: (agentId: string) => Promise<string | undefined>): Promise<EngramClaim> {
    if (!(ENGRAM_SCOPES as readonly string[]).includes(scope)) {
      throw new EngramError('INVALID_INPUT', `scope: expected one of ${ENGRAM_SCOPES.join(', ')}`, { field: 'scope' });
    }
    const row = await this.storage.getEngram(id);
    if (!row || row.removedMs !== undefined) throw new EngramError('NOT_FOUND', `no live engram ${id}`, { field: 'id', id });
    if (SCOPE_RANK[scope] <= SCOPE_RANK[row.engram.scope]) {
      throw new EngramError('INVALID_INPUT', `scope: ${id} is already ${row.engram.scope}; promotion only widens`, { field: 'scope' });
    }
    if (!agent.isAdmin) {
      if (row.project !== (agent.project ?? null)) throw new EngramError('NOT_FOUND', `no live engram ${id}`, { field: 'id', id });
      if (!(await isAncestor(agent.id, row.createdBy, parentOf))) {
        throw new EngramError('SCOPE_DENIED', `only a parent of the engram's writer promotes it (LESS §4.3)`, { field: 'agent' });
      }
    }
    assertMayWriteScope(agent, scope, this.o.policy);
    if (row.engram.confidence < this.o.policy.promotionConfidenceFloor) {
      throw new EngramError(
        'SCOPE_DENIED',
        `confidence: ${row.engram.confidence} is below the promotion floor ${this.o.policy.promotionConfidenceFloor}; verify the claim and write it again with more confidence`,
        { field: 'confidence' },
      );
    }
    if (!(await this.storage.setEngramScope(id, scope, agent.id, this.now()))) throw new EngramError('NOT_FOUND', `no live engram ${id}`, { field: 'id', id });
    await this.log('less.engram.promote', agent, { id, from: row.engram.scope, to: scope });
    return { ...row.engram, scope };
  }

  /**
   * The SharedBriefMicro a parent broadcasts (LESS §5.3, PAS Bus §7.2): the top live engrams of its children,
   * contradictions first, within the line and token budgets.
   */
  async brief(parent: BusAgent, children: BusAgent[], runId: string, lead: readonly string[] = []): Promise<SharedBrief> {
    const roles = new Map(children.map((c) => [c.id, c.role]));
    const rows =
      children.length === 0
        ? []
        : await this.storage.listEngrams({ project: parent.project ?? null, runId, nowMs: this.now(), createdBy: [...roles.keys()], limit: 500 });
    return buildSharedBrief(
      rows.map((r) => ({
        id: r.engram.id,
        role: roles.get(r.createdBy) ?? 'agent',
        kind: r.engram.kind,
        claim: r.engram.claim,
        confidence: r.engram.confidence,
        pointers: r.engram.pointers,
        ...(r.engram.tags ? { tags: r.engram.tags } : {}),
        createdAt: r.engram.provenance.created_at,
      })),
      { countTokens: this.o.countTokens, limits: this.o.limits, lead },
    );
  }

  /** Risk engrams that cite two or more different sources, or are tagged `contradiction` (LESS UC2). */
  async contradictions(agent: BusAgent, runId: string, limit = 100): Promise<RankedEngram[]> {
    const rows = await this.storage.listEngrams({ project: agent.project ?? null, runId, nowMs: this.now(), kinds: ['risk'], limit: Math.max(limit * 4, 200) });
    return rows.filter((r) => isContradiction(r.engram)).slice(0, limit).map((r) => toRanked(r, 0, undefined));
  }

  private isVisible(row: EngramRow, agent: BusAgent, runId: string): boolean {
    if (row.engram.scope === 'org' || row.engram.scope === 'global') return true;
    if (row.project !== (agent.project ?? null)) return false;
    return row.engram.scope === 'project' || row.runId === runId;
  }

  private async log(type: string, agent: BusAgent, data: Record<string, unknown>): Promise<void> {
    this.telemetry.log({ tsMs: this.now(), type, agentId: agent.id, role: agent.role, data });
  }
}

function withDefaults(input: unknown, agent: BusAgent, nowMs: number): unknown {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return input;
  const o = input as Record<string, unknown>;
  const provenance = typeof o.provenance === 'object' && o.provenance !== null ? (o.provenance as Record<string, unknown>) : {};
  return {
    ...o,
    id: o.id ?? `${ENGRAM_ID_PREFIX}${nextUlid(nowMs).toLowerCase()}`,
    provenance: {
      created_at: new Date(nowMs).toISOString(),
      created_by: agent.id,
      source: 'agent',
      ...provenance,
    },
  };
}

/** TTL in ms; calendar units count as their usual lengths (a month 30 days, a year 365). */
export function ttlToMs(ttl: string): number {
  const d = parseTtl(ttl);
  const ms =
    (((d.years * 365 + d.months * 30 + d.weeks * 7 + d.days) * 24 + d.hours) * 60 + d.minutes) * 60_000 + Math.round(d.seconds * 1000);
  if (ms <= 0) throw new EngramError('INVALID_INPUT', `ttl: "${ttl}" is zero; give a positive duration such as PT6H`, { field: 'ttl' });
  return ms;
}

/** The wire `hash_keys` (max 32): the writer's own first, then derived concept, path and token keys. */
function pickWireKeys(given: readonly string[], derived: readonly string[]): string[] {
  const out = new Set(given.map(normaliseGivenKey));
  const order = (k: string): number => (k.startsWith('c:') ? 0 : k.startsWith('p:') ? 1 : k.startsWith('t:') ? 2 : 3);
  for (const k of [...derived].sort((a, b) => order(a) - order(b) || (a < b ? -1 : 1))) {
    if (out.size >= MAX_HASH_KEYS_PER_ENGRAM) break;
    out.add(k);
  }
  return [...out].slice(0, MAX_HASH_KEYS_PER_ENGRAM);
}

function pointerOverlap(engram: EngramClaim, queryRefs: ReadonlySet<string>): number {
  if (queryRefs.size === 0) return 0;
  return engram.pointers.reduce((n, p) => n + (pointerKeys(p).some((k) => k.startsWith('p:') && queryRefs.has(k)) ? 1 : 0), 0);
}

/** Stable tie-breakers (PAS Bus §5.1, §9): scope match, recency, confidence, pointer overlap, then id. */
function tieBreak(a: { row: EngramRow; overlap?: number }, b: { row: EngramRow; overlap?: number }): number {
  return (
    SCOPE_RANK[a.row.engram.scope] - SCOPE_RANK[b.row.engram.scope] ||
    b.row.createdMs - a.row.createdMs ||
    b.row.engram.confidence - a.row.engram.confidence ||
    (b.overlap ?? 0) - (a.overlap ?? 0) ||
    (a.row.engram.id < b.row.engram.id ? -1 : a.row.engram.id > b.row.engram.id ? 1 : 0)
  );
}

function toRanked(row: EngramRow, matchedKeys: number, similarity: number | undefined): RankedEngram {
  return {
    engram: row.engram,
    project: row.project,
    runId: row.runId,
    matchedKeys,
    ...(similarity !== undefined ? { similarity: Math.round(similarity * 10000) / 10000 } : {}),
    expiresAt: new Date(row.expiresMs).toISOString(),
    isContradiction: isContradiction(row.engram),
  };
}

function checkK(k: number | undefined): number {
  const value = k ?? DEFAULT_QUERY_K;
  if (!Number.isInteger(value) || value < 1 || value > MAX_QUERY_K) {
    throw new EngramError('INVALID_INPUT', `k: expected an integer from 1 to ${MAX_QUERY_K} (PAS Bus §5.2: K <= 12)`, { field: 'k' });
  }
  return value;
}

function validateQuery(q: EngramQuery): void {
  for (const kind of q.kinds ?? []) {
    if (!(ENGRAM_KINDS as readonly string[]).includes(kind)) throw new EngramError('INVALID_INPUT', `kinds: unknown kind "${kind}"`, { field: 'kinds' });
  }
  for (const scope of q.scopes ?? []) {
    if (!(ENGRAM_SCOPES as readonly string[]).includes(scope)) throw new EngramError('INVALID_INPUT', `scopes: unknown scope "${scope}"`, { field: 'scopes' });
  }
  (q.pointers ?? []).forEach((p, i) => validatePointer(p, `pointers[${i}]`));
  if (q.text !== undefined && typeof q.text !== 'string') throw new EngramError('INVALID_INPUT', 'text: must be a string', { field: 'text' });
  if (q.text !== undefined) checkQuery(q.text, 'text');
}

async function isAncestor(candidate: string, agentId: string, parentOf: (id: string) => Promise<string | undefined>): Promise<boolean> {
  let current: string | undefined = agentId;
  for (let depth = 0; depth < 32 && current !== undefined; depth++) {
    current = await parentOf(current);
    if (current === candidate) return true;
  }
  return false;
}
