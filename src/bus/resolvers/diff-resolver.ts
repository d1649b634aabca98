import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { EngramError } from '../../errors.js';
import { checkRepoPath, formatRange, type DiffRef, type LineRange } from '../pointer.js';
import type { RepoResolver } from './repo-resolver.js';
import type { ResolvedSpan } from './text-span.js';

/** Where a diff excerpt came from. */
export interface DiffOrigin {
  type: 'diff';
  repository: string;
  commit: string;
  /** The first parent the diff is taken against; null for a root commit (diffed against the empty tree). */
  parent: string | null;
  path: string;
  /** The addressed lines of the post-image (pre-image for a deleted file), when the pointer names them. */
  startLine?: number;
  endLine?: number;
  /** Hunks (or parts of hunks) in the excerpt. */
  hunks: number;
}

export interface DiffResolverOptions {
  /** Longest a `git diff` may run. Default 30 s. */
  timeoutMs?: number;
  /** Largest diff output read. Default 16 MiB. */
  maxOutputBytes?: number;
}

/**
 * Resolves `diff:<commit>#<path>#L<a>-L<b>`: the change the commit made to the path, against its first parent,
 * cut to the hunk lines whose post-image line numbers fall in the range (a deleted line counts at the position
 * of the post-image line that follows it; for a deleted file the pre-image numbers are used).
 *
 * One `git diff` process per deref. Diff derefs are rarer than file reads and a diff is computed, not stored,
 * so there is no batch protocol to reuse; the commit itself is resolved through the repository's cat-file
 * child, so an unknown commit is NOT_FOUND without parsing git's messages. Every option that changes the
 * output is pinned (algorithm, context, prefixes, renames, textconv, external tools), so the same pointer
 * gives the same excerpt and digest whatever the user's git configuration.
 */
export class DiffResolver {
  private readonly timeoutMs: number;
  private readonly maxOutputBytes: number;

  constructor(
    private readonly repo: RepoResolver,
    options: DiffResolverOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxOutputBytes = options.maxOutputBytes ?? 16 * 1024 * 1024;
  }

  async read(ref: DiffRef): Promise<ResolvedSpan<DiffOrigin>> {
    const path = checkRepoPath(ref.path);
    const commit = await this.repo.resolveCommit(ref.commit);
    const parent = commit.parents[0] ?? null;
    const base = parent ?? emptyTreeOid(commit.oid.length);
    const output = await this.runDiff(base, commit.oid, path);
    const where = `${path} in ${commit.oid.slice(0, 12)}`;
    if (output.length === 0) {
      throw new EngramError('NOT_FOUND', `pointer: ${where} did not change (against ${parent ? 'its first parent' : 'the empty tree'})`, {
        field: 'pointer',
        reason: 'no-change',
        path,
        commit: commit.oid,
      });
    }
    const parsed = parseUnifiedDiff(output);
    if (parsed.isBinary) throw new EngramError('POINTER_INVALID', `pointer: ${where} is a binary change; line spans address text`, { field: 'pointer', reason: 'binary-file' });
    const selected = selectLines(parsed, ref.lines);
    if (selected.length === 0) {
      throw new EngramError('NOT_FOUND', `pointer: the change to ${where} touches no line in ${formatRange(ref.lines!)}`, {
        field: 'pointer',
        reason: 'no-change-in-range',
        path,
        commit: commit.oid,
      });
    }
    const text = [parsed.oldHeader, parsed.newHeader, ...selected.flatMap((h) => [h.header, ...h.lines])].join('\n');
    return {
      text,
      source: {
        type: 'diff',
        repository: this.repo.name,
        commit: commit.oid,
        parent,
        path,
        ...(ref.lines ? { startLine: ref.lines.start, endLine: ref.lines.end } : {}),
        hunks: selected.length,
      },
    };
  }

  private async runDiff(base: string, commit: string, path: string): Promise<string> {
    const args = [
      '-C',
      this.repo.repository,
      // A path is a path, never a glob or `:(magic)`.
      '--literal-pathspecs',
      '-c',
      'core.quotePath=false',
      '-c',
      'diff.suppressBlankEmpty=false',
      'diff',
      '--no-color',
      '--no-ext-diff',
      '--no-textconv',
      '--no-renames',
      '--no-relative',
      '--diff-algorithm=myers',
      '--indent-heuristic',
      '--unified=3',
      '--inter-hunk-context=0',
      '--src-prefix=a/',
      '--dst-prefix=b/',
      base,
      commit,
      '--',
      path,
    ];
    try {
      const { stdout } = await promisify(execFile)(this.repo.gitBinary, args, {
        encoding: 'utf8',
        maxBuffer: this.maxOutputBytes,
        timeout: this.timeoutMs,
        env: { ...process.env, LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0', GIT_NO_LAZY_FETCH: '1' },
      });
      return stdout;
    } catch (err) {
      const stderr = (err as { stderr?: string }).stderr?.trim();
      throw new EngramError('STORAGE_ERROR', `git diff in ${this.repo.name} failed${stderr ? `: ${stderr}` : ''}`, { repository: this.repo.name }, { cause: err });
    }
  }
}

interface Hunk {
  oldStart: number;
  newStart: number;
  lines: string[];
}

interface ParsedDiff {
  oldHeader: string;
  newHeader: string;
  isBinary: boolean;
  isDeletion: boolean;
  hunks: Hunk[];
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/** Parses the output of `git diff` for one path. */
export function parseUnifiedDiff(output: string): ParsedDiff {
  const lines = output.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const out: ParsedDiff = { oldHeader: '', newHeader: '', isBinary: false, isDeletion: false, hunks: [] };
  let hunk: Hunk | undefined;
  for (const line of lines) {
    const header = HUNK_HEADER.exec(line);
    if (header) {
      // An empty side names the line before the hunk (`-0,0` for a new file); walk from the line after it.
      const cursor = (start: string, count: string | undefined): number => Number(start) + (count === '0' ? 1 : 0);
      hunk = { oldStart: cursor(header[1]!, header[2]), newStart: cursor(header[3]!, header[4]), lines: [] };
      out.hunks.push(hunk);
    } else if (hunk) {
      hunk.lines.push(line);
    } else if (line.startsWith('--- ')) {
      out.oldHeader = line;
    } else if (line.startsWith('+++ ')) {
      out.newHeader = line;
      out.isDeletion = line === '+++ /dev/null';
    } else if (line.startsWith('Binary files ')) {
      out.isBinary = true;
    }
  }
  return out;
}

/**
 * The hunk lines in `range` (all of them without a range), each run under a recomputed `@@` header (git's
 * function-context text is dropped: it comes from attributes outside the pinned commit).
 */
function selectLines(diff: ParsedDiff, range: LineRange | undefined): Array<{ header: string; lines: string[] }> {
  const out: Array<{ header: string; lines: string[] }> = [];
  for (const hunk of diff.hunks) {
    let oldNo = hunk.oldStart;
    let newNo = hunk.newStart;
    const kept: string[] = [];
    let firstOld = 0;
    let firstNew = 0;
    let oldCount = 0;
    let newCount = 0;
    let isPreviousKept = false;
    for (const line of hunk.lines) {
      const mark = line[0];
      if (mark === '\\') {
        if (isPreviousKept) kept.push(line);
        continue;
      }
      const position = diff.isDeletion ? oldNo : newNo;
      const isKept = range === undefined || (position >= range.start && position <= range.end);
      if (isKept) {
        if (kept.length === 0) {
          firstOld = oldNo;
          firstNew = newNo;
        }
        kept.push(line);
        if (mark !== '+') oldCount++;
        if (mark !== '-') newCount++;
      }
      isPreviousKept = isKept;
      if (mark !== '+') oldNo++;
      if (mark !== '-') newNo++;
    }
    if (kept.length === 0) continue;
    // Unified-diff convention: an empty side names the line before it.
    const oldStart = oldCount === 0 ? firstOld - 1 : firstOld;
    const newStart = newCount === 0 ? firstNew - 1 : firstNew;
    out.push({ header: `@@ -${oldStart},${oldCount} +${newStart},${newCount} @@`, lines: kept });
  }
  return out;
}

/** The empty tree's object name (the base of a root commit's diff), for SHA-1 or SHA-256 repositories. */
function emptyTreeOid(oidHexLength: number): string {
  return createHash(oidHexLength === 64 ? 'sha256' : 'sha1')
    .update('tree 0\0')
    .digest('hex');
}
