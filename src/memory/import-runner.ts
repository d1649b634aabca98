import { createReadStream, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { basename, extname } from 'node:path';
import { EngramError, isEngramError } from '../errors.js';
import type { ErrorCode } from '../errors.js';
import type { EventId } from '../model/ids.js';
import { SESSION_ID_PATTERN } from '../model/ids.js';
import type { AppendOptions, AppendOutcome, StorageBackend } from '../store/backend.js';
import { agentProjectSchema } from '../model/agent.js';
import { detectFormat, MAX_HEAD_BYTES, parseImport, readTranscriptHead } from './importers/index.js';
import type { ImportedEvent, ImportFormat, ImportIssue } from './importers/types.js';
import { IMPORT_FORMAT_NAMES, IMPORT_FORMATS } from './importers/types.js';
import type { Ingestor } from './ingest.js';
import { validateEventInput } from './ingest.js';
import { projectForDirectory } from './project-identity.js';

export interface ImportSourceFile {
  path: string;
  /** Name shown in reports and errors and used for the default session id; default: the file name. */
  displayName?: string;
  /**
   * Read only the bytes from `startByte` (default 0) up to `endByte` (exclusive; default the file's size): a hook
   * resuming a growing transcript where its last run stopped. The range must start and end at line boundaries, and
   * `format` must be given (the file's head is not read); line numbers in issues count from the range's start.
   */
  startByte?: number;
  endByte?: number;
}

export interface ImportFileOptions {
  /** Default: detected from the start of the file (its first record; see readTranscriptHead). */
  format?: ImportFormat;
  /** Import into this session, overriding the session ids the source names. */
  sessionId?: string;
  /**
   * The project that sessions this import creates belong to (model/access.ts): its agents may read them. Default:
   * the project of the working directory the transcript records (`meta.cwd` of a session's first event that has
   * one: Claude Code, Codex and other agent hosts record it; memory/project-identity.ts), so sessions of one
   * repository form one project whether a hook or an import stored them; else `default`. Sessions that already
   * exist keep their project.
   */
  project?: string;
  /**
   * Default false: a file with any invalid line is rejected whole and nothing is stored. True: the valid events
   * are stored and every invalid line is listed in the report.
   */
  skipInvalid?: boolean;
  /** Tool names by call id of calls made before `startByte` (see ImportOptions.knownToolNames). */
  knownToolNames?: ReadonlyMap<string, string>;
  /** Events per append call inside the import's transaction. Default 500. */
  batchSize?: number;
  onProgress?: (progress: ImportProgress) => void;
}

export interface ImportProgress {
  /** `validate`: the first pass of a strict import; `store`: writing. */
  phase: 'validate' | 'store';
  bytesRead: number;
  totalBytes: number;
  events: number;
}

export interface ImportReport {
  file: string;
  format: ImportFormat;
  mode: 'strict' | 'skip-invalid';
  /** New events stored. */
  stored: number;
  /** Events already in the store (same idempotency key): re-importing a file stores nothing twice. */
  duplicates: number;
  sessions: Array<{ id: string; stored: number; duplicates: number }>;
  /** Records recognised but not stored, by reason. */
  skipped: Record<string, number>;
  /** Invalid lines left out, by line (the first {@link MAX_REPORTED_ISSUES}). */
  issues: ImportIssue[];
  issueCount: number;
  /**
   * The format the file looks like, when another was asked for and some records were invalid (a skipInvalid import
   * that stored the rest): likely the reason they were.
   */
  detectedFormat?: ImportFormat;
}

/** Most issues kept in a report or an error (all are counted): bounds memory on a file of nothing but bad lines. */
export const MAX_REPORTED_ISSUES = 10_000;
const DEFAULT_BATCH_SIZE = 500;
/**
 * Attempts at one batch that the store refuses for one of its events before the rest of the batch goes one
 * event at a time: each refusal costs a retry of the whole remainder, so a batch of many conflicting lines
 * would otherwise cost its size squared.
 */
const MAX_BATCH_ATTEMPTS = 4;
/** Refusals of the ingestor that belong to one event of a batch (its `field`, `events[i]...`, says which). */
const PER_EVENT_CODES: ReadonlySet<ErrorCode> = new Set(['INVALID_INPUT', 'IDEMPOTENCY_CONFLICT', 'PAYLOAD_TOO_LARGE']);

/** One event of the file on its way to the store. */
interface Entry {
  item: ImportedEvent;
  sessionId: string;
}

/**
 * Imports a transcript file all or nothing.
 *
 * The whole store pass runs in one storage transaction (StorageBackend.withTransaction): every batch is
 * appended inside it and it commits only after the last line, so nothing is stored unless everything is,
 * whatever fails (an invalid line, a key already stored with other content, a `supersedes` naming no event,
 * a size limit, the disk or the server mid-way), and a crash or Ctrl-C leaves nothing either. A cheaper
 * validate-first pass alone would leave a window: what it checked against the store can change before the
 * writes, and a write failing after the first committed batch would leave part of the file stored. The price
 * is the lock held for the pass: SQLite's write lock (other writers wait up to their busy timeout), or on
 * PostgreSQL the row locks of the sessions written to (their other writers wait; other sessions do not).
 *
 * Strict imports (the default) first read the file once without touching the store, so a malformed file is
 * refused quickly, every malformed or invalid record listed, before any lock is taken. The store pass checks
 * each line again (the file may have grown meanwhile), then against the store and the file's earlier lines:
 * a key reused with other content (the ingestor and the store compare content hashes, as for any append) or
 * a `supersedes` naming no event. Any problem found there is listed and, once the pass is over, rolls the
 * transaction back. With `skipInvalid`, the same checks skip the bad lines, list them in the report and
 * store the rest, still in one transaction.
 *
 * Every problem is named by its line in the file (a JSON document's lines too) and field, or for a document
 * the JSON path of the part the event came from. A file that is empty or only white space has no line: it is refused
 * as a whole (`field: 'file'`, line 0) in both modes. The format is detected from the file's first record
 * (readTranscriptHead) unless `format` is given; when it is given and the file looks like another format, a refusal
 * says which (`data.detectedFormat`), an import that reads no record of the file as an event is refused, and a
 * skipInvalid report that lists invalid records carries it in `detectedFormat`. Events carry deterministic keys, so importing the same (or
 * a grown) file again stores only what is new.
 */
export async function runImport(ingestor: Ingestor, source: ImportSourceFile, options: ImportFileOptions = {}): Promise<ImportReport> {
  const stat = statOrThrow(source.path);
  const name = source.displayName ?? basename(source.path);
  if (options.format !== undefined && !(IMPORT_FORMATS as readonly string[]).includes(options.format)) {
    throw new EngramError('INVALID_INPUT', `format: unknown format "${options.format}"; expected one of ${IMPORT_FORMATS.join(', ')}`, { field: 'format' });
  }
  const start = source.startByte ?? 0;
  const end = source.endByte ?? stat.size;
  const isRange = start !== 0 || end !== stat.size;
  if (isRange && !(Number.isInteger(start) && Number.isInteger(end) && start >= 0 && start <= end && end <= stat.size)) {
    throw new EngramError('INVALID_INPUT', `${name}: bytes ${start} to ${end} are not a range of the file's ${stat.size} bytes`, { field: 'startByte' });
  }
  if (isRange && options.format === undefined) throw new EngramError('INVALID_INPUT', 'format: a part of a file is imported in a named format', { field: 'format' });
  // A file without a record has no line to name: it is refused as a whole, whatever the format and mode.
  const head = isRange ? undefined : stat.size === 0 ? null : readTranscriptHead(source.path);
  if (head === null || head?.isBlank === true) {
    const what = head === null ? 'the file is empty' : 'the file is empty (white space only)';
    throw new EngramError('INVALID_INPUT', `${name}: ${what}; nothing was imported`, { field: 'file', file: name, line: 0 });
  }
  const detected = head === undefined ? null : detectFormat(head.text);
  const format = options.format ?? detected;
  if (format === null) {
    const why = head?.hasFirstRecord !== false ? '' : ` from its first ${MAX_HEAD_BYTES / (1024 * 1024)} MiB (its first record is longer)`;
    throw new EngramError('INVALID_INPUT', `${name}: cannot tell the transcript format${why}; pass --format (${IMPORT_FORMATS.join(', ')})`, { field: 'format' });
  }
  // The format the file looks like, when the caller named another: said in any refusal, which is then likely its cause.
  const hint = options.format !== undefined && detected !== null && detected !== options.format ? { format, detected } : undefined;
  if (options.project !== undefined && !agentProjectSchema.safeParse(options.project).success) {
    throw new EngramError('INVALID_INPUT', `project: "${options.project}" is not a project name (1-200 characters, no control characters)`, { field: 'project' });
  }
  const fallbackSession = defaultSessionId(name);
  const mode = options.skipInvalid ? 'skip-invalid' : 'strict';
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const size = end - start;
  // createReadStream's `end` is inclusive; an empty range reads nothing.
  const importSource = { sizeBytes: size, stream: () => (size === 0 ? Readable.from([]) : createReadStream(source.path, { start, end: end - 1 })) };
  const parseOptions = (phase: ImportProgress['phase'], counter: { events: number }) => ({
    ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}),
    ...(options.knownToolNames !== undefined ? { knownToolNames: options.knownToolNames } : {}),
    onBytes: (bytesRead: number) => options.onProgress?.({ phase, bytesRead, totalBytes: size, events: counter.events }),
  });
  const issues = new IssueList();
  // The project of each session the file names, from the first working directory recorded in it.
  const projects = new Map<string, string | undefined>();
  const ownerOf = (entries: readonly Entry[]): AppendOptions => {
    if (options.project !== undefined) return { project: options.project };
    const sessionId = entries[0]?.sessionId;
    if (sessionId === undefined) return {};
    if (!projects.has(sessionId) || projects.get(sessionId) === undefined) {
      const cwd = entries.map((e) => e.item.event.meta?.['cwd']).find((c): c is string => typeof c === 'string' && c.trim().length > 0);
      projects.set(sessionId, cwd === undefined ? undefined : projectForDirectory(cwd).project);
    }
    const project = projects.get(sessionId);
    return project !== undefined ? { project } : {};
  };

  if (mode === 'strict') {
    const counter = { events: 0 };
    for await (const item of withFormatHint(parseImport(importSource, format, parseOptions('validate', counter)), hint)) {
      if (item.type === 'issue') issues.add(item.value);
      else if (item.type === 'event') {
        counter.events++;
        const problem = checkEvent(item.value);
        if (problem) issues.add(problem);
      }
    }
    if (issues.count > 0) throw rejection(name, issues, hint);
  }

  const report: ImportReport = { file: name, format, mode, stored: 0, duplicates: 0, sessions: [], skipped: {}, issues: [], issueCount: 0 };
  const perSession = new Map<string, { id: string; stored: number; duplicates: number }>();
  const tally = (sessionId: string, outcomes: AppendOutcome[]): void => {
    const s = perSession.get(sessionId) ?? { id: sessionId, stored: 0, duplicates: 0 };
    for (const o of outcomes) {
      if (o.isDuplicate) s.duplicates++;
      else s.stored++;
    }
    perSession.set(sessionId, s);
  };

  try {
    await ingestor.inTransaction(async (tx, store) => {
      const keyLines = new KeyLines();
      let batch: Entry[] = [];
      // Keys in the batch. A key seen again starts a new batch, so that a line reusing an earlier line's key
      // always meets it already stored (in this transaction), where the ingestor compares them.
      let batchKeys = new Set<string>();
      const flush = async (): Promise<void> => {
        if (batch.length === 0) return;
        const entries = await withoutDanglingSupersedes(store, batch, issues);
        batch = [];
        batchKeys = new Set();
        await storeBatch(tx, entries, { issues, keyLines, name, tally, owner: ownerOf(entries) });
      };
      const counter = { events: 0 };
      for await (const item of withFormatHint(parseImport(importSource, format, parseOptions('store', counter)), hint)) {
        if (item.type === 'skip') {
          report.skipped[item.value.reason] = (report.skipped[item.value.reason] ?? 0) + 1;
          continue;
        }
        if (item.type === 'issue') {
          issues.add(item.value);
          continue;
        }
        // A strict import checked every line in its first pass; should a line have changed since, the
        // ingestor refuses it the same way (storeBatch). Skipping imports check here, sparing a batch retry.
        const problem = mode === 'strict' ? null : checkEvent(item.value);
        if (problem) {
          issues.add(problem);
          continue;
        }
        const sessionId = item.value.sessionId ?? fallbackSession;
        const key = item.value.event.key;
        if (batch.length >= batchSize || (batch.length > 0 && batch[0]!.sessionId !== sessionId) || (key !== undefined && batchKeys.has(key))) await flush();
        batch.push({ item: item.value, sessionId });
        if (key !== undefined) batchKeys.add(key);
        counter.events++;
      }
      await flush();
      // Throwing rolls the transaction back: a strict import stores nothing when any line is bad.
      if (mode === 'strict' && issues.count > 0) throw rejection(name, issues, hint);
      // Nothing read in the format asked for, and the file looks like another: that is the answer, not a report.
      if (hint !== undefined && counter.events === 0) throw issues.count > 0 ? rejection(name, issues, hint) : unreadable(name, report.skipped, hint);
    });
  } catch (err) {
    throw nothingImported(err, name);
  }

  for (const s of perSession.values()) {
    report.stored += s.stored;
    report.duplicates += s.duplicates;
  }
  report.sessions = [...perSession.values()];
  report.issues = issues.sorted();
  report.issueCount = issues.count;
  if (hint !== undefined && issues.count > 0) report.detectedFormat = hint.detected;
  return report;
}

/** Issues found so far: every one counted, the first MAX_REPORTED_ISSUES kept. */
class IssueList {
  private readonly kept: ImportIssue[] = [];
  count = 0;

  add(issue: ImportIssue): void {
    this.count++;
    if (this.kept.length < MAX_REPORTED_ISSUES) this.kept.push(issue);
  }

  /** In file order (the store reports a batch's problems after later lines were read). */
  sorted(): ImportIssue[] {
    return [...this.kept].sort((a, b) => a.line - b.line);
  }
}

/**
 * The first line of the file that stored each key (per session), to name it when a later line reuses the key
 * for other content. The ingestor finds such a conflict (it compares the content hashes the store keeps, as
 * for any append); this only says which line it was. 16 MB for the 133K keys of a 100K-line Claude Code
 * transcript (24 MB when the map was keyed by session and key joined in one string).
 */
class KeyLines {
  private readonly bySession = new Map<string, Map<string, number>>();

  noteStored(entry: Entry): void {
    const key = entry.item.event.key;
    if (key === undefined) return;
    let lines = this.bySession.get(entry.sessionId);
    if (lines === undefined) this.bySession.set(entry.sessionId, (lines = new Map()));
    if (!lines.has(key)) lines.set(key, entry.item.line);
  }

  firstLine(entry: Entry): number | undefined {
    const key = entry.item.event.key;
    return key === undefined ? undefined : this.bySession.get(entry.sessionId)?.get(key);
  }
}

/** ` (the event built from message.content[2])` for formats whose records are not events themselves. */
function builtFrom(item: ImportedEvent): string {
  return item.source === undefined ? '' : ` (the event built from ${item.source})`;
}

/**
 * Checks one event as the ingestor will (so that a bad line is listed up front rather than refused with its
 * batch); the issue, or null when fine.
 */
function checkEvent(item: ImportedEvent): ImportIssue | null {
  try {
    validateEventInput(item.event, 'event');
    return null;
  } catch (err) {
    if (!isEngramError(err, 'INVALID_INPUT')) throw err;
    return eventIssue(item, err, 'event');
  }
}

/** An INVALID_INPUT about one event, whose field starts with `prefix` (`event`, `events[3]`), as a line issue. */
function eventIssue(item: ImportedEvent, err: EngramError, prefix: string): ImportIssue {
  const raw = typeof err.data.field === 'string' ? err.data.field : prefix;
  const field = raw === prefix ? '(root)' : raw.startsWith(`${prefix}.`) ? raw.slice(prefix.length + 1) : raw;
  // Messages start with the field they name (`events[3].content: ...`); the line is the event here.
  const message = err.message.startsWith(`${prefix}.`) ? err.message.slice(prefix.length + 1) : err.message.startsWith(prefix) ? `event${err.message.slice(prefix.length)}` : err.message;
  if (item.source !== undefined) return { line: item.line, field: item.source, message: `the event built from ${item.source} is invalid: ${message}` };
  return { line: item.line, field, message };
}

/**
 * The batch without the events whose `supersedes` names no event, each listed as an issue. Read through the
 * import's transaction, so events stored from earlier lines of the file count.
 */
async function withoutDanglingSupersedes(store: StorageBackend, batch: Entry[], issues: IssueList): Promise<Entry[]> {
  const ids = [...new Set(batch.flatMap((e) => (e.item.event.supersedes === undefined ? [] : [e.item.event.supersedes as EventId])))];
  if (ids.length === 0) return batch;
  const found = new Set<string>((await store.getEvents(ids)).map((e) => e.id));
  return batch.filter((e) => {
    const target = e.item.event.supersedes;
    if (target === undefined || found.has(target)) return true;
    issues.add({
      line: e.item.line,
      field: e.item.source ?? 'supersedes',
      message: `supersedes${builtFrom(e.item)}: no event ${target} exists, neither stored before nor from an earlier line of this file`,
    });
    return false;
  });
}

/**
 * Appends one session's batch. When the ingestor refuses one event of it (a key stored before, or by an
 * earlier line, with other content; a limit), that line is listed and the rest is tried again, so one bad
 * line costs only itself. The ingestor refuses before it writes anything, so the transaction is untouched.
 * Any other failure, the store's own included, ends the import (and rolls it back), naming the batch's lines.
 */
interface BatchContext {
  issues: IssueList;
  keyLines: KeyLines;
  /** The file's name, for errors. */
  name: string;
  tally: (sessionId: string, outcomes: AppendOutcome[]) => void;
  /** The project of the sessions the import creates. */
  owner: AppendOptions;
}

async function storeBatch(ingestor: Ingestor, entries: Entry[], ctx: BatchContext): Promise<void> {
  let rest = entries;
  let attempts = 0;
  while (rest.length > 0) {
    const take = attempts < MAX_BATCH_ATTEMPTS ? rest.length : 1;
    const chunk = rest.slice(0, take);
    const sessionId = chunk[0]!.sessionId;
    try {
      ctx.tally(sessionId, await ingestor.append(sessionId, chunk.map((e) => e.item.event), ctx.owner));
      for (const entry of chunk) ctx.keyLines.noteStored(entry);
      rest = rest.slice(take);
    } catch (err) {
      const refused = refusedEvent(err, chunk, ctx.keyLines);
      if (refused === null) throw storageFailure(err, ctx.name, chunk);
      ctx.issues.add(refused.issue);
      attempts++;
      rest = [...chunk.slice(0, refused.index), ...chunk.slice(refused.index + 1), ...rest.slice(take)];
    }
  }
}

/**
 * Which event of `chunk` the ingestor refused, as a line issue; null when the failure is not such a refusal.
 * The stores name no position: a refusal of theirs comes from inside their transaction, which it may have
 * aborted, so it ends the import instead.
 */
function refusedEvent(err: unknown, chunk: Entry[], keyLines: KeyLines): { index: number; issue: ImportIssue } | null {
  if (!isEngramError(err) || !PER_EVENT_CODES.has(err.code)) return null;
  const field = typeof err.data.field === 'string' ? err.data.field : '';
  const match = /^events\[(\d+)\]/.exec(field);
  const index = match ? Number(match[1]) : -1;
  const entry = chunk[index];
  if (entry === undefined) return null;
  const { item } = entry;
  if (err.code === 'IDEMPOTENCY_CONFLICT') {
    const firstLine = keyLines.firstLine(entry);
    const existing = typeof err.data.existingEventId === 'string' ? ` (event ${err.data.existingEventId})` : '';
    const where = firstLine === undefined ? `already stored with other content${existing}` : `already used on line ${firstLine} of this file with other content`;
    const message = `key "${item.event.key}"${builtFrom(item)} was ${where}`;
    return { index, issue: { line: item.line, field: item.source ?? 'key', code: 'IDEMPOTENCY_CONFLICT', message } };
  }
  return { index, issue: eventIssue(item, err, `events[${index}]`) };
}

/** A failure not about one line: which lines were being stored, and that nothing was. */
function storageFailure(err: unknown, name: string, chunk: Entry[]): unknown {
  if (!isEngramError(err)) return err;
  const first = chunk[0]!.item.line;
  const last = chunk[chunk.length - 1]!.item.line;
  const lines = first === last ? `line ${first}` : `lines ${first}-${last}`;
  return new EngramError(err.code, `${name}: storing ${lines} failed, so nothing was imported: ${err.message}`, { ...err.data, file: name, lines: [first, last] }, { cause: err });
}

/** Errors leaving the import's transaction name the file and say that nothing was stored. */
function nothingImported(err: unknown, name: string): unknown {
  if (!isEngramError(err) || err.data.file === name) return err;
  return new EngramError(err.code, `${name}: nothing was imported: ${err.message}`, { ...err.data, file: name }, { cause: err });
}

/** The format asked for and the one the file looks like, when they differ. */
interface FormatHint {
  format: ImportFormat;
  detected: ImportFormat;
}

function hintText(hint: FormatHint): string {
  return `The file looks like ${IMPORT_FORMAT_NAMES[hint.detected]}, not ${IMPORT_FORMAT_NAMES[hint.format]}: pass --format ${hint.detected}.`;
}

/**
 * The importer's items; an INVALID_INPUT it throws (an OpenAI list of conversations without a session) says which
 * format the file looks like when that is another.
 */
async function* withFormatHint<T>(items: AsyncIterable<T>, hint: FormatHint | undefined): AsyncGenerator<T> {
  try {
    yield* items;
  } catch (err) {
    if (hint === undefined || !isEngramError(err, 'INVALID_INPUT')) throw err;
    throw new EngramError('INVALID_INPUT', `${err.message}. ${hintText(hint)}`, { ...err.data, detectedFormat: hint.detected }, { cause: err });
  }
}

/** An import in the wrong format that read no record as an event, only records it does not import. */
function unreadable(name: string, skipped: Record<string, number>, hint: FormatHint): EngramError {
  const reasons = Object.entries(skipped);
  const count = reasons.reduce((n, [, k]) => n + k, 0);
  const first = reasons[0];
  const what = first === undefined ? '' : ` (${count} record${count === 1 ? '' : 's'} skipped, e.g. ${first[0]})`;
  return new EngramError('INVALID_INPUT', `${name}: no record was read as ${IMPORT_FORMAT_NAMES[hint.format]}${what}; nothing was imported. ${hintText(hint)}`, {
    field: 'format',
    file: name,
    detectedFormat: hint.detected,
  });
}

/**
 * A strict import's refusal: the first problem by line, how many there are, all of them in `data.issues`; with a
 * hint, the format the file looks like (`data.detectedFormat`).
 */
function rejection(name: string, issues: IssueList, hint?: FormatHint): EngramError {
  const all = issues.sorted();
  const first = all[0]!;
  const at = first.line > 0 ? `${name}:${first.line}` : name;
  const others = issues.count - 1;
  const more = others > 0 ? ` (and ${others} more invalid record${others === 1 ? '' : 's'})` : '';
  const advice = hint === undefined ? 'Fix the file, or pass --skip-invalid to import the valid records and list the rest.' : hintText(hint);
  return new EngramError(first.code ?? 'INVALID_INPUT', `${at}: ${first.message}${more}; nothing was imported. ${advice}`, {
    file: name,
    line: first.line,
    ...(first.field !== undefined ? { field: first.field } : {}),
    issueCount: issues.count,
    issues: all,
    ...(hint !== undefined ? { detectedFormat: hint.detected } : {}),
  });
}

function statOrThrow(path: string): { size: number } {
  try {
    const s = statSync(path);
    if (!s.isFile()) throw new EngramError('INVALID_INPUT', `${path} is not a file`, { field: 'file' });
    return s;
  } catch (err) {
    if (isEngramError(err)) throw err;
    throw new EngramError('NOT_FOUND', `${path}: no such file`, { field: 'file' });
  }
}

/** `my transcript.jsonl` -> `my-transcript`: a session id for sources that name none. */
export function defaultSessionId(fileName: string): string {
  const stem = basename(fileName, extname(fileName)).replace(/[^A-Za-z0-9._:@-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  const id = stem.slice(0, 128) || 'import';
  return SESSION_ID_PATTERN.test(id) ? id : 'import';
}
