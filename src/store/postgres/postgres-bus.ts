import { randomBytes } from 'node:crypto';
import type { EngramScope } from '../../model/engram.js';
import {
  ALL_SCOPES,
  busEventLimit,
  checkDerefAmount,
  checkLimit,
  derefLimits,
  engramIdConflict,
  grantIdConflict,
  rowFromColumns,
  SECRET_KEY_PREFIX,
  SHARED_SCOPES,
  usageFromColumns,
  type DerefUsageColumns,
  type EngramColumns,
} from '../bus-record.js';
import type {
  BusEventInput,
  BusEventQuery,
  BusEventRecord,
  BusStorage,
  DerefKind,
  DerefReservation,
  DerefUsage,
  EngramKeyQuery,
  KeyHit,
  EngramListQuery,
  EngramRow,
  EngramVisibility,
  GrantRecord,
  PutEngramOutcome,
} from '../bus-storage.js';
import type { PgQueryable } from './pg-connection.js';

/** Runs one statement on the backend's pool, translating failures (the backend's own `query`). */
export type PgBusQuery = <R>(sql: string, params: unknown[], context: string) => Promise<R[]>;
/** Runs `fn` in one READ COMMITTED transaction (the backend's own `transaction`). */
export type PgBusTransaction = <T>(context: string, fn: (c: PgQueryable) => Promise<T>) => Promise<T>;

interface GrantRow {
  id: string;
  parent_id: string;
  child_id: string;
  pointer_ref: string;
  cap_tokens: string;
  issued_ms: string;
  expires_ms: string;
  used_ms: string | null;
  used_tokens: string | null;
}

interface BusEventRow {
  id: string;
  ts_ms: string;
  type: string;
  agent_id: string | null;
  role: string | null;
  data: Record<string, unknown>;
}

const ENGRAM_COLUMNS = `id, project, run_id, scope, kind, created_by, created_ms, expires_ms, dedupe_key, index_keys, body,
  removed_ms, removed_by, scope_changed_by, scope_changed_ms`;

/**
 * The Engram Bus tables of the PostgreSQL backend (migration 7). Limits hold across every server sharing the
 * schema: engram writes are serialised per writer (and per dedupe key) by transaction-scoped advisory locks,
 * deref reservations are one conditional upsert, and a grant is used by one conditional update.
 */
export class PostgresBus implements BusStorage {
  constructor(
    /** The quoted schema identifier. */
    private readonly s: string,
    private readonly query: PgBusQuery,
    private readonly transaction: PgBusTransaction,
  ) {}

  async putEngram(row: EngramRow, options: { maxPerAgentPerMinute: number }): Promise<PutEngramOutcome> {
    const s = this.s;
    const keys = [...new Set(row.indexKeys)];
    return this.transaction('storing the engram failed', async (c) => {
      // Two advisory locks, always in this order (so two puts never wait on each other in a cycle), held to
      // the end of the transaction: the writer's, so its count and insert are not split by another of its
      // puts on any server; then the dedupe key's, so two writers cannot both store the same claim. The
      // two-key form keeps these apart from other advisory locks; the schema keeps test schemas apart.
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [`${s}:engram-writer`, row.createdBy]);
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [`${s}:engram-dedupe`, JSON.stringify([row.project, row.dedupeKey])]);

      // Read after the locks: under READ COMMITTED each statement sees everything committed before it.
      const prior = (
        await c.query<EngramColumns>(
          `SELECT ${ENGRAM_COLUMNS} FROM ${s}.engrams
           WHERE ${projectEquals('$1', row.project)} AND dedupe_key = $2 AND removed_ms IS NULL AND expires_ms > $3
           ORDER BY created_ms DESC LIMIT 1`,
          [row.project, row.dedupeKey, row.createdMs],
        )
      ).rows[0];
      // A duplicate is answered even past the rate limit: it writes nothing, and a retried put must see the
      // engram it stored the first time.
      if (prior) return { status: 'duplicate', row: rowFromColumns(prior) };

      // The minute before the new engram, and any engram stamped later: puts of one writer reach this lock
      // in any order (and servers' clocks differ), so an engram stamped after createdMs may already be
      // stored, and leaving it out let 8 of 20 concurrent puts through a limit of 5.
      const counted = await c.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${s}.engrams WHERE created_by = $1 AND created_ms > $2`,
        [row.createdBy, row.createdMs - 60_000],
      );
      const recentCount = counted.rows[0]!.n;
      if (recentCount >= options.maxPerAgentPerMinute) return { status: 'rateLimited', recentCount };

      const inserted = await c.query(
        `INSERT INTO ${s}.engrams (id, project, run_id, scope, kind, created_by, created_ms, expires_ms, dedupe_key, index_keys, body)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text[], $11::json) ON CONFLICT (id) DO NOTHING RETURNING id`,
        [
          row.engram.id,
          row.project,
          row.runId,
          row.engram.scope,
          row.engram.kind,
          row.createdBy,
          row.createdMs,
          row.expiresMs,
          row.dedupeKey,
          keys,
          JSON.stringify(row.engram),
        ],
      );
      if (inserted.rows.length === 0) throw engramIdConflict(row.engram.id);
      if (keys.length > 0) {
        await c.query(
          `INSERT INTO ${s}.engram_keys (key, engram_id, project, scope, run_id, kind, created_ms, expires_ms)
           SELECT k, $2, $3, $4, $5, $6, $7, $8 FROM unnest($1::text[]) AS k`,
          [keys, row.engram.id, row.project, row.engram.scope, row.runId, row.engram.kind, row.createdMs, row.expiresMs],
        );
      }
      return { status: 'stored', row: { ...row, indexKeys: keys } };
    });
  }

  async getEngram(id: string): Promise<EngramRow | null> {
    const rows = await this.query<EngramColumns>(`SELECT ${ENGRAM_COLUMNS} FROM ${this.s}.engrams WHERE id = $1`, [id], 'reading the engram failed');
    return rows[0] ? rowFromColumns(rows[0]) : null;
  }

  async queryEngramsByKeys(query: EngramKeyQuery): Promise<KeyHit[]> {
    checkLimit(query.perKeyLimit, 'perKeyLimit');
    checkLimit(query.limit, 'limit');
    const keys = [...new Set(query.keys)];
    const s = this.s;
    // $1 keys, $2 now, $3 per-key limit, $4 kinds (null: all), then the reader's project and run as used.
    const params: unknown[] = [keys, query.nowMs, query.perKeyLimit, query.kinds ?? null];
    const common = `key = k.key AND expires_ms > $2 AND ($4::text[] IS NULL OR kind = ANY($4::text[]))`;
    const order = 'ORDER BY created_ms DESC, engram_id DESC LIMIT $3';
    // Two bounded index scans per key (engram_keys_project, engram_keys_shared), merged newest first and cut
    // to the quota.
    const branches = visibilityBranches(query, (value) => `$${params.push(value)}`).map(
      (branch) => `(SELECT engram_id, created_ms FROM ${s}.engram_keys WHERE ${common} AND ${branch} ${order})`,
    );
    if (keys.length === 0 || branches.length === 0) return [];
    // Keys weigh by rarity (IDF over the postings read per key); only the engrams with the highest weight are
    // read in full (bodies are the expensive part).
    const limit = `$${params.push(query.limit)}`;
    const rows = await this.query<EngramColumns & { key_weight: number }>(
      `WITH hits AS (
         SELECT k.key, hit.engram_id, hit.created_ms FROM unnest($1::text[]) AS k(key)
         CROSS JOIN LATERAL (SELECT engram_id, created_ms FROM (${branches.join(' UNION ALL ')}) AS b ${order}) AS hit),
       df AS (SELECT key, count(*) AS n FROM hits GROUP BY key),
       scored AS (
         SELECT h.engram_id, sum(ln(1 + $3::float8 / df.n)) AS w, max(h.created_ms) AS c
         FROM hits h JOIN df USING (key) GROUP BY h.engram_id
         ORDER BY w DESC, c DESC, h.engram_id DESC LIMIT ${limit})
       SELECT ${ENGRAM_COLUMNS.split(',').map((c) => `e.${c.trim()}`).join(', ')}, scored.w AS key_weight
       FROM ${s}.engrams e JOIN scored ON scored.engram_id = e.id
       WHERE e.removed_ms IS NULL`,
      params,
      'querying engrams failed',
    );
    const wanted = new Set(keys);
    return rows.map((columns) => {
      const row = rowFromColumns(columns);
      return { row, matchedKeys: row.indexKeys.filter((k) => wanted.has(k)).length, keyWeight: Number(columns.key_weight) };
    });
  }

  async listEngrams(query: EngramListQuery): Promise<EngramRow[]> {
    checkLimit(query.limit, 'limit');
    const params: unknown[] = [];
    const bind = (value: unknown): string => `$${params.push(value)}`;
    const filters = ['removed_ms IS NULL'];
    if (!query.includeExpired) filters.push(`expires_ms > ${bind(query.nowMs)}`);
    if (query.kinds) filters.push(`kind = ANY(${bind(query.kinds)}::text[])`);
    if (query.createdBy) filters.push(`created_by = ANY(${bind(query.createdBy)}::text[])`);
    const order = `ORDER BY created_ms DESC, id DESC LIMIT ${bind(query.limit)}`;
    // One newest-first scan per visibility branch (engrams_listing, engrams_shared), merged and cut.
    const selects = visibilityBranches(query, bind).map(
      (branch) => `(SELECT ${ENGRAM_COLUMNS} FROM ${this.s}.engrams WHERE ${branch} AND ${filters.join(' AND ')} ${order})`,
    );
    if (selects.length === 0) return [];
    const rows = await this.query<EngramColumns>(`SELECT * FROM (${selects.join(' UNION ALL ')}) AS visible ${order}`, params, 'listing engrams failed');
    return rows.map(rowFromColumns);
  }

  async removeEngram(id: string, removedBy: string, removedMs: number): Promise<boolean> {
    const rows = await this.query(
      `UPDATE ${this.s}.engrams SET removed_ms = $1, removed_by = $2 WHERE id = $3 AND removed_ms IS NULL RETURNING id`,
      [removedMs, removedBy, id],
      'removing the engram failed',
    );
    return rows.length > 0;
  }

  async setEngramScope(id: string, scope: EngramScope, changedBy: string, changedMs: number): Promise<boolean> {
    const s = this.s;
    return this.transaction('changing the engram scope failed', async (c) => {
      const updated = await c.query<{ index_keys: string[] }>(
        `UPDATE ${s}.engrams SET scope = $1, scope_changed_by = $2, scope_changed_ms = $3
         WHERE id = $4 AND removed_ms IS NULL AND expires_ms > $3 RETURNING index_keys`,
        [scope, changedBy, changedMs, id],
      );
      const row = updated.rows[0];
      if (!row) return false;
      // Key queries filter on the copied scope: it moves with the engram, in the same transaction, through
      // the primary key (key, engram_id).
      await c.query(`UPDATE ${s}.engram_keys SET scope = $1 WHERE key = ANY($2::text[]) AND engram_id = $3`, [scope, row.index_keys, id]);
      return true;
    });
  }

  async beginAgentTurn(agentId: string): Promise<number> {
    const rows = await this.query<{ turn: number }>(
      `INSERT INTO ${this.s}.agent_turns AS t (agent_id, turn) VALUES ($1, 1)
       ON CONFLICT (agent_id) DO UPDATE SET turn = t.turn + 1 RETURNING turn`,
      [agentId],
      'starting the agent turn failed',
    );
    return rows[0]!.turn;
  }

  async currentAgentTurn(agentId: string): Promise<number> {
    const rows = await this.query<{ turn: number }>(`SELECT turn FROM ${this.s}.agent_turns WHERE agent_id = $1`, [agentId], 'reading the agent turn failed');
    return rows[0]?.turn ?? 0;
  }

  async reserveDeref(
    agentId: string,
    turn: number,
    kind: DerefKind,
    tokens: number,
    limits: { maxCount: number; maxTokens: number },
  ): Promise<DerefReservation> {
    checkDerefAmount(kind, tokens);
    const { maxCount, maxTokens } = derefLimits(limits);
    // One statement: the first reservation of a turn inserts the row (when it fits the limits at all); later
    // ones update it only while the new totals stay within the limits. ON CONFLICT DO UPDATE locks the row
    // and evaluates its WHERE on the newest committed version, so concurrent reservations from any server
    // are checked one after another. No row back: refused, nothing changed.
    const rows = await this.query<DerefUsageColumns>(
      `INSERT INTO ${this.s}.deref_usage AS u (agent_id, turn, ${kind}, tokens)
       SELECT $1::text, $2::int, 1, $3::bigint WHERE 1 <= $4::bigint AND $3::bigint <= $5::bigint
       ON CONFLICT (agent_id, turn) DO UPDATE SET ${kind} = u.${kind} + 1, tokens = u.tokens + excluded.tokens
         WHERE u.${kind} + 1 <= $4::bigint AND u.tokens + excluded.tokens <= $5::bigint
       RETURNING repo, artifact, sam, other, tokens`,
      [agentId, turn, tokens, maxCount, maxTokens],
      'reserving the deref failed',
    );
    if (rows[0]) return { ok: true, usage: usageFromColumns(rows[0]) };
    return { ok: false, usage: await this.derefUsage(agentId, turn) };
  }

  async releaseDeref(agentId: string, turn: number, kind: DerefKind, count: 0 | 1, tokens: number): Promise<void> {
    checkDerefAmount(kind, tokens);
    await this.query(
      `UPDATE ${this.s}.deref_usage SET ${kind} = GREATEST(${kind} - $1::int, 0), tokens = GREATEST(tokens - $2::bigint, 0)
       WHERE agent_id = $3 AND turn = $4`,
      [count, tokens, agentId, turn],
      'releasing the deref failed',
    );
  }

  async derefUsage(agentId: string, turn: number): Promise<DerefUsage> {
    const rows = await this.query<DerefUsageColumns>(
      `SELECT repo, artifact, sam, other, tokens FROM ${this.s}.deref_usage WHERE agent_id = $1 AND turn = $2`,
      [agentId, turn],
      'reading the deref usage failed',
    );
    return usageFromColumns(rows[0]);
  }

  async putGrant(g: GrantRecord): Promise<void> {
    const rows = await this.query(
      `INSERT INTO ${this.s}.grants (id, parent_id, child_id, pointer_ref, cap_tokens, issued_ms, expires_ms, used_ms, used_tokens)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING RETURNING id`,
      [g.id, g.parentId, g.childId, g.pointerRef, g.capTokens, g.issuedMs, g.expiresMs, g.usedMs ?? null, g.usedTokens ?? null],
      'storing the grant failed',
    );
    if (rows.length === 0) throw grantIdConflict(g.id);
  }

  async getGrant(id: string): Promise<GrantRecord | null> {
    const rows = await this.query<GrantRow>(`SELECT * FROM ${this.s}.grants WHERE id = $1`, [id], 'reading the grant failed');
    return rows[0] ? grantFromRow(rows[0]) : null;
  }

  async useGrant(id: string, usedTokens: number, usedMs: number): Promise<boolean> {
    // The row lock makes a second concurrent update wait, then re-check used_ms IS NULL and match nothing.
    const rows = await this.query(
      `UPDATE ${this.s}.grants SET used_ms = $1, used_tokens = $2 WHERE id = $3 AND used_ms IS NULL RETURNING id`,
      [usedMs, usedTokens, id],
      'using the grant failed',
    );
    return rows.length > 0;
  }

  async getOrCreateSecret(name: string): Promise<string> {
    const key = SECRET_KEY_PREFIX + name;
    // Two statements, not one: the read must see a row another server committed while our insert waited on
    // it, which a single statement's snapshot would not.
    await this.query(
      `INSERT INTO ${this.s}.store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`,
      [key, randomBytes(32).toString('hex')],
      'creating the secret failed',
    );
    const rows = await this.query<{ value: string }>(`SELECT value FROM ${this.s}.store_meta WHERE key = $1`, [key], 'reading the secret failed');
    return rows[0]!.value;
  }

  async logBusEvents(events: BusEventInput[]): Promise<void> {
    if (events.length === 0) return;
    // One statement: rows keep the array's order (WITH ORDINALITY), so ids increase in write order.
    await this.query(
      `INSERT INTO ${this.s}.bus_events (ts_ms, type, agent_id, role, data)
       SELECT ts_ms, type, agent_id, role, data::json
       FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS e(ts_ms, type, agent_id, role, data, n)
       ORDER BY n`,
      [
        events.map((e) => e.tsMs),
        events.map((e) => e.type),
        events.map((e) => e.agentId ?? null),
        events.map((e) => e.role ?? null),
        events.map((e) => JSON.stringify(e.data)),
      ],
      'logging bus events failed',
    );
  }

  async listBusEvents(query: BusEventQuery = {}): Promise<BusEventRecord[]> {
    const limit = busEventLimit(query);
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.types) {
      params.push(query.types);
      where.push(`type = ANY($${params.length}::text[])`);
    }
    if (query.agentId !== undefined) {
      params.push(query.agentId);
      where.push(`agent_id = $${params.length}`);
    }
    if (query.sinceMs !== undefined) {
      params.push(query.sinceMs);
      where.push(`ts_ms >= $${params.length}`);
    }
    params.push(limit);
    const rows = await this.query<BusEventRow>(
      `SELECT * FROM ${this.s}.bus_events ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ts_ms, id LIMIT $${params.length}`,
      params,
      'listing bus events failed',
    );
    return rows.map((r) => {
      const event: BusEventRecord = { id: Number(r.id), tsMs: Number(r.ts_ms), type: r.type, data: r.data };
      if (r.agent_id !== null) event.agentId = r.agent_id;
      if (r.role !== null) event.role = r.role;
      return event;
    });
  }
}

/**
 * `project` equals the reader's project, a null project equalling a null one. Written as `= $n` or `IS NULL`
 * rather than `IS NOT DISTINCT FROM $n`, which no index can serve. The parameter is bound either way.
 */
function projectEquals(placeholder: string, project: string | null): string {
  return project === null ? `(project IS NULL AND ${placeholder}::text IS NULL)` : `project = ${placeholder}`;
}

/**
 * The visibility rule of LESS §4.3 / §13.3 as the conditions of its two branches (either may be absent when
 * `scopes` leaves out all of its scopes): the reader's own project (project and run scope), and the shared
 * scopes, written as the literal predicate of the partial indexes so the planner can use them. `bind` adds a
 * parameter and returns its placeholder. The same shape serves engrams and engram_keys.
 */
function visibilityBranches(v: EngramVisibility, bind: (value: unknown) => string): string[] {
  const scopes = v.scopes ?? ALL_SCOPES;
  const branches: string[] = [];
  const own: string[] = [];
  if (scopes.includes('project')) own.push(`scope = 'project'`);
  if (scopes.includes('run')) own.push(`(scope = 'run' AND run_id = ${bind(v.runId)})`);
  if (own.length > 0) branches.push(`${projectEquals(bind(v.project), v.project)} AND (${own.join(' OR ')})`);
  const shared = SHARED_SCOPES.filter((x) => scopes.includes(x));
  if (shared.length > 0) branches.push(`scope IN ('org', 'global')${shared.length < SHARED_SCOPES.length ? ` AND scope = '${shared[0]}'` : ''}`);
  return branches;
}

function grantFromRow(r: GrantRow): GrantRecord {
  const g: GrantRecord = {
    id: r.id,
    parentId: r.parent_id,
    childId: r.child_id,
    pointerRef: r.pointer_ref,
    capTokens: Number(r.cap_tokens),
    issuedMs: Number(r.issued_ms),
    expiresMs: Number(r.expires_ms),
  };
  if (r.used_ms !== null) g.usedMs = Number(r.used_ms);
  if (r.used_tokens !== null) g.usedTokens = Number(r.used_tokens);
  return g;
}
