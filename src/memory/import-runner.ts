import { createReadStream, openSync, readSync, closeSync, statSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { EngramError, isEngramError } from '../errors.js';
import type { EventInput } from '../model/event.js';
import { SESSION_ID_PATTERN } from '../model/ids.js';
import { detectFormat, parseImport } from './importers/index.js';
import type { ImportFormat, ImportIssue } from './importers/types.js';
import { IMPORT_FORMATS } from './importers/types.js';
import type { Ingestor } from './ingest.js';
import { validateEventInput } from './ingest.js';

export interface ImportSourceFile {
  path: string;
  /** Name shown in reports and used for the default session id; default: the file name. */
  displayName?: string;
}

export interface ImportFileOptions {
  /** Default: detected from the first 64 KiB. */
  format?: ImportFormat;
  /** Import into this session, overriding the session ids the source names. */
  sessionId?: string;
  /**
   * Default false: a file with any invalid line is rejected whole and nothing is stored. True: valid
   * events are stored and every invalid line is listed in the report.
   */
  skipInvalid?: boolean;
  /** Events per transaction. Default 500. */
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
  /** Invalid lines (the first {@link MAX_REPORTED_ISSUES}). */
  issues: ImportIssue[];
  issueCount: number;
}

export const MAX_REPORTED_ISSUES = 50;
const SNIFF_BYTES = 64 * 1024;
const DEFAULT_BATCH_SIZE = 500;

/**
 * Imports a transcript file without ever storing a silent partial import: in strict mode a first pass
 * validates every line and any invalid one rejects the file before anything is written; with
 * `skipInvalid` the valid events are stored and the report lists every invalid line. Events carry
 * deterministic keys, so importing the same (or a grown) file again stores only what is new.
 */
export async function runImport(ingestor: Ingestor, source: ImportSourceFile, options: ImportFileOptions = {}): Promise<ImportReport> {
  const stat = statOrThrow(source.path);
  const name = source.displayName ?? basename(source.path);
  if (stat.size === 0) throw new EngramError('INVALID_INPUT', `${name}: the file is empty; nothing was imported`, { field: 'file', line: 0 });
  const format = options.format ?? sniffFormat(source.path, name);
  if (!(IMPORT_FORMATS as readonly string[]).includes(format)) {
    throw new EngramError('INVALID_INPUT', `format: unknown format "${format}"; expected one of ${IMPORT_FORMATS.join(', ')}`, { field: 'format' });
  }
  const fallbackSession = defaultSessionId(name);
  const mode = options.skipInvalid ? 'skip-invalid' : 'strict';
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const importSource = { sizeBytes: stat.size, stream: () => createReadStream(source.path) };
  const parseOptions = (phase: ImportProgress['phase'], counter: { events: number }) => ({
    ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}),
    onBytes: (bytesRead: number) => options.onProgress?.({ phase, bytesRead, totalBytes: stat.size, events: counter.events }),
  });

  const issues: ImportIssue[] = [];
  let issueCount = 0;
  const noteIssue = (issue: ImportIssue): void => {
    issueCount++;
    if (issues.length < MAX_REPORTED_ISSUES) issues.push(issue);
  };

  if (mode === 'strict') {
    const counter = { events: 0 };
    for await (const item of parseImport(importSource, format, parseOptions('validate', counter))) {
      if (item.type === 'issue') noteIssue(item.value);
      else if (item.type === 'event') {
        counter.events++;
        const problem = validationProblem(item.value.event, item.value.line);
        if (problem) noteIssue(problem);
      }
    }
    if (issueCount > 0) {
      const first = issues[0]!;
      throw new EngramError(
        'INVALID_INPUT',
        `${name}: ${issueCount} invalid record${issueCount === 1 ? '' : 's'}; nothing was imported. ` +
          `First, line ${first.line}: ${first.message}. Fix the file, or pass --skip-invalid to import the valid records and list the rest.`,
        { field: 'file', line: first.line, issueCount, issues },
      );
    }
  }

  const report: ImportReport = { file: name, format, mode, stored: 0, duplicates: 0, sessions: [], skipped: {}, issues, issueCount };
  const perSession = new Map<string, { id: string; stored: number; duplicates: number }>();
  let batch: EventInput[] = [];
  let batchSession = '';
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const outcomes = await ingestor.append(batchSession, batch);
    const s = perSession.get(batchSession) ?? { id: batchSession, stored: 0, duplicates: 0 };
    for (const o of outcomes) {
      if (o.isDuplicate) {
        s.duplicates++;
        report.duplicates++;
      } else {
        s.stored++;
        report.stored++;
      }
    }
    perSession.set(batchSession, s);
    batch = [];
  };

  const counter = { events: 0 };
  for await (const item of parseImport(importSource, format, parseOptions('store', counter))) {
    if (item.type === 'skip') {
      report.skipped[item.value.reason] = (report.skipped[item.value.reason] ?? 0) + 1;
      continue;
    }
    if (item.type === 'issue') {
      if (mode === 'skip-invalid') noteIssue(item.value);
      continue;
    }
    const { event, line } = item.value;
    if (mode === 'skip-invalid') {
      const problem = validationProblem(event, line);
      if (problem) {
        noteIssue(problem);
        continue;
      }
    }
    const session = item.value.sessionId ?? fallbackSession;
    if (session !== batchSession || batch.length >= batchSize) {
      await flush();
      batchSession = session;
    }
    batch.push(event);
    counter.events++;
  }
  await flush();
  report.sessions = [...perSession.values()];
  report.issueCount = issueCount;
  return report;
}

function validationProblem(event: EventInput, line: number): ImportIssue | null {
  try {
    validateEventInput(event, 'event');
    return null;
  } catch (err) {
    if (!isEngramError(err, 'INVALID_INPUT')) throw err;
    const field = typeof err.data.field === 'string' ? err.data.field : undefined;
    return field ? { line, message: err.message, field } : { line, message: err.message };
  }
}

function sniffFormat(path: string, name: string): ImportFormat {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(SNIFF_BYTES);
    const n = readSync(fd, buf, 0, SNIFF_BYTES, 0);
    const format = detectFormat(buf.subarray(0, n).toString('utf8'));
    if (!format) {
      throw new EngramError('INVALID_INPUT', `${name}: cannot tell the transcript format; pass --format (${IMPORT_FORMATS.join(', ')})`, {
        field: 'format',
      });
    }
    return format;
  } finally {
    closeSync(fd);
  }
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
