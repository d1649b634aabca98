import type { EngramClaim, EngramKind, EngramScope } from '../model/engram.js';

/**
 * The Engram Bus part of the storage seam (PAS Bus §2.1 Engram Store; §3.2 deref budgets; §6.3 grants; LESS
 * §12 telemetry, §13.2 rate limits). Everything that enforces a limit lives here, in the database, so limits
 * hold across every server sharing the store, not per process. Each backend implements it in its own file
 * (`sqlite/sqlite-bus.ts`, `postgres/postgres-bus.ts`); the conformance suite runs the same tests on both.
 */
export interface BusStorage {
  /**
   * Stores an engram with its hash keys, in one transaction, unless it is a duplicate: an engram with the
   * same `dedupeKey` in the same project that is live (not removed, not expired at `row.createdMs`) is returned
   * instead, with `isDuplicate: true`, and nothing is written. Before writing, counts the writer's engrams
   * created in the minute before `row.createdMs`: at `maxPerAgentPerMinute` or more, nothing is written and
   * `rateLimited` is returned (the count and the write are serialised per writer, across servers).
   */
  putEngram(row: EngramRow, options: { maxPerAgentPerMinute: number }): Promise<PutEngramOutcome>;
  getEngram(id: string): Promise<EngramRow | null>;
  /**
   * Candidates by hash key (PAS Bus §5.1): engrams holding any of `keys`, visible to the reader (see
   * {@link EngramVisibility}), live at `nowMs` (not removed; `expiresMs > nowMs`), with how many of the keys each
   * holds. Per key at most `perKeyLimit` engrams are read, newest first (collisions are acceptable; a very
   * common key must not make the query slow), and the `limit` with the highest {@link KeyHit.keyWeight} are
   * returned. Order of the result is not defined: the core ranks.
   */
  queryEngramsByKeys(query: EngramKeyQuery): Promise<KeyHit[]>;
  /** Live (or, with `includeExpired`, also expired) engrams visible to the reader, newest first. */
  listEngrams(query: EngramListQuery): Promise<EngramRow[]>;
  /** Marks an engram removed (kept, with who and when); false when no live engram has this id. */
  removeEngram(id: string, removedBy: string, removedMs: number): Promise<boolean>;
  /** Changes a live engram's scope (promotion), recording who; false when no live engram has this id. */
  setEngramScope(id: string, scope: EngramScope, changedBy: string, changedMs: number): Promise<boolean>;

  /** Starts the agent's next turn (deref budgets count per turn); returns its number (1, 2, ...). */
  beginAgentTurn(agentId: string): Promise<number>;
  /** The agent's current turn; 0 before its first. */
  currentAgentTurn(agentId: string): Promise<number>;
  /**
   * Atomically checks and reserves one deref of `kind` and `tokens` tokens in the agent's `turn`: allowed when
   * the kind's count stays within `maxCount` and the turn's tokens within `maxTokens`; otherwise nothing
   * changes. Returns the usage after (allowed) or as it stands (refused).
   */
  reserveDeref(agentId: string, turn: number, kind: DerefKind, tokens: number, limits: { maxCount: number; maxTokens: number }): Promise<DerefReservation>;
  /**
   * Gives back part or all of a reservation: `count` 1 and all tokens when the deref failed, count 0 and the
   * unused tokens when the excerpt came out shorter than reserved.
   */
  releaseDeref(agentId: string, turn: number, kind: DerefKind, count: 0 | 1, tokens: number): Promise<void>;
  /** Deref usage of the agent's turn. */
  derefUsage(agentId: string, turn: number): Promise<DerefUsage>;

  putGrant(grant: GrantRecord): Promise<void>;
  getGrant(id: string): Promise<GrantRecord | null>;
  /**
   * Marks a grant used, once: true when it was unused and is now used (with `usedTokens`), false when it had
   * been used already (a replay). Atomic across servers.
   */
  useGrant(id: string, usedTokens: number, usedMs: number): Promise<boolean>;

  /**
   * A random secret kept in the store under `name` (created on first call, 32 random bytes, hex): grant
   * signatures use it, so every server sharing the store verifies every other server's grants.
   */
  getOrCreateSecret(name: string): Promise<string>;

  /** Appends telemetry events (LESS §12), in order, in one transaction. Append-only. */
  logBusEvents(events: BusEventInput[]): Promise<void>;
  /** Telemetry events, oldest first, filtered. */
  listBusEvents(query?: BusEventQuery): Promise<BusEventRecord[]>;
}

/** An engram as stored: the v0.1 object as accepted, plus what the store needs to find, scope and age it. */
export interface EngramRow {
  /** The engram as validated, `hash_keys` completed by the bus (given keys plus derived ones). */
  engram: EngramClaim;
  /** The writer's project; engrams of one project are never visible from another. Null: no project. */
  project: string | null;
  /** The run the engram belongs to (run scope): the writer's run label. */
  runId: string;
  /** The writer's agent id (`provenance.created_by`). */
  createdBy: string;
  createdMs: number;
  /** `createdMs` plus the TTL: expired engrams are kept but left out of queries (PAS Bus §11.3). */
  expiresMs: number;
  /** Normalised claim + sorted pointer refs, hashed: near-identical claims on the same pointers are one engram. */
  dedupeKey: string;
  /** Every hash key, for the index (`engram.hash_keys` may hold only part of them on the wire: max 32). */
  indexKeys: string[];
  removedMs?: number;
  removedBy?: string;
  /** Who last changed the scope (promotion), and when. */
  scopeChangedBy?: string;
  scopeChangedMs?: number;
}

export interface KeyHit {
  row: EngramRow;
  /** How many of the distinct query keys the engram holds. */
  matchedKeys: number;
  /**
   * The matched keys weighted by rarity, IDF-style: the sum over matched keys of ln(1 + perKeyLimit / n), n the
   * engrams read for that key. A key few engrams hold (an identifier, a case number) outweighs n-grams that
   * hundreds of near-identical claims share.
   */
  keyWeight: number;
}

export type PutEngramOutcome =
  | { status: 'stored'; row: EngramRow }
  | { status: 'duplicate'; row: EngramRow }
  | { status: 'rateLimited'; recentCount: number };

/** Who reads: visibility is decided in the query (LESS §4.3, §13.3). */
export interface EngramVisibility {
  /** The reader's project (null: none). `project` and `run` engrams of other projects are never returned. */
  project: string | null;
  /** The reader's run: `run` engrams of its project are visible only within the same run. */
  runId: string;
  /** Scopes the reader asks for (default all four). */
  scopes?: EngramScope[];
  nowMs: number;
}

export interface EngramKeyQuery extends EngramVisibility {
  keys: string[];
  kinds?: EngramKind[];
  /** Most engrams read per key, newest first. */
  perKeyLimit: number;
  /**
   * Most engrams returned: those with the highest key weight, newest first among equals. Only these rows are
   * read in full, so a common key costs index entries, not engram bodies.
   */
  limit: number;
}

export interface EngramListQuery extends EngramVisibility {
  kinds?: EngramKind[];
  createdBy?: string[];
  /** Also engrams whose TTL has passed (removed ones never). */
  includeExpired?: boolean;
  limit: number;
}

/** Deref kinds with a budget of their own (PAS Bus §3.2); `other` covers diff, test and url pointers. */
export const DEREF_KINDS = ['repo', 'artifact', 'sam', 'other'] as const;
export type DerefKind = (typeof DEREF_KINDS)[number];

export interface DerefUsage {
  counts: Record<DerefKind, number>;
  tokens: number;
}

export type DerefReservation = { ok: true; usage: DerefUsage } | { ok: false; usage: DerefUsage };

/** A deref grant (PAS Bus §6.3 `issue_grant(parent, child, pointer, cap)`); its token is signed in bus/grants.ts. */
export interface GrantRecord {
  id: string;
  parentId: string;
  childId: string;
  /** The pointer ref the grant covers, exactly. */
  pointerRef: string;
  capTokens: number;
  issuedMs: number;
  expiresMs: number;
  usedMs?: number;
  usedTokens?: number;
}

export interface BusEventInput {
  tsMs: number;
  /** `less.engram.put`, `less.engram.query`, `less.deref.request`, `less.deref.grant`, `less.budget.reject`, ... */
  type: string;
  agentId?: string;
  role?: string;
  data: Record<string, unknown>;
}

export interface BusEventRecord extends BusEventInput {
  /** Increasing in write order. */
  id: number;
}

export interface BusEventQuery {
  types?: string[];
  agentId?: string;
  sinceMs?: number;
  /** Most events; default 1,000. */
  limit?: number;
}
