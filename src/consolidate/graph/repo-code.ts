import { execFile } from 'node:child_process';
import { basename, resolve } from 'node:path';
import { promisify } from 'node:util';
import { EngramError } from '../../errors.js';
import { GitCatFile } from '../../bus/resolvers/git-cat-file.js';
import { looksBinary, sha256Hex, sliceLines } from '../../bus/resolvers/text-span.js';
import { CODE_FILE_RE, readModuleFacts, resolveRelative, type ModuleFacts } from './code-imports.js';

const execFileAsync = promisify(execFile);
/** Source files larger than this are left out (generated bundles, not code anyone imports by hand). */
const MAX_SOURCE_BYTES = 2 * 1024 * 1024;
const GIT_ENV = { ...process.env, LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0' };

/** One file's import of another file of the same tree, with the span that says so. */
export interface FileImport {
  from: string;
  to: string;
  /** Named bindings the import takes that the imported file exports. */
  names: string[];
  span: RepoSpan;
}

export interface FileExport {
  path: string;
  name: string;
  span: RepoSpan;
}

/** A span of a file at a commit, as a bus `repo:` pointer with the sha256 of its text. */
export interface RepoSpan {
  pointer: string;
  digest: string;
  quote: string;
}

export interface RepoCodeGraph {
  repository: string;
  /** Full sha of the commit read. */
  commit: string;
  /** Every TypeScript/JavaScript file of the tree (repository-relative paths). */
  files: string[];
  imports: FileImport[];
  exports: FileExport[];
}

/**
 * Reads the module graph of the TypeScript and JavaScript code in a git repository at a commit: the tree through
 * `git ls-tree`, blobs through one `git cat-file --batch` child (bus/resolvers/git-cat-file.ts), never the working
 * tree. Relative imports are resolved among the tree's files as TypeScript resolves them (`./x.js` finds `x.ts`);
 * package imports are left out (they are not files of the repository).
 */
export async function readRepoCode(options: { repository: string; commit: string; gitBinary?: string }): Promise<RepoCodeGraph> {
  const repository = resolve(options.repository);
  const git = options.gitBinary ?? 'git';
  const commit = await revParse(git, repository, options.commit);
  const { stdout } = await execFileAsync(git, ['-C', repository, 'ls-tree', '-r', '-z', '--full-tree', commit], { env: GIT_ENV, maxBuffer: 256 * 1024 * 1024 });
  const blobs = new Map<string, string>();
  for (const entry of stdout.split('\0')) {
    const tab = entry.indexOf('\t');
    if (tab < 0) continue;
    const [mode, type, oid] = entry.slice(0, tab).split(' ');
    const path = entry.slice(tab + 1);
    if (type === 'blob' && mode !== '120000' && CODE_FILE_RE.test(path) && !path.split('/').includes('node_modules')) blobs.set(path, oid!);
  }
  const files = new Set(blobs.keys());
  const cat = new GitCatFile({ repository, gitBinary: git, maxContentBytes: MAX_SOURCE_BYTES });
  const facts = new Map<string, { text: string; facts: ModuleFacts }>();
  try {
    const reads = [...blobs].map(async ([path, oid]) => {
      const answer = await cat.request(oid);
      if (answer.kind !== 'object' || !answer.content || looksBinary(answer.content)) return;
      const text = answer.content.toString('utf8');
      facts.set(path, { text, facts: await readModuleFacts(path, text) });
    });
    await Promise.all(reads);
  } finally {
    await cat.close();
  }
  const span = (path: string, text: string, line: number, endLine: number): RepoSpan => {
    const excerpt = sliceLines(text, { start: line, end: endLine }, path);
    return { pointer: `repo:${path}#L${line}-L${endLine}@${commit}`, digest: sha256Hex(excerpt), quote: excerpt.replace(/\s+/g, ' ').trim().slice(0, 160) };
  };
  const exportsOf = new Map<string, Set<string>>();
  const exports: FileExport[] = [];
  for (const [path, { text, facts: f }] of facts) {
    const names = new Set<string>();
    for (const e of f.exports) {
      names.add(e.name);
      exports.push({ path, name: e.name, span: span(path, text, e.line, e.endLine) });
    }
    exportsOf.set(path, names);
  }
  const imports: FileImport[] = [];
  for (const [path, { text, facts: f }] of [...facts].sort(([a], [b]) => (a < b ? -1 : 1))) {
    for (const site of f.imports) {
      const to = resolveRelative(path, site.specifier, files);
      if (to === null || to === path) continue;
      const exported = exportsOf.get(to) ?? new Set<string>();
      imports.push({ from: path, to, names: site.names.filter((n) => exported.has(n)), span: span(path, text, site.line, site.endLine) });
    }
  }
  return { repository: basename(repository), commit, files: [...files].sort(), imports, exports };
}

async function revParse(git: string, repository: string, commit: string): Promise<string> {
  if (!/^[\w./@^~-]{1,200}$/.test(commit) || commit.startsWith('-')) {
    throw new EngramError('INVALID_INPUT', `commit: "${commit}" is not a commit name`, { field: 'commit' });
  }
  try {
    const { stdout } = await execFileAsync(git, ['-C', repository, 'rev-parse', '--verify', '--end-of-options', `${commit}^{commit}`], { env: GIT_ENV });
    return stdout.trim();
  } catch (err) {
    throw new EngramError('NOT_FOUND', `commit: no commit ${commit} in ${repository} (or it is not a git repository)`, { field: 'commit' }, { cause: err });
  }
}
