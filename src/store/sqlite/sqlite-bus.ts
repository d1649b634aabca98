import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { EngramClaim, EngramScope } from '../../model/engram.js';
import { EngramError } from '../../errors.js';
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
import { translateSqliteError } from './sqlite-errors.js';

type Db = Database.Database;

/** An engrams row as SQLite returns it: index keys still JSON text. */
type SqliteEngramColumns = Omit<EngramColumns, 'index_keys' | 'body'> & { index_keys: string; body: string };

interface GrantColumns {
  id: string;
  parent_id: string;
  child_id: string;
  pointer_ref: string;
  cap_tokens: number;
  issued_ms: number;
  expires_ms: number;
  used_ms: number | null;
  used_tokens: number | null;
}

interface BusEventColumns {
  id: number;
  ts_ms: number;
  type: string;
  agent_id: string | null;
  role: string | null;
  data: string;
}

/**
 * The Engram Bus tables of the SQLite backend (migration 7). Every write that checks a limit runs in one
 * IMMEDIATE transaction or one statement, so it holds against other processes on the same file too.
 */
export class SqliteBus implements BusStorage {
  private readonly stmts: ReturnType<typeof prepare>;

  constructor(private readonly db: Db) {
    this.stmts = prepare(db);
  }

  async putEngram(row: EngramRow, options: { maxPerAgentPerMinute: number }): Promise<PutEngramOutcome> {
    const s = this.stmts;
    const put = this.db.transaction((): PutEngramOutcome => {
      // A duplicate is answered even past the rate limit: it writes nothing, and a retried put must see the
      // engram it stored the first time.
      const prior = s.liveByDedupe.get(row.project, row.dedupeKey, row.createdMs) as SqliteEngramColumns | undefined;
      if (prior) return { status: 'duplicate', row: fromColumns(prior) };
      const recentCount = (s.countRecent.get(row.createdBy, row.createdMs - 60_000) as { n: number }).n;
      if (recentCount >= options.maxPerAgentPerMinute) return { status: 'rateLimited', recentCount };
      const keys = [...new Set(row.indexKeys)];
      const inserted = s.insertEngram.run(
        row.engram.id,
        row.project,
        row.runId,
        row.engram.scope,
        row.engram.kind,
        row.createdBy,
        row.createdMs,
        row.expiresMs,
        row.dedupeKey,
        JSON.stringify(keys),
        JSON.stringify(row.engram),
      );
      if (inserted.changes === 0) throw engramIdConflict(row.engram.id);
      for (const key of keys) {
        s.insertKey.run(key, row.engram.id, row.project, row.engram.scope, row.runId, row.engram.kind, row.createdMs, row.expiresMs);
      }
      return { status: 'stored', row: { ...row, indexKeys: keys } };
    });
    return this.run('storing the engram failed', () => put.immediate());
  }

  async getEngram(id: string): Promise<EngramRow | null> {
    const row = this.run('reading the engram failed', () => this.stmts.byId.get(id) as SqliteEngramColumns | undefined);
    return row ? fromColumns(row) : null;
  }

  async queryEngramsByKeys(query: EngramKeyQuery): Promise<KeyHit[]> {
    checkLimit(query.perKeyLimit, 'perKeyLimit');
    checkLimit(query.limit, 'limit');
    const keys = [...new Set(query.keys)];
    if (keys.length === 0) return [];
    const scopes = new Set(query.scopes ?? ALL_SCOPES);
    const kinds = query.kinds ? JSON.stringify(query.kinds) : null;
    const s = this.stmts;
    const read = this.db.transaction((): Array<{ columns: SqliteEngramColumns; keyWeight: number }> => {
      const counts = new Map<string, { n: number; createdMs: number }>();
      const weights = new Map<string, number>();
      for (const key of keys) {
        // Two bounded index scans per key (see migration 7), merged newest first and cut to the quota.
        const hits: Array<{ engram_id: string; created_ms: number }> = [];
        if (scopes.has('project') || scopes.has('run')) {
          hits.push(
            ...(s.keyOwnProject.all({
              key,
              project: query.project,
              run: query.runId,
              now: query.nowMs,
              projectOk: scopes.has('project') ? 1 : 0,
              runOk: scopes.has('run') ? 1 : 0,
              kinds,
              limit: query.perKeyLimit,
            }) as typeof hits),
          );
        }
        if (scopes.has('org') || scopes.has('global')) {
          hits.push(
            ...(s.keyShared.all({
              key,
              now: query.nowMs,
              orgOk: scopes.has('org') ? 1 : 0,
              globalOk: scopes.has('global') ? 1 : 0,
              kinds,
              limit: query.perKeyLimit,
            }) as typeof hits),
          );
        }
        hits.sort((a, b) => b.created_ms - a.created_ms || (a.engram_id < b.engram_id ? 1 : a.engram_id > b.engram_id ? -1 : 0));
        const kept = hits.slice(0, query.perKeyLimit);
        const idf = Math.log(1 + query.perKeyLimit / Math.max(1, kept.length));
        for (const hit of kept) {
          const c = counts.get(hit.engram_id);
          if (c) c.n += idf;
          else counts.set(hit.engram_id, { n: idf, createdMs: hit.created_ms });
        }
      }
      for (const [id, c] of counts) weights.set(id, c.n);
      // Only the engrams with the highest key weight are read in full (bodies are the expensive part).
      const ids = [...counts]
        .sort((a, b) => b[1].n - a[1].n || b[1].createdMs - a[1].createdMs || (a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : 0))
        .slice(0, query.limit)
        .map(([id]) => id);
      const rows = ids.length === 0 ? [] : (s.liveByIds.all(JSON.stringify(ids)) as SqliteEngramColumns[]);
      return rows.map((columns) => ({ columns, keyWeight: weights.get(columns.id) ?? 0 }));
    });
    const wanted = new Set(keys);
    return this.run('querying engrams failed', () => read()).map(({ columns, keyWeight }) => {
      const row = fromColumns(columns);
      return { row, matchedKeys: row.indexKeys.filter((k) => wanted.has(k)).length, keyWeight };
    });
  }

  async listEngrams(query: EngramListQuery): Promise<EngramRow[]> {
    checkLimit(query.limit, 'limit');
    const filters = ['removed_ms IS NULL'];
    const filterParams: unknown[] = [];
    if (!query.includeExpired) {
      filters.push('expires_ms > ?');
      filterParams.push(query.nowMs);
    }
    if (query.kinds) {
      filters.push('kind IN (SELECT value FROM json_each(?))');
      filterParams.push(JSON.stringify(query.kinds));
    }
    if (query.createdBy) {
      filters.push('created_by IN (SELECT value FROM json_each(?))');
      filterParams.push(JSON.stringify(query.createdBy));
    }
    // One newest-first scan per visibility branch (engrams_listing, engrams_shared), merged and cut.
    const order = 'ORDER BY created_ms DESC, id DESC LIMIT ?';
    const params: unknown[] = [];
    const selects = visibilityBranches(query).map((branch) => {
      params.push(...branch.params, ...filterParams, query.limit);
      return `SELECT * FROM (SELECT * FROM engrams WHERE ${branch.sql} AND ${filters.join(' AND ')} ${order})`;
    });
    if (selects.length === 0) return [];
    params.push(query.limit);
    const sql = `SELECT * FROM (${selects.join(' UNION ALL ')}) ${order}`;
    return this.run('listing engrams failed', () => this.db.prepare(sql).all(...params) as SqliteEngramColumns[]).map(fromColumns);
  }

  async removeEngram(id: string, removedBy: string, removedMs: number): Promise<boolean> {
    return this.run('removing the engram failed', () => this.stmts.remove.run(removedMs, removedBy, id).changes > 0);
  }

  async setEngramScope(id: string, scope: EngramScope, changedBy: string, changedMs: number): Promise<boolean> {
    const s = this.stmts;
    const promote = this.db.transaction((): boolean => {
      if (s.setScope.run(scope, changedBy, changedMs, id, changedMs).changes === 0) return false;
      // Key queries filter on the copied scope: it moves with the engram, in the same transaction.
      s.setKeyScope.run(scope, id, id);
      return true;
    });
    return this.run('changing the engram scope failed', () => promote.immediate());
  }

  async beginAgentTurn(agentId: string): Promise<number> {
    // One upsert: atomic against other processes writing the same file.
    return this.run('starting the agent turn failed', () => (this.stmts.nextTurn.get(agentId) as { turn: number }).turn);
  }

  async currentAgentTurn(agentId: string): Promise<number> {
    const row = this.run('reading the agent turn failed', () => this.stmts.turn.get(agentId) as { turn: number } | undefined);
    return row?.turn ?? 0;
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
    // One conditional upsert (see the PostgreSQL backend for the same statement): the check and the
    // increment cannot be split by another writer.
    const row = this.run(
      'reserving the deref failed',
      () => this.stmts.reserve[kind].get({ agentId, turn, tokens, maxCount, maxTokens }) as DerefUsageColumns | undefined,
    );
    if (row) return { ok: true, usage: usageFromColumns(row) };
    return { ok: false, usage: await this.derefUsage(agentId, turn) };
  }

  async releaseDeref(agentId: string, turn: number, kind: DerefKind, count: 0 | 1, tokens: number): Promise<void> {
    checkDerefAmount(kind, tokens);
    this.run('releasing the deref failed', () => this.stmts.release[kind].run({ count, tokens, agentId, turn }));
  }

  async derefUsage(agentId: string, turn: number): Promise<DerefUsage> {
    const row = this.run('reading the deref usage failed', () => this.stmts.usage.get(agentId, turn) as DerefUsageColumns | undefined);
    return usageFromColumns(row);
  }

  async putGrant(g: GrantRecord): Promise<void> {
    const changes = this.run(
      'storing the grant failed',
      () =>
        this.stmts.insertGrant.run(g.id, g.parentId, g.childId, g.pointerRef, g.capTokens, g.issuedMs, g.expiresMs, g.usedMs ?? null, g.usedTokens ?? null)
          .changes,
    );
    if (changes === 0) throw grantIdConflict(g.id);
  }

  async getGrant(id: string): Promise<GrantRecord | null> {
    const row = this.run('reading the grant failed', () => this.stmts.grant.get(id) as GrantColumns | undefined);
    return row ? grantFromColumns(row) : null;
  }

  async useGrant(id: string, usedTokens: number, usedMs: number): Promise<boolean> {
    return this.run('using the grant failed', () => this.stmts.useGrant.run(usedMs, usedTokens, id).changes > 0);
  }

  async getOrCreateSecret(name: string): Promise<string> {
    const key = SECRET_KEY_PREFIX + name;
    return this.run('reading the secret failed', () => {
      // Another process may create it first: insert-if-absent, then read whichever won.
      this.stmts.insertMeta.run(key, randomBytes(32).toString('hex'));
      return (this.stmts.meta.get(key) as { value: string }).value;
    });
  }

  async logBusEvents(events: BusEventInput[]): Promise<void> {
    if (events.length === 0) return;
    const write = this.db.transaction(() => {
      for (const e of events) this.stmts.insertEvent.run(e.tsMs, e.type, e.agentId ?? null, e.role ?? null, JSON.stringify(e.data));
    });
    this.run('logging bus events failed', () => write.immediate());
  }

  async listBusEvents(query: BusEventQuery = {}): Promise<BusEventRecord[]> {
    const limit = busEventLimit(query);
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.types) {
      where.push('type IN (SELECT value FROM json_each(?))');
      params.push(JSON.stringify(query.types));
    }
    if (query.agentId !== undefined) {
      where.push('agent_id = ?');
      params.push(query.agentId);
    }
    if (query.sinceMs !== undefined) {
      where.push('ts_ms >= ?');
      params.push(query.sinceMs);
    }
    params.push(limit);
    const sql = `SELECT * FROM bus_events ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ts_ms, id LIMIT ?`;
    const rows = this.run('listing bus events failed', () => this.db.prepare(sql).all(...params) as BusEventColumns[]);
    return rows.map((r) => {
      const event: BusEventRecord = { id: r.id, tsMs: r.ts_ms, type: r.type, data: JSON.parse(r.data) as Record<string, unknown> };
      if (r.agent_id !== null) event.agentId = r.agent_id;
      if (r.role !== null) event.role = r.role;
      return event;
    });
  }

  /** Runs a statement, translating driver failures (a closed store, a lock timeout, a trigger). */
  private run<T>(context: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof EngramError) throw err;
      throw translateSqliteError(err, context);
    }
  }
}

/**
 * The visibility rule of LESS §4.3 / §13.3 on the engrams table, as the conditions of its two branches
 * (either may be absent when `scopes` leaves out all of its scopes): the reader's own project, where `IS`
 * makes a null project equal a null one, and the shared scopes, written as the partial index's predicate.
 */
function visibilityBranches(v: EngramVisibility): Array<{ sql: string; params: unknown[] }> {
  const scopes = v.scopes ?? ALL_SCOPES;
  const branches: Array<{ sql: string; params: unknown[] }> = [];
  const own: string[] = [];
  if (scopes.includes('project')) own.push(`scope = 'project'`);
  if (scopes.includes('run')) own.push(`(scope = 'run' AND run_id = ?)`);
  if (own.length > 0) branches.push({ sql: `project IS ? AND (${own.join(' OR ')})`, params: [v.project, ...(scopes.includes('run') ? [v.runId] : [])] });
  const shared = SHARED_SCOPES.filter((x) => scopes.includes(x));
  if (shared.length > 0) {
    const only = shared.length < SHARED_SCOPES.length ? ` AND scope = '${shared[0]}'` : '';
    branches.push({ sql: `scope IN ('org', 'global')${only}`, params: [] });
  }
  return branches;
}

function fromColumns(c: SqliteEngramColumns): EngramRow {
  return rowFromColumns({ ...c, index_keys: JSON.parse(c.index_keys) as string[], body: JSON.parse(c.body) as EngramClaim });
}

function grantFromColumns(r: GrantColumns): GrantRecord {
  const g: GrantRecord = {
    id: r.id,
    parentId: r.parent_id,
    childId: r.child_id,
    pointerRef: r.pointer_ref,
    capTokens: r.cap_tokens,
    issuedMs: r.issued_ms,
    expiresMs: r.expires_ms,
  };
  if (r.used_ms !== null) g.usedMs = r.used_ms;
  if (r.used_tokens !== null) g.usedTokens = r.used_tokens;
  return g;
}

function prepare(db: Db) {
  const kinds = `(@kinds IS NULL OR kind IN (SELECT value FROM json_each(@kinds)))`;
  const perKind = <T>(make: (column: DerefKind) => T): Record<DerefKind, T> => ({
    repo: make('repo'),
    artifact: make('artifact'),
    sam: make('sam'),
    other: make('other'),
  });
  return {
    liveByDedupe: db.prepare(
      `SELECT * FROM engrams WHERE project IS ? AND dedupe_key = ? AND removed_ms IS NULL AND expires_ms > ?
       ORDER BY created_ms DESC LIMIT 1`,
    ),
    // The minute before the new engram, and anything stamped later (see the PostgreSQL backend for why).
    countRecent: db.prepare('SELECT count(*) AS n FROM engrams WHERE created_by = ? AND created_ms > ?'),
    insertEngram: db.prepare(
      `INSERT INTO engrams (id, project, run_id, scope, kind, created_by, created_ms, expires_ms, dedupe_key, index_keys, body)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ),
    insertKey: db.prepare(
      `INSERT INTO engram_keys (key, engram_id, project, scope, run_id, kind, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    byId: db.prepare('SELECT * FROM engrams WHERE id = ?'),
    keyOwnProject: db.prepare(
      `SELECT engram_id, created_ms FROM engram_keys
       WHERE key = @key AND project IS @project AND expires_ms > @now
         AND ((scope = 'project' AND @projectOk) OR (scope = 'run' AND run_id = @run AND @runOk)) AND ${kinds}
       ORDER BY created_ms DESC, engram_id DESC LIMIT @limit`,
    ),
    keyShared: db.prepare(
      `SELECT engram_id, created_ms FROM engram_keys
       WHERE key = @key AND scope IN ('org', 'global') AND expires_ms > @now
         AND ((scope = 'org' AND @orgOk) OR (scope = 'global' AND @globalOk)) AND ${kinds}
       ORDER BY created_ms DESC, engram_id DESC LIMIT @limit`,
    ),
    liveByIds: db.prepare(`SELECT * FROM engrams WHERE id IN (SELECT value FROM json_each(?)) AND removed_ms IS NULL`),
    remove: db.prepare('UPDATE engrams SET removed_ms = ?, removed_by = ? WHERE id = ? AND removed_ms IS NULL'),
    setScope: db.prepare(
      `UPDATE engrams SET scope = ?, scope_changed_by = ?, scope_changed_ms = ? WHERE id = ? AND removed_ms IS NULL AND expires_ms > ?`,
    ),
    // Through the primary key (key, engram_id): the engram's own key list names the rows.
    setKeyScope: db.prepare(
      `UPDATE engram_keys SET scope = ?
       WHERE engram_id = ? AND key IN (SELECT value FROM json_each((SELECT index_keys FROM engrams WHERE id = ?)))`,
    ),
    nextTurn: db.prepare(
      `INSERT INTO agent_turns (agent_id, turn) VALUES (?, 1)
       ON CONFLICT (agent_id) DO UPDATE SET turn = agent_turns.turn + 1 RETURNING turn`,
    ),
    turn: db.prepare('SELECT turn FROM agent_turns WHERE agent_id = ?'),
    // The first reservation of a turn inserts the row (when it fits the limits at all); later ones update it
    // only while the new totals stay within the limits. No row back: refused, nothing changed.
    reserve: perKind((k) =>
      db.prepare(
        `INSERT INTO deref_usage (agent_id, turn, ${k}, tokens)
         SELECT @agentId, @turn, 1, @tokens WHERE 1 <= @maxCount AND @tokens <= @maxTokens
         ON CONFLICT (agent_id, turn) DO UPDATE SET ${k} = deref_usage.${k} + 1, tokens = deref_usage.tokens + @tokens
           WHERE deref_usage.${k} + 1 <= @maxCount AND deref_usage.tokens + @tokens <= @maxTokens
         RETURNING repo, artifact, sam, other, tokens`,
      ),
    ),
    release: perKind((k) =>
      db.prepare(
        `UPDATE deref_usage SET ${k} = max(${k} - @count, 0), tokens = max(tokens - @tokens, 0) WHERE agent_id = @agentId AND turn = @turn`,
      ),
    ),
    usage: db.prepare('SELECT repo, artifact, sam, other, tokens FROM deref_usage WHERE agent_id = ? AND turn = ?'),
    insertGrant: db.prepare(
      `INSERT INTO grants (id, parent_id, child_id, pointer_ref, cap_tokens, issued_ms, expires_ms, used_ms, used_tokens)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ),
    grant: db.prepare('SELECT * FROM grants WHERE id = ?'),
    useGrant: db.prepare('UPDATE grants SET used_ms = ?, used_tokens = ? WHERE id = ? AND used_ms IS NULL'),
    insertMeta: db.prepare('INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING'),
    meta: db.prepare('SELECT value FROM store_meta WHERE key = ?'),
    insertEvent: db.prepare('INSERT INTO bus_events (ts_ms, type, agent_id, role, data) VALUES (?, ?, ?, ?, ?)'),
  };
}
