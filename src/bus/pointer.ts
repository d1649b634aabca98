import { EngramError, type ErrorData } from '../errors.js';
import { SESSION_ID_PATTERN } from '../model/ids.js';
import { MAX_POINTER_REF_CHARS, type Pointer, type PointerType } from '../model/pointer.js';

/**
 * Pointer references: the `ref` strings of the Engram Bus (PAS Bus §1.2, LESS §5.1), parsed into a
 * discriminated union and formatted back canonically.
 *
 *   repo:<path>[#L<a>[-L<b>]]@<commit>            a file span pinned to a commit (the commit is required, §11.2)
 *   artifact:<name>[#sec=<section>|#L<a>-L<b>]@<sha256 prefix>   a section of a stored artifact, pinned by digest
 *   sam:<kind>:<id>[@<version or date>]           an episodic entry: an event, a decision, a task-state version
 *   diff:<commit>#<path>[#L<a>-L<b>]              the change a commit made to a path (vs its first parent)
 *   test:<id>                                     a recorded test result
 *   url:<http(s) url>                             a web reference; never fetched by Engram (see url-resolver.ts)
 *
 * Parsing is strict because a pointer that parses is one the resolver can answer without guessing: paths are
 * relative and normalized (no `..`, `.`, empty segments, backslashes, control characters), line ranges are
 * 1-based with a <= b, commits are hex object names. Paths cannot contain `#`, which ends a path.
 */

export { MAX_POINTER_REF_CHARS };
/** Highest line number a range may name: far above any source file, low enough to reject garbage. */
export const MAX_LINE_NUMBER = 1_000_000;
/** Shortest abbreviated commit git accepts. Ambiguous abbreviations fail at resolution with POINTER_INVALID. */
export const MIN_COMMIT_HEX_CHARS = 4;
/** Full object names: 40 hex characters (SHA-1) or 64 (SHA-256 repositories). */
export const MAX_COMMIT_HEX_CHARS = 64;
/** Shortest artifact digest prefix: 8 hex characters = 32 bits, enough to tell versions of one artifact apart. */
export const MIN_ARTIFACT_DIGEST_HEX_CHARS = 8;
/** Longest artifact name, section, test id. */
export const MAX_POINTER_NAME_CHARS = 200;

/** Kinds of episodic (SAM) entries a `sam:` pointer can name. */
export const SAM_KINDS = ['event', 'decision', 'task'] as const;
export type SamKind = (typeof SAM_KINDS)[number];

/** An inclusive, 1-based line range. */
export interface LineRange {
  start: number;
  end: number;
}

export interface RepoRef {
  type: 'repo';
  /** Relative to the repository root, `/`-separated, normalized. */
  path: string;
  /** Absent: the whole file. */
  lines?: LineRange;
  /** A full or abbreviated commit object name, lowercase hex. */
  commit: string;
}

export interface ArtifactRef {
  type: 'artifact';
  /** An artifact name (`SPEC_Foo.md`) or content id (`art_<sha256>`). */
  name: string;
  /** A markdown heading (text or slug) or a JSON path (`$.a.b[2]`, `a.b.2`). */
  section?: string;
  lines?: LineRange;
  /** Lowercase hex prefix of the artifact's sha256; absent only when `name` is a content id. */
  digest?: string;
}

export interface SamRef {
  type: 'sam';
  kind: SamKind;
  /** An event id for `event` and `decision`; a session id for `task`. */
  id: string;
  /** A task-state version (`task`, required) or the entry's ISO date or timestamp (`event`, `decision`). */
  at?: string;
}

export interface DiffRef {
  type: 'diff';
  commit: string;
  path: string;
  /** Lines of the post-image (the pre-image for a deleted file). Absent: the whole file's diff. */
  lines?: LineRange;
}

export interface TestRef {
  type: 'test';
  id: string;
}

export interface UrlRef {
  type: 'url';
  url: string;
}

/** A parsed pointer reference. */
export type PointerRef = RepoRef | ArtifactRef | SamRef | DiffRef | TestRef | UrlRef;

/** Why a pointer was rejected, for callers that branch (telemetry, the agent's resend hint). */
export type PointerProblem =
  | 'syntax'
  | 'too-long'
  | 'unknown-type'
  | 'type-mismatch'
  | 'span-mismatch'
  | 'missing-commit'
  | 'bad-commit'
  | 'missing-digest'
  | 'bad-digest'
  | 'bad-range'
  | 'empty-path'
  | 'absolute-path'
  | 'path-traversal'
  | 'unnormalized-path'
  | 'backslash'
  | 'control-character'
  | 'bad-name'
  | 'unknown-sam-kind'
  | 'missing-version'
  | 'bad-version'
  | 'bad-url'
  | 'credentials-in-url';

export interface PointerErrorData extends ErrorData {
  field: string;
  reason: PointerProblem;
  ref?: string;
}

export function pointerError(reason: PointerProblem, message: string, field: string, ref?: string): EngramError<PointerErrorData> {
  return new EngramError<PointerErrorData>('POINTER_INVALID', message, ref === undefined ? { field, reason } : { field, reason, ref });
}

const HEX = /^[0-9a-fA-F]+$/;
// C0 controls and DEL: a newline would inject a second request into `git cat-file --batch`.
const CONTROL = /[\u0000-\u001f\u007f]/;
const RANGE = /^L(\d{1,7})(?:-L?(\d{1,7}))?$/;
const SAM_AT = /^(?:\d{1,9}|\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})?)?)$/;

/**
 * Parses a pointer `ref` string. Throws POINTER_INVALID with `data.field` (default `pointer`), `data.reason`
 * and `data.ref`.
 */
export function parsePointerRef(ref: string, field = 'pointer'): PointerRef {
  const fail = (reason: PointerProblem, message: string): never => {
    throw pointerError(reason, `${field}: ${message} (in "${clip(ref)}")`, field, ref);
  };
  if (ref.length > MAX_POINTER_REF_CHARS) fail('too-long', `longer than ${MAX_POINTER_REF_CHARS} characters`);
  const colon = ref.indexOf(':');
  if (colon < 0) fail('syntax', 'expected <type>:<address>, e.g. repo:src/a.ts#L1-L9@<commit>');
  const type = ref.slice(0, colon);
  const body = ref.slice(colon + 1);
  switch (type) {
    case 'repo':
      return parseRepo(body, fail);
    case 'artifact':
      return parseArtifact(body, fail);
    case 'sam':
      return parseSam(body, fail);
    case 'diff':
      return parseDiff(body, fail);
    case 'test':
      if (body.length === 0 || body.length > MAX_POINTER_NAME_CHARS || CONTROL.test(body)) {
        fail('bad-name', `a test id is 1-${MAX_POINTER_NAME_CHARS} characters without control characters`);
      }
      return { type: 'test', id: body };
    case 'url':
      return parseUrl(body, fail);
    default:
      return fail('unknown-type', `unknown pointer type "${clip(type, 20)}"; expected repo, artifact, sam, diff, test or url`);
  }
}

/** A result instead of an exception, for validating many pointers at once. */
export function checkPointerRef(ref: string, field = 'pointer'): { ok: true; pointer: PointerRef } | { ok: false; error: EngramError<PointerErrorData> } {
  try {
    return { ok: true, pointer: parsePointerRef(ref, field) };
  } catch (err) {
    if (err instanceof EngramError && err.code === 'POINTER_INVALID') return { ok: false, error: err as EngramError<PointerErrorData> };
    throw err;
  }
}

/**
 * Parses a pointer object: its `ref` must be of its `type`, and a `span` (`L10-L20`, or a section for an
 * artifact) either fills in what the ref leaves out or repeats it exactly. Errors name `<field>.ref`,
 * `<field>.type` or `<field>.span`.
 */
export function parsePointer(pointer: Pointer, field = 'pointer'): PointerRef {
  const parsed = parsePointerRef(pointer.ref, `${field}.ref`);
  if (parsed.type !== pointer.type) {
    throw pointerError('type-mismatch', `${field}.type: "${pointer.type}" but the ref is a ${parsed.type} pointer`, `${field}.type`, pointer.ref);
  }
  if (pointer.span === undefined) return parsed;
  const spanField = `${field}.span`;
  const mismatch = (what: string): never => {
    throw pointerError('span-mismatch', `${spanField}: "${pointer.span}" ${what}`, spanField, pointer.ref);
  };
  switch (parsed.type) {
    case 'repo':
    case 'diff': {
      const lines = parseRange(pointer.span, (_r, message) => mismatch(message));
      if (parsed.lines && !sameRange(parsed.lines, lines)) mismatch(`differs from the ref's ${formatRange(parsed.lines)}`);
      return { ...parsed, lines };
    }
    case 'artifact': {
      if (RANGE.test(pointer.span)) {
        const lines = parseRange(pointer.span, (_r, message) => mismatch(message));
        if (parsed.section !== undefined || (parsed.lines && !sameRange(parsed.lines, lines))) mismatch(`differs from the ref's section`);
        return { ...parsed, lines };
      }
      const section = pointer.span.startsWith('sec=') ? pointer.span.slice(4) : pointer.span;
      if (parsed.lines !== undefined || (parsed.section !== undefined && parsed.section !== section)) mismatch(`differs from the ref's section`);
      if (CONTROL.test(section) || section.length === 0) mismatch('is not a section name');
      return { ...parsed, section };
    }
    default:
      return mismatch(`a ${parsed.type} pointer has no span`);
  }
}

/** The canonical `ref` string: `formatPointerRef(parsePointerRef(r))` is stable, and equals `r` for canonical refs. */
export function formatPointerRef(p: PointerRef): string {
  switch (p.type) {
    case 'repo':
      return `repo:${p.path}${p.lines ? `#${formatRange(p.lines)}` : ''}@${p.commit}`;
    case 'artifact': {
      const frag = p.section !== undefined ? `#sec=${p.section}` : p.lines ? `#${formatRange(p.lines)}` : '';
      return `artifact:${p.name}${frag}${p.digest !== undefined ? `@${p.digest}` : ''}`;
    }
    case 'sam':
      return `sam:${p.kind}:${p.id}${p.at !== undefined ? `@${p.at}` : ''}`;
    case 'diff':
      return `diff:${p.commit}#${p.path}${p.lines ? `#${formatRange(p.lines)}` : ''}`;
    case 'test':
      return `test:${p.id}`;
    case 'url':
      return `url:${p.url}`;
  }
}

/** The pointer object for a parsed ref: `{ type, ref }` with the canonical ref. */
export function toPointer(p: PointerRef): Pointer {
  return { type: p.type satisfies PointerType, ref: formatPointerRef(p) };
}

/** `L5` for one line, `L5-L9` otherwise. */
export function formatRange(r: LineRange): string {
  return r.start === r.end ? `L${r.start}` : `L${r.start}-L${r.end}`;
}

/**
 * Checks a repository-relative path: the resolver hands it to git as `<commit>:<path>`, where `./` and `../`
 * would be read relative to the working directory, so only normalized relative paths are allowed.
 */
export function checkRepoPath(path: string, field = 'pointer'): string {
  const problem = repoPathProblem(path);
  if (problem) throw pointerError(problem[0], `${field}: path "${clip(path)}" ${problem[1]}`, field);
  return path;
}

function repoPathProblem(path: string): [PointerProblem, string] | undefined {
  if (path.length === 0) return ['empty-path', 'is empty'];
  if (CONTROL.test(path)) return ['control-character', 'contains a control character'];
  if (path.includes('\\')) return ['backslash', 'contains a backslash; use / between directories'];
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return ['absolute-path', 'is absolute; use a path relative to the repository root'];
  const segments = path.split('/');
  if (segments.includes('..')) return ['path-traversal', 'escapes the repository root with ".."'];
  if (segments.some((s) => s === '' || s === '.')) return ['unnormalized-path', 'has an empty or "." segment; write it normalized (a/b.ts)'];
  return undefined;
}

function checkPath(path: string, fail: Fail): string {
  const problem = repoPathProblem(path);
  if (problem) fail(problem[0], `path "${clip(path)}" ${problem[1]}`);
  return path;
}

type Fail = (reason: PointerProblem, message: string) => never;

function parseRepo(body: string, fail: Fail): RepoRef {
  const at = body.lastIndexOf('@');
  const commit = at < 0 ? '' : body.slice(at + 1);
  if (at < 0 || commit === '' || commit.includes('/') || commit.includes('#')) {
    fail('missing-commit', 'a repo pointer must pin a commit: repo:<path>#L<a>-L<b>@<commit sha>');
  }
  const head = body.slice(0, at);
  const hash = head.lastIndexOf('#');
  const path = hash < 0 ? head : head.slice(0, hash);
  checkPath(path, fail);
  const lines = hash < 0 ? undefined : parseRange(head.slice(hash + 1), fail);
  return { type: 'repo', path, ...(lines ? { lines } : {}), commit: parseCommit(commit, fail) };
}

function parseDiff(body: string, fail: Fail): DiffRef {
  const hash = body.indexOf('#');
  const commit = hash < 0 ? body : body.slice(0, hash);
  if (commit === '') fail('missing-commit', 'a diff pointer starts with a commit: diff:<commit>#<path>#L<a>-L<b>');
  if (hash < 0) fail('empty-path', 'a diff pointer names a path: diff:<commit>#<path>#L<a>-L<b>');
  const rest = body.slice(hash + 1);
  const second = rest.lastIndexOf('#');
  const path = second < 0 ? rest : rest.slice(0, second);
  checkPath(path, fail);
  const lines = second < 0 ? undefined : parseRange(rest.slice(second + 1), fail);
  return { type: 'diff', commit: parseCommit(commit, fail), path, ...(lines ? { lines } : {}) };
}

function parseArtifact(body: string, fail: Fail): ArtifactRef {
  let head = body;
  let digest: string | undefined;
  const at = body.lastIndexOf('@');
  if (at >= 0) {
    const tail = body.slice(at + 1).toLowerCase().replace(/^sha256:/, '');
    if (tail === '') fail('missing-digest', 'nothing follows "@"; pin the artifact with @<sha256 prefix>');
    if (!HEX.test(tail) || tail.length < MIN_ARTIFACT_DIGEST_HEX_CHARS || tail.length > 64) {
      fail('bad-digest', `the digest after "@" must be ${MIN_ARTIFACT_DIGEST_HEX_CHARS}-64 hex characters of the artifact's sha256`);
    }
    digest = tail;
    head = body.slice(0, at);
  }
  const hash = head.indexOf('#');
  const name = hash < 0 ? head : head.slice(0, hash);
  if (name.length === 0 || name.length > MAX_POINTER_NAME_CHARS || CONTROL.test(name) || name.includes('@')) {
    fail('bad-name', `an artifact name is 1-${MAX_POINTER_NAME_CHARS} characters without "#", "@" or control characters`);
  }
  if (digest === undefined && !/^art_[0-9a-f]{64}$/.test(name)) {
    fail('missing-digest', 'an artifact pointer must pin its content: artifact:<name>#sec=<section>@<sha256 prefix>');
  }
  const out: ArtifactRef = { type: 'artifact', name };
  if (hash >= 0) {
    const frag = head.slice(hash + 1);
    if (frag.startsWith('sec=')) {
      const section = frag.slice(4);
      if (section.length === 0 || section.length > MAX_POINTER_NAME_CHARS || CONTROL.test(section)) {
        fail('bad-name', `a section is 1-${MAX_POINTER_NAME_CHARS} characters without control characters`);
      }
      out.section = section;
    } else if (frag.startsWith('L')) {
      out.lines = parseRange(frag, fail);
    } else {
      fail('syntax', 'after "#" an artifact pointer takes sec=<section> or L<a>-L<b>');
    }
  }
  if (digest !== undefined) out.digest = digest;
  return out;
}

function parseSam(body: string, fail: Fail): SamRef {
  const colon = body.indexOf(':');
  const kind = colon < 0 ? body : body.slice(0, colon);
  if (!(SAM_KINDS as readonly string[]).includes(kind)) {
    fail('unknown-sam-kind', `unknown sam kind "${clip(kind, 20)}"; expected ${SAM_KINDS.join(', ')} (sam:<kind>:<id>)`);
  }
  let id = colon < 0 ? '' : body.slice(colon + 1);
  let at: string | undefined;
  const atIdx = id.lastIndexOf('@');
  if (atIdx >= 0 && SAM_AT.test(id.slice(atIdx + 1))) {
    at = id.slice(atIdx + 1);
    id = id.slice(0, atIdx);
  }
  if (!SESSION_ID_PATTERN.test(id)) fail('bad-name', 'a sam id is 1-128 letters, digits and ._:@- starting with a letter or digit');
  if (kind === 'task') {
    if (at === undefined) fail('missing-version', 'a task pointer pins a version: sam:task:<session id>@<version>');
    if (!/^[1-9]\d{0,8}$/.test(at ?? '')) fail('bad-version', 'a task-state version is a positive integer');
  } else if (at !== undefined && /^\d+$/.test(at)) {
    fail('bad-version', `a ${kind} pointer takes a date after "@" (sam:${kind}:<id>@2026-01-08), not a version`);
  }
  return { type: 'sam', kind: kind as SamKind, id, ...(at !== undefined ? { at } : {}) };
}

function parseUrl(body: string, fail: Fail): UrlRef {
  // The URL parser silently drops tabs and newlines; refuse them instead.
  if (CONTROL.test(body)) fail('control-character', 'contains a control character');
  let url: URL;
  try {
    url = new URL(body);
  } catch {
    return fail('bad-url', 'not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail('bad-url', 'only http and https URLs');
  // Pointers are shared with every agent in scope and stored for their TTL: no secrets in them.
  if (url.username !== '' || url.password !== '') fail('credentials-in-url', 'a URL pointer must not carry a user name or password');
  return { type: 'url', url: body };
}

function parseCommit(commit: string, fail: Fail): string {
  if (!HEX.test(commit) || commit.length < MIN_COMMIT_HEX_CHARS || commit.length > MAX_COMMIT_HEX_CHARS) {
    fail('bad-commit', `"${clip(commit, 70)}" is not a commit sha (${MIN_COMMIT_HEX_CHARS}-${MAX_COMMIT_HEX_CHARS} hex characters); branches and tags move, so pointers pin commits`);
  }
  return commit.toLowerCase();
}

function parseRange(text: string, fail: Fail): LineRange {
  const m = RANGE.exec(text);
  if (!m) return fail('bad-range', `"${clip(text, 40)}" is not a line range; expected L<a>-L<b> (1-based, inclusive)`);
  const start = Number(m[1]);
  const end = m[2] === undefined ? start : Number(m[2]);
  if (start < 1) fail('bad-range', 'line numbers start at 1');
  if (end < start) fail('bad-range', `the range ends (L${end}) before it starts (L${start})`);
  if (end > MAX_LINE_NUMBER) fail('bad-range', `line numbers stop at ${MAX_LINE_NUMBER}`);
  return { start, end };
}

function sameRange(a: LineRange, b: LineRange): boolean {
  return a.start === b.start && a.end === b.end;
}

function clip(text: string, max = 120): string {
  const printable = text.replace(/[\u0000-\u001f\u007f]/g, '\uFFFD');
  return printable.length <= max ? printable : `${printable.slice(0, max)}…`;
}
