import type { z } from 'zod';
import { EngramError, invalidInputFromZod, isEngramError } from '../errors.js';
import type { EventRecord } from '../model/event.js';
import type { EventId, SessionId } from '../model/ids.js';
import type { TaskState, TaskStateUpdate, TaskStateVersion } from '../model/task-state.js';
import { EMPTY_TASK_STATE, taskStateSchema, taskStateUpdateSchema } from '../model/task-state.js';
import type { AppendOptions, StorageBackend } from '../store/backend.js';
import type { Ingestor } from './ingest.js';
import { validateSessionId } from './ingest.js';
import { isPurged } from './purge.js';

/** Concurrent updates of one card retry this often before giving up (each retry re-reads and re-merges). */
const MAX_UPDATE_ATTEMPTS = 8;
const VERSION_KEY_PREFIX = 'task_state:v';

export interface TaskStateUpdateOptions {
  /** The turn whose work produced the update. Default: the session's latest turn. */
  producedByTurn?: number;
  /** Replace the whole card instead of merging fields. */
  replace?: boolean;
  /** Who writes (see AppendOptions): the project a new session gets, the one an existing session must have. */
  owner?: AppendOptions;
}

/**
 * The per-session task state card (ENGRAM §4.3): versioned, schema-checked, lossless. Every update is
 * stored as a new `task_state` event whose idempotency key is its version number, so two writers racing
 * on one card cannot both become version N: the loser re-reads, re-merges and retries.
 */
export class TaskStateStore {
  private readonly extensions = new Map<string, z.ZodType>();

  constructor(
    private readonly store: StorageBackend,
    private readonly ingestor: Ingestor,
  ) {}

  /** Registers the schema of an extension slot; updates of `extensions[name]` are validated against it. */
  registerExtension(name: string, schema: z.ZodType): void {
    if (!/^[a-z][a-z0-9_.-]{0,63}$/.test(name)) {
      throw new EngramError('INVALID_INPUT', `extension name "${name}": use 1-64 lowercase letters, digits, _ . -`, { field: 'name' });
    }
    this.extensions.set(name, schema);
  }

  /** The current card, or null for a session that has none yet. */
  async get(sessionId: string): Promise<TaskStateVersion | null> {
    const id = validateSessionId(sessionId);
    const [latest] = await this.store.listEvents({ sessionId: id, kinds: ['task_state'], order: 'desc', limit: 1 });
    return latest ? toVersion(latest) : null;
  }

  /** Versions, newest first. */
  async history(sessionId: string, options: { limit?: number } = {}): Promise<TaskStateVersion[]> {
    const id = validateSessionId(sessionId);
    const events = await this.store.listEvents({ sessionId: id, kinds: ['task_state'], order: 'desc', ...(options.limit ? { limit: options.limit } : {}) });
    return events.map(toVersion);
  }

  /**
   * Validates a partial update (fields replace the stored ones; `extensions` merge by key, null removes one),
   * stores the merged card as the next version and returns it. Invalid input is rejected naming the field;
   * nothing is stored then.
   */
  async update(sessionId: string, update: TaskStateUpdate, options: TaskStateUpdateOptions = {}): Promise<TaskStateVersion> {
    const id = validateSessionId(sessionId);
    const parsed = taskStateUpdateSchema.safeParse(update);
    if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, 'taskState');
    const patch = parsed.data;
    this.validateExtensions(patch.extensions ?? {});
    if (patch.keyEvents && patch.keyEvents.length > 0) await this.checkKeyEvents(patch.keyEvents as EventId[]);

    for (let attempt = 1; ; attempt++) {
      const current = await this.get(id);
      const base = options.replace ? EMPTY_TASK_STATE : (current?.state ?? EMPTY_TASK_STATE);
      const next = merge(base, patch);
      const version = (current?.version ?? 0) + 1;
      const producedByTurn = options.producedByTurn ?? (await this.store.getSession(id))?.lastTurn ?? 0;
      try {
        const [outcome] = await this.ingestor.appendInternal(id, [
          {
            kind: 'task_state',
            content: stableJson(next),
            key: `${VERSION_KEY_PREFIX}${version}`,
            tags: ['task_state'],
            meta: { version, producedByTurn },
            ...(next.taskId ? { taskId: next.taskId } : {}),
          },
        ], options.owner);
        const record = outcome!.record;
        // Same key and same content: a retry of this very update, already stored.
        return toVersion(record);
      } catch (err) {
        if (isEngramError(err, 'IDEMPOTENCY_CONFLICT') && attempt < MAX_UPDATE_ATTEMPTS) continue;
        throw err;
      }
    }
  }

  private validateExtensions(extensions: Record<string, unknown>): void {
    for (const [name, value] of Object.entries(extensions)) {
      if (value === null) continue;
      const schema = this.extensions.get(name);
      if (!schema) {
        throw new EngramError(
          'INVALID_INPUT',
          `taskState.extensions.${name}: no extension schema is registered under "${name}"; register one first (TaskStateStore.registerExtension)`,
          { field: `taskState.extensions.${name}` },
        );
      }
      const result = schema.safeParse(value);
      if (!result.success) throw invalidInputFromZod(result.error.issues, `taskState.extensions.${name}`);
    }
  }

  private async checkKeyEvents(ids: EventId[]): Promise<void> {
    const found = new Set((await this.store.getEvents(ids)).map((e) => e.id));
    const missing = ids.findIndex((i) => !found.has(i));
    if (missing >= 0) {
      throw new EngramError('INVALID_INPUT', `taskState.keyEvents[${missing}]: no event ${ids[missing]} exists`, {
        field: `taskState.keyEvents[${missing}]`,
      });
    }
  }
}

function merge(base: TaskState, patch: z.output<typeof taskStateUpdateSchema>): TaskState {
  const { extensions, taskId, ...fields } = patch;
  const next: TaskState = { ...base, ...stripUndefined(fields), extensions: { ...base.extensions } };
  if (taskId === null) delete next.taskId;
  else if (taskId !== undefined) next.taskId = taskId;
  for (const [name, value] of Object.entries(extensions ?? {})) {
    if (value === null) delete next.extensions[name];
    else next.extensions[name] = value;
  }
  return taskStateSchema.parse(next);
}

function toVersion(e: EventRecord): TaskStateVersion {
  const meta = e.meta ?? {};
  return {
    sessionId: e.sessionId as SessionId,
    version: typeof meta.version === 'number' ? meta.version : 0,
    // A purged version (memory/purge.ts) keeps its number and reads as an empty card.
    state: isPurged(e) ? EMPTY_TASK_STATE : taskStateSchema.parse(JSON.parse(e.content)),
    eventId: e.id,
    producedByTurn: typeof meta.producedByTurn === 'number' ? meta.producedByTurn : 0,
    ts: e.ts,
  };
}

/** JSON with sorted keys: the same card always serialises to the same bytes (and the same input hash). */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
