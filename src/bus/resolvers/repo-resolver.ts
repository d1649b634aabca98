import { execFile } from 'node:child_process';
import { basename, resolve } from 'node:path';
import { promisify } from 'node:util';
import { EngramError } from '../../errors.js';
import { checkRepoPath, MAX_COMMIT_HEX_CHARS, MIN_COMMIT_HEX_CHARS, type RepoRef } from '../pointer.js';
import { GitCatFile, type GitCatFileOptions } from './git-cat-file.js';
import { countLines, looksBinary, sliceLines, type ResolvedSpan } from './text-span.js';

/** Where a repo excerpt came from. */
export interface RepoOrigin {
  type: 'repo';
  /** The repository's display name (`RepoResolverOptions.name`), not its path on this machine. */
  repository: string;
  /** The full object name of the commit the pointer pins. */
  commit: string;
  path: string;
  /** The blob's object name: equal blobs are equal content, whatever the commit. */
  blob: string;
  /** The addressed lines; the whole file when the pointer names none (1-0 for an empty file). */
  startLine: number;
  endLine: number;
  totalLines: number;
}

export interface ResolvedCommit {
  oid: string;
  /** Parent commits' object names, first parent first; empty for a root commit. */
  parents: string[];
}

export interface RepoResolverOptions extends Pick<GitCatFileOptions, 'gitBinary' | 'maxContentBytes' | 'requestTimeoutMs'> {
  /** Path of the repository (a work tree or a bare repository). */
  repository: string;
  /** Shown in results instead of the path. Default: the directory's name. */
  name?: string;
}

/** Resolved commit names kept per repository; a commit never changes, so entries only age out. */
const COMMIT_CACHE_ENTRIES = 4096;

const execFileAsync = promisify(execFile);

/**
 * Reads `repo:` pointers from one git repository at their pinned commits, through one long-lived
 * `git cat-file --batch` child (see git-cat-file.ts). The working tree is never read: the same pointer always
 * resolves to the same bytes.
 *
 * Symlinks are followed inside the repository (git's `--follow-symlinks`); a symlink whose target leaves the
 * repository, as `git cat-file` itself reports it, is POINTER_INVALID. Binary files and files larger than
 * `maxContentBytes` are POINTER_INVALID too: a line span of them means nothing.
 */
export class RepoResolver {
  private readonly cat: GitCatFile;
  private readonly commits = new Map<string, Promise<ResolvedCommit>>();

  private constructor(
    /** The repository's absolute path. */
    readonly repository: string,
    readonly name: string,
    readonly gitBinary: string,
    options: RepoResolverOptions,
  ) {
    this.cat = new GitCatFile({ ...options, repository });
  }

  /** Checks that `repository` is a git repository (NOT_FOUND otherwise); the cat-file child starts on first use. */
  static async open(options: RepoResolverOptions): Promise<RepoResolver> {
    const repository = resolve(options.repository);
    const gitBinary = options.gitBinary ?? 'git';
    try {
      await execFileAsync(gitBinary, ['-C', repository, 'rev-parse', '--git-dir'], { env: { ...process.env, LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0' } });
    } catch (err) {
      throw new EngramError('NOT_FOUND', `repository: ${repository} is not a git repository (or ${gitBinary} cannot run)`, { field: 'repository' }, { cause: err });
    }
    return new RepoResolver(repository, options.name ?? basename(repository), gitBinary, options);
  }

  /** Process id of the cat-file child (diagnostics, tests). */
  get pid(): number | undefined {
    return this.cat.pid;
  }

  /** Resolves a full or abbreviated commit name: NOT_FOUND when unknown, POINTER_INVALID when ambiguous. */
  resolveCommit(commit: string): Promise<ResolvedCommit> {
    if (!/^[0-9a-f]+$/.test(commit) || commit.length < MIN_COMMIT_HEX_CHARS || commit.length > MAX_COMMIT_HEX_CHARS) {
      return Promise.reject(new EngramError('POINTER_INVALID', `pointer: "${commit}" is not a commit sha`, { field: 'pointer', reason: 'bad-commit' }));
    }
    let pending = this.commits.get(commit);
    if (!pending) {
      pending = this.lookUpCommit(commit);
      if (this.commits.size >= COMMIT_CACHE_ENTRIES) this.commits.delete(this.commits.keys().next().value!);
      this.commits.set(commit, pending);
      // Failures are not cached: an abbreviation that is ambiguous or unknown now may not stay so.
      pending.catch(() => this.commits.delete(commit));
    }
    return pending;
  }

  /** The file span a repo pointer addresses. */
  async read(ref: RepoRef): Promise<ResolvedSpan<RepoOrigin>> {
    const path = checkRepoPath(ref.path);
    const commit = await this.resolveCommit(ref.commit);
    const where = `${path} at ${commit.oid.slice(0, 12)}`;
    const answer = await this.cat.request(`${commit.oid}:${path}`);
    switch (answer.kind) {
      case 'missing':
        throw new EngramError('NOT_FOUND', `pointer: no file ${where} in ${this.name}`, { field: 'pointer', reason: 'no-such-file', path, commit: commit.oid });
      case 'dangling':
      case 'notdir':
        throw new EngramError('NOT_FOUND', `pointer: ${where} goes through a symlink to nothing (${answer.kind})`, { field: 'pointer', reason: 'dangling-symlink', path });
      case 'loop':
        throw invalid('symlink-loop', `pointer: ${where} is a symlink loop`);
      case 'symlink':
        throw invalid('symlink-outside-repo', `pointer: ${where} is a symlink to "${answer.target}", outside the repository`);
      case 'ambiguous':
        throw new EngramError('INTERNAL', `git found ${where} ambiguous`);
      case 'object':
        break;
    }
    if (answer.type !== 'blob') throw invalid('not-a-file', `pointer: ${where} is a ${answer.type === 'tree' ? 'directory' : answer.type}, not a file`);
    if (!answer.content) throw invalid('too-large', `pointer: ${where} is ${answer.size} bytes, more than a deref reads`);
    if (looksBinary(answer.content)) throw invalid('binary-file', `pointer: ${where} is a binary file; line spans address text`);
    const text = answer.content.toString('utf8');
    const totalLines = countLines(text);
    const range = ref.lines ?? { start: 1, end: totalLines };
    const excerpt = totalLines === 0 && !ref.lines ? '' : sliceLines(text, range, `${where}`);
    return {
      text: excerpt,
      source: { type: 'repo', repository: this.name, commit: commit.oid, path, blob: answer.oid, startLine: range.start, endLine: range.end, totalLines },
      firstLine: range.start,
    };
  }

  /** Stops the cat-file child after it answers what was asked. */
  close(): Promise<void> {
    return this.cat.close();
  }

  private async lookUpCommit(commit: string): Promise<ResolvedCommit> {
    const answer = await this.cat.request(`${commit}^{commit}`);
    if (answer.kind === 'ambiguous') {
      throw invalid('ambiguous-commit', `pointer: commit "${commit}" is ambiguous in ${this.name}; use more of its sha`);
    }
    if (answer.kind !== 'object' || answer.type !== 'commit' || !answer.content) {
      throw new EngramError('NOT_FOUND', `pointer: no commit ${commit} in ${this.name}`, { field: 'pointer', reason: 'unknown-commit', commit });
    }
    const parents: string[] = [];
    // A commit object is headers, a blank line, the message; parents are `parent <oid>` headers in order.
    for (const line of answer.content.toString('utf8').split('\n')) {
      if (line === '') break;
      if (line.startsWith('parent ')) parents.push(line.slice(7));
    }
    return { oid: answer.oid, parents };
  }
}

/** Opens a resolver for one repository; see `RepoResolver`. */
export function openRepoResolver(options: RepoResolverOptions): Promise<RepoResolver> {
  return RepoResolver.open(options);
}

function invalid(reason: string, message: string): EngramError {
  return new EngramError('POINTER_INVALID', message, { field: 'pointer', reason });
}
