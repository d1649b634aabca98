import { EngramError, invalidInputFromZod } from '../errors.js';
import { HIERARCHY_KEY_PREFIX } from '../model/hierarchy.js';
import { DEFAULT_PROJECT } from '../model/access.js';
import type { ArtifactDraft } from '../model/artifact.js';
import type { EventArtifactRef, EventKind, EventRecord, InternalEventInput, ValidEventInput } from '../model/event.js';
import { artifactIndexChars, checkAppendSize, MAX_ARTIFACT_INDEXED_CHARS } from '../model/limits.js';
import { eventInputSchema, internalEventInputSchema, sessionIdSchema, toEpochMs } from '../model/event.js';
import type { ArtifactId, EventId, SessionId } from '../model/ids.js';
import { artifactIdFromSha256, newEventId } from '../model/ids.js';
import type { AppendOptions, AppendOutcome, EventDraft, KeyedEvent, StorageBackend } from '../store/backend.js';
import { isKeyedDuplicate, sessionScopeDenied } from '../store/backend.js';
import { encodeArtifactAsync, sha256Hex } from './artifact-codec.js';
import { previewArtifact } from './preview/index.js';
import { RedactionPolicy, REDACTION_SECRET_NAME, type RedactionOptions, type RedactionReport } from './event-redaction.js';
import { maskPrivate } from './private-spans.js';
import { withRelativeDates } from './relative-dates.js';
import { isDerivedEvent, isDerivedOutput, withDerivedTag } from './derived-events.js';
import { hasTurnContext, TURN_CONTEXT_EVENTS, TURN_CONTEXT_KINDS, turnContext, type ContextSource } from './turn-context.js';

export interface IngestOptions {
  /**
   * Tool results larger than this many UTF-8 bytes are stored as artifacts with a preview inline.
   * Default 4096 (about 1,000 tokens): larger outputs are what floods a window (ENGRAM §1.3).
   */
  artifactThresholdBytes?: number;
  /**
   * Most characters of one artifact's text put in the full-text index. Beyond it the index keeps the
   * head (20 %) and the tail (80 %, where errors cluster); the full text stays stored and readable.
   * Default {@link MAX_ARTIFACT_INDEXED_CHARS} (2,000,000); text dense in distinct terms is indexed less, down to
   * 250,000 characters, to bound the indexing work of one append (`artifactIndexChars`, model/limits.ts).
   */
  maxIndexedChars?: number;
  /** Longest preview kept inline, in characters. Default 1200. */
  previewMaxChars?: number;
  /**
   * Redaction of credentials before anything is stored (see event-redaction.ts). Default on; `false` stores
   * content verbatim.
   */
  redact?: boolean | RedactionOptions;
  /**
   * Earlier events of the session each event is indexed with, at a lower weight (turn-context.ts). Default
   * {@link TURN_CONTEXT_EVENTS} (2); 0 indexes every event on its own words only (the ablation's baseline).
   */
  turnContextEvents?: number;
  /**
   * Index a dialogue turn's relative dates ("yesterday", "last week") resolved against its time, as words in the
   * context column (relative-dates.ts). Default true; false for the ablation.
   */
  relativeDates?: boolean;
}

/** An append's outcome with what redaction replaced in the event (absent when nothing was, and for duplicates). */
export interface IngestOutcome extends AppendOutcome {
  redactions?: RedactionReport;
}

export const DEFAULT_MAX_INDEXED_CHARS = MAX_ARTIFACT_INDEXED_CHARS;

const DEFAULTS = {
  redact: true as boolean | RedactionOptions,
  artifactThresholdBytes: 4096,
  maxIndexedChars: DEFAULT_MAX_INDEXED_CHARS,
  previewMaxChars: 1200,
  turnContextEvents: TURN_CONTEXT_EVENTS,
  relativeDates: true as boolean,
} as const;

/**
 * Base64, white space allowed anywhere: only the alphabet, then at most two `=`. Checked without copying the text
 * or anchoring a `*` over it (a 6 MiB attachment took 70 ms that way).
 */
function isBase64(text: string): boolean {
  if (/[^A-Za-z0-9+/=\s]/.test(text)) return false;
  const padding = text.indexOf('=');
  if (padding < 0) return true;
  const tail = text.slice(padding).replace(/\s+/g, '');
  return tail === '=' || tail === '==';
}

/**
 * Validates one event input; errors name the field, prefixed with `field` (e.g. `events[3]`). Internal kinds
 * (`task_state`) are refused unless `allowInternalKinds` (Engram's own writers only).
 */
export function validateEventInput(input: unknown, field = 'event', allowInternalKinds = false): ValidEventInput {
  const parsed = (allowInternalKinds ? internalEventInputSchema : eventInputSchema).safeParse(input);
  if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, field);
  const value = parsed.data;
  // The hierarchy's own events (its writer leases above all) are written by Engram only: a caller's event keyed
  // `hierarchy:link` would otherwise claim a session's single writer (model/hierarchy.ts).
  if (!allowInternalKinds && value.key?.startsWith(HIERARCHY_KEY_PREFIX)) {
    throw new EngramError('INVALID_INPUT', `${field}.key: keys starting with "${HIERARCHY_KEY_PREFIX}" are reserved for hierarchical sessions (engram delegate)`, {
      field: `${field}.key`,
    });
  }
  if (value.binary && !isBase64(value.binary.base64)) {
    throw new EngramError('INVALID_INPUT', `${field}.binary.base64: not valid base64`, { field: `${field}.binary.base64` });
  }
  return value;
}

export function validateSessionId(sessionId: unknown, field = 'sessionId'): SessionId {
  const parsed = sessionIdSchema.safeParse(sessionId);
  if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, field);
  return parsed.data as SessionId;
}

/**
 * The write path (ENGRAM Annex A.1): validate, cut large tool results into content-addressed artifacts
 * with a structure-aware preview, and hand the store one transaction per call. Append-only and
 * idempotent by event key.
 */
export class Ingestor {
  private readonly opts: Required<IngestOptions>;
  /** Credential redaction of every append and of logged recall queries. */
  readonly redaction: RedactionPolicy;

  constructor(
    private readonly store: StorageBackend,
    options: IngestOptions = {},
  ) {
    this.opts = { ...DEFAULTS, ...options };
    const redact = this.opts.redact;
    this.redaction = new RedactionPolicy(() => store.bus.getOrCreateSecret(REDACTION_SECRET_NAME), typeof redact === 'boolean' ? { enabled: redact } : redact);
  }

  /** `owner`: the project a new session belongs to, and the one an existing session must belong to (see AppendOptions). */
  async append(sessionIdInput: string, inputs: readonly unknown[], owner: AppendOptions = {}): Promise<IngestOutcome[]> {
    checkAppendSize(inputs.length);
    return this.appendValidated(sessionIdInput, inputs, false, owner);
  }

  /**
   * Runs `fn` with this ingestor bound to one store transaction (see StorageBackend.withTransaction): what it
   * appends through the ingestor it is given, in any number of calls, is committed together when `fn`
   * resolves and not at all when it throws; `store` reads inside that transaction. For whole-file imports.
   */
  inTransaction<T>(fn: (ingestor: Ingestor, store: StorageBackend) => Promise<T>): Promise<T> {
    // A new ingestor with the same options, so everything it reads or writes (the redaction secret too) goes
    // through the transaction: the outer store's connection would wait for the transaction's own lock.
    return this.store.withTransaction((tx) => fn(new Ingestor(tx, this.opts), tx));
  }

  /** For Engram's own writers (the task-state store): the same path, internal kinds allowed. */
  async appendInternal(sessionIdInput: string, inputs: readonly InternalEventInput[], owner: AppendOptions = {}): Promise<IngestOutcome[]> {
    return this.appendValidated(sessionIdInput, inputs, true, owner);
  }

  private async appendValidated(sessionIdInput: string, inputs: readonly unknown[], allowInternalKinds: boolean, owner: AppendOptions): Promise<IngestOutcome[]> {
    const sessionId = validateSessionId(sessionIdInput);
    const checked = inputs.map((input, i) => validateEventInput(input, `events[${i}]`, allowInternalKinds));
    if (checked.length === 0) return [];
    // Secrets are replaced before anything is hashed or stored: the input hash, the artifact bytes and id,
    // the index and the event all see only the redacted input (deterministic, so retries still match).
    const redacted = await this.redaction.redactEvents(checked);
    // Validation and redaction scan every character; hashing, previews and the store follow. Let other requests
    // run in between, so the two halves of a large append do not hold a server's thread as one block.
    await new Promise((resolve) => setImmediate(resolve));
    const valid = redacted.map((r) => r.input);
    await this.checkSupersedes(sessionId, valid, owner);

    const hashes = valid.map((v) => (v.key === undefined ? undefined : canonicalHash(v)));
    // Retried writes are answered from the store without redoing the artifact work. The store checks
    // keys again inside its transaction, which covers a concurrent writer racing this one.
    const keys = valid.flatMap((v) => (v.key === undefined ? [] : [v.key]));
    // The session's latest turns come with the keyed events when some input may take turn context: one read.
    const depth = this.opts.turnContextEvents;
    const wantsContext = depth > 0 && valid.some((v) => hasTurnContext(v.kind));
    const read = await this.store.readAppendContext(sessionId, keys, wantsContext ? { kinds: [...TURN_CONTEXT_KINDS], limit: depth } : undefined);
    const existing = new Map(read.keyed.map((e) => [e.record.key!, e]));
    valid.forEach((v, i) => {
      const prior = v.key === undefined ? undefined : existing.get(v.key);
      if (prior) isKeyedDuplicate(sessionId, v.key!, hashes[i], { eventId: prior.record.id, inputHash: prior.inputHash }, `events[${i}].key`);
    });

    const nowMs = Date.now();
    const drafts: EventDraft[] = [];
    const draftIndex: number[] = [];
    const artifacts = new Map<ArtifactId, { bytes: Uint8Array; mediaType: string }>();
    valid.forEach((v, i) => {
      if (v.key !== undefined && existing.has(v.key)) return;
      drafts.push(this.draft(v, hashes[i], nowMs, artifacts));
      draftIndex.push(i);
    });

    await this.addTurnContext(sessionId, valid, drafts, draftIndex, existing, wantsContext ? read.latest : undefined);

    const already = await this.store.hasArtifacts([...artifacts.keys()]);
    const artifactDrafts: ArtifactDraft[] = [];
    for (const [id, a] of artifacts) {
      if (already.has(id)) continue;
      const { encoding, stored } = await encodeArtifactAsync(a.bytes);
      artifactDrafts.push({
        record: {
          id,
          sha256: id.slice(4),
          sizeBytes: a.bytes.byteLength,
          storedBytes: stored.byteLength,
          encoding,
          mediaType: a.mediaType,
          createdAt: new Date(nowMs).toISOString(),
        },
        stored,
      });
    }

    // With nothing new to write the store's in-transaction owner check does not run: check here, so that
    // stored records of another project's session are never answered as duplicates.
    if (drafts.length === 0 && owner.requireProject !== undefined) {
      const access = (await this.store.getSessionAccess([sessionId])).get(sessionId);
      if (access && access.project !== owner.requireProject) throw sessionScopeDenied(sessionId, owner.requireProject);
    }
    const stored = drafts.length > 0 ? await this.store.appendEvents(sessionId, drafts, artifactDrafts, owner) : [];
    const out: IngestOutcome[] = new Array<IngestOutcome>(valid.length);
    draftIndex.forEach((inputIndex, j) => {
      const report = redacted[inputIndex]!.report;
      out[inputIndex] = report.count > 0 && !stored[j]!.isDuplicate ? { ...stored[j]!, redactions: report } : stored[j]!;
    });
    valid.forEach((v, i) => {
      if (!out[i]) out[i] = { record: existing.get(v.key!)!.record, isDuplicate: true };
    });
    return out;
  }

  private draft(
    v: ValidEventInput,
    inputHash: string | undefined,
    nowMs: number,
    artifacts: Map<ArtifactId, { bytes: Uint8Array; mediaType: string }>,
  ): EventDraft {
    // Engram's own output come back in a transcript is kept, tagged, and not indexed: recall returns the events it quotes (derived-events.ts).
    const isDerived = isDerivedOutput(v);
    const tags = isDerived ? withDerivedTag(v.tags) : (v.tags ?? []);
    let content = v.content;
    // Private spans are stored, never indexed (private-spans.ts).
    let searchText = isDerived ? '' : maskPrivate(v.content);
    let artifact: EventArtifactRef | undefined;

    if (v.binary) {
      // Node's decoder skips white space itself.
      const bytes = Buffer.from(v.binary.base64, 'base64');
      const id = artifactIdFromSha256(sha256Hex(bytes));
      const previewOptions = { mediaType: v.binary.mediaType, maxChars: this.opts.previewMaxChars, ...(v.binary.caption ? { caption: v.binary.caption } : {}) };
      const { preview } = previewArtifact(bytes, previewOptions);
      artifacts.set(id, { bytes, mediaType: v.binary.mediaType });
      artifact = { id, mediaType: v.binary.mediaType, sizeBytes: bytes.byteLength, previewKind: preview.kind };
      content = v.content.length > 0 ? `${preview.text}\n${v.content}` : preview.text;
      searchText = maskPrivate([v.content, v.binary.caption ?? ''].join('\n'));
    } else if (v.kind === 'tool_result' && Buffer.byteLength(v.content, 'utf8') > this.opts.artifactThresholdBytes) {
      const bytes = Buffer.from(v.content, 'utf8');
      const id = artifactIdFromSha256(sha256Hex(bytes));
      const hints = { maxChars: this.opts.previewMaxChars, ...(v.toolName ? { toolName: v.toolName } : {}) };
      // The preview is shown wherever the event is (packs, recall): cut from the text with private spans
      // hidden, so no cut can leave part of a span in it. The artifact keeps the text verbatim.
      const visible = maskPrivate(v.content);
      const { preview, mediaType } = previewArtifact(visible, hints);
      artifacts.set(id, { bytes, mediaType });
      artifact = { id, mediaType, sizeBytes: bytes.byteLength, previewKind: preview.kind };
      content = preview.text;
      searchText = isDerived ? '' : capForIndex(visible, artifactIndexChars(visible, this.opts.maxIndexedChars));
    }

    const draft: EventDraft = {
      id: newEventId(nowMs),
      kind: v.kind,
      tsMs: toEpochMs(v.ts, nowMs),
      content,
      tags,
      searchText,
      // A dialogue turn's context column is written by addTurnContext when context is on: its dates are resolved there, once.
      searchMeta: searchMetaFor(v.kind, v.toolName, tags, this.opts.turnContextEvents > 0 ? '' : this.datesOf(v.kind, '', searchText, toEpochMs(v.ts, nowMs))),
    };
    if (artifact) draft.artifact = artifact;
    if (v.key !== undefined) draft.key = v.key;
    if (inputHash !== undefined) draft.inputHash = inputHash;
    if (v.taskId !== undefined) draft.taskId = v.taskId;
    if (v.premiseRef !== undefined) draft.premiseRef = v.premiseRef;
    if (v.supersedes !== undefined) draft.supersedes = v.supersedes as EventId;
    if (v.toolName !== undefined) draft.toolName = v.toolName;
    if (v.toolCallId !== undefined) draft.toolCallId = v.toolCallId;
    if (v.meta !== undefined) draft.meta = v.meta;
    return draft;
  }

  /** A dialogue turn's context with its resolved relative dates added (relative-dates.ts), when that is on. */
  private datesOf(kind: EventKind, context: string, text: string, tsMs: number): string {
    return this.opts.relativeDates && hasTurnContext(kind) ? withRelativeDates(context, text, tsMs) : context;
  }

  /**
   * Indexes every new event with the end of the events before it in the session (turn-context.ts): the inputs
   * before it in this call and, before those, the session's last stored events (one read, only when something
   * new is written). Writers racing on one session may see older earlier events: context only ranks.
   */
  private async addTurnContext(
    sessionId: SessionId,
    valid: readonly ValidEventInput[],
    drafts: EventDraft[],
    draftIndex: readonly number[],
    existing: ReadonlyMap<string, KeyedEvent>,
    /** The session's latest events of the context kinds, newest first, read with the keyed events; read here when absent. */
    latest: readonly EventRecord[] | undefined,
  ): Promise<void> {
    const depth = this.opts.turnContextEvents;
    // Appends of tool records only (most of an agent's traffic) take no context: no read of the store for them.
    if (depth <= 0 || !drafts.some((d) => hasTurnContext(d.kind))) return;
    const draftOf = new Map(draftIndex.map((inputIndex, j) => [inputIndex, drafts[j]!]));
    /** The text input `i` shows as context, or undefined when it takes no part in context. */
    const sourceOf = (i: number): ContextSource | undefined => {
      const v = valid[i]!;
      if (!hasTurnContext(v.kind) || isDerivedOutput(v)) return undefined;
      const d = draftOf.get(i);
      // A new event's index text is masked already; an artifact's preview is what a reader sees of it.
      if (d) return d.artifact ? { text: d.content, isMasked: false } : { text: d.searchText, isMasked: true };
      return { text: existing.get(v.key!)!.record.content, isMasked: false };
    };
    // The turns stored before this call's first input: before the session's end, or, when that input is a retried
    // one already stored, before its turn (the retried inputs then follow in the loop, each once).
    const first = valid[0]!;
    const firstStored = first.key !== undefined ? existing.get(first.key) : undefined;
    const stored = (
      latest !== undefined && !firstStored
        ? [...latest]
        : await this.store.listEvents({
            sessionId,
            order: 'desc',
            limit: depth,
            kinds: [...TURN_CONTEXT_KINDS],
            ...(firstStored ? { toTurn: firstStored.record.turn - 1 } : {}),
          })
    ).reverse();
    let window: ContextSource[] = stored.filter((e) => !isDerivedEvent(e)).map((e) => ({ text: e.content, isMasked: false }));
    for (let i = 0; i < valid.length; i++) {
      const d = draftOf.get(i);
      if (d && hasTurnContext(d.kind) && !isDerivedEvent(d)) d.searchMeta = searchMetaFor(d.kind, d.toolName, d.tags, this.datesOf(d.kind, turnContext(window), d.searchText, d.tsMs));
      const source = sourceOf(i);
      if (source) window = [...window, source].slice(-depth);
    }
  }

  /**
   * A `supersedes` id must name an event of the same project as the session written to (the one it already
   * belongs to, else the one this append creates it in): a decision never points across projects, where the
   * graph and consolidation would read the other project's text. Another project's event is answered exactly like
   * a missing one, so the error is no oracle for ids elsewhere.
   */
  private async checkSupersedes(sessionId: SessionId, valid: ValidEventInput[], owner: AppendOptions): Promise<void> {
    const ids = [...new Set(valid.flatMap((v) => (v.supersedes ? [v.supersedes as EventId] : [])))];
    if (ids.length === 0) return;
    const events = await this.store.getEvents(ids);
    const access = await this.store.getSessionAccess([sessionId, ...new Set(events.map((e) => e.sessionId))]);
    const project = access.get(sessionId)?.project ?? owner.project ?? DEFAULT_PROJECT;
    const found = new Set(events.filter((e) => access.get(e.sessionId)?.project === project).map((e) => e.id));
    const i = valid.findIndex((v) => v.supersedes !== undefined && !found.has(v.supersedes as EventId));
    if (i >= 0) {
      throw new EngramError('INVALID_INPUT', `events[${i}].supersedes: no event ${valid[i]!.supersedes} exists in this session's project`, {
        field: `events[${i}].supersedes`,
      });
    }
  }
}

/** sha256 of the input as the caller gave it (keys sorted), so a retry hashes the same. */
export function canonicalHash(v: ValidEventInput): string {
  return sha256Hex(stableStringify(v));
}

/**
 * JSON with object keys in code-unit order and undefined members left out. The stored hashes of keyed events depend
 * on these exact bytes: change the output never, only the speed (string building instead of entries, filter, map and
 * join arrays: a fifth less CPU per append's hashes).
 */
function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + stableStringify(value[i]);
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  // sort() without a comparator orders strings by UTF-16 code units, as `<` does.
  const keys = Object.keys(record).sort();
  let out = '{';
  for (const key of keys) {
    const v = record[key];
    if (v === undefined) continue;
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(key)}:${stableStringify(v)}`;
  }
  return `${out}}`;
}

/**
 * Words indexed beside the text, with a lower weight: the kind, the tool name, the tags, and the end of the
 * previous event in the session (turn-context.ts).
 */
export function searchMetaFor(kind: string, toolName: string | undefined, tags: readonly string[], context = ''): string {
  const labels = [kind.replace('_', ' '), toolName ?? '', ...tags].join(' ').trim();
  return context.length > 0 ? `${labels}\n${context}` : labels;
}

/** The artifact text put in the full-text index: whole, or its head (20 %) and tail (80 %) past `maxChars`. */
export function capForIndex(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = Math.floor(maxChars * 0.2);
  return `${text.slice(0, head)}\n…\n${text.slice(text.length - (maxChars - head))}`;
}
