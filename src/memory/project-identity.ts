import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { agentProjectSchema } from '../model/agent.js';
import { EngramError } from '../errors.js';

/**
 * Which project a working directory belongs to, so that sessions of one repository (hooks, MCP, imports) are one
 * project and "the earlier sessions of this project" is well defined (issue #29, item 1). The project is the
 * session's owner in the access model (model/access.ts): its arcs, briefs and prompt recall are built from it.
 *
 * The root is the git repository's main working tree when the directory is inside one (a linked worktree counts as
 * its repository: `.git` is then a file naming `<repo>/.git/worktrees/<name>`), else the directory itself. The name
 * is the root's folder name, made safe, plus six hex digits of the sha256 of the root's absolute path: two checkouts
 * called `api` in different places stay two projects, and the same path always gives the same name, whether a hook
 * on this machine or an import of a transcript that recorded that path computes it. Reads the file system only
 * (no `git` process: a hook must answer within Claude Code's patience).
 */
export interface ProjectIdentity {
  /** The project name sessions are stored under (1-200 characters, no control characters). */
  project: string;
  /** The repository root or working directory the name was derived from, absolute. */
  root: string;
  /** How it was found: `env` (`ENGRAM_PROJECT`), `git` (a repository around the directory), `cwd` (the directory itself). */
  source: 'env' | 'git' | 'cwd';
}

/** Environment variable that names the project outright, for every directory (set it per project in the host's env). */
export const PROJECT_ENV = 'ENGRAM_PROJECT';

/** Longest folder-name part of a derived project name, in characters. */
const MAX_NAME_CHARS = 60;
/** Most parent directories walked up looking for `.git`. */
const MAX_DEPTH = 64;

export interface ProjectOptions {
  /** The environment to read {@link PROJECT_ENV} from. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * The project of `cwd`. A relative `cwd` is resolved against the process's directory. A path that does not exist
 * here (a transcript recorded on another machine) is its own root.
 */
export function projectForDirectory(cwd: string, options: ProjectOptions = {}): ProjectIdentity {
  const env = options.env ?? process.env;
  const named = env[PROJECT_ENV]?.trim();
  if (named) {
    if (!agentProjectSchema.safeParse(named).success) {
      throw new EngramError('INVALID_INPUT', `${PROJECT_ENV}: "${named}" is not a project name (1-200 characters, no control characters)`, { field: PROJECT_ENV });
    }
    return { project: named, root: resolve(cwd), source: 'env' };
  }
  const dir = resolve(cwd);
  const repo = gitRoot(dir);
  const root = repo ?? dir;
  return { project: projectName(root), root, source: repo ? 'git' : 'cwd' };
}

/** `<folder>-<6 hex of sha256(root)>`, e.g. `my-app-3fa2c1`; `project-<hex>` for the file system root. */
export function projectName(root: string): string {
  const folder = basename(root)
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, MAX_NAME_CHARS);
  const digest = createHash('sha256').update(root).digest('hex').slice(0, 6);
  return `${folder || 'project'}-${digest}`;
}

/**
 * The main working tree of the git repository around `dir`, or undefined when there is none. A `.git` directory
 * makes its parent the root; a `.git` file (a linked worktree or a submodule) names the git directory, whose
 * `commondir` leads to the repository's own `.git` for a worktree.
 */
function gitRoot(dir: string): string | undefined {
  let at = dir;
  for (let i = 0; i < MAX_DEPTH; i++) {
    const dotGit = join(at, '.git');
    const kind = fileKind(dotGit);
    if (kind === 'dir') return at;
    if (kind === 'file') return worktreeRoot(dotGit) ?? at;
    const up = dirname(at);
    if (up === at) return undefined;
    at = up;
  }
  return undefined;
}

/** For a `.git` file `gitdir: <repo>/.git/worktrees/<name>`: `<repo>`. Undefined for anything else (a submodule keeps its own root). */
function worktreeRoot(dotGitFile: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(dotGitFile, 'utf8');
  } catch {
    return undefined;
  }
  const match = /^gitdir:\s*(.+?)\s*$/m.exec(text);
  if (!match) return undefined;
  const gitDir = isAbsolute(match[1]!) ? match[1]! : resolve(dirname(dotGitFile), match[1]!);
  let common: string;
  try {
    common = readFileSync(join(gitDir, 'commondir'), 'utf8').trim();
  } catch {
    return undefined;
  }
  const commonDir = isAbsolute(common) ? common : resolve(gitDir, common);
  return basename(commonDir) === '.git' ? dirname(commonDir) : undefined;
}

function fileKind(path: string): 'dir' | 'file' | undefined {
  try {
    const s = statSync(path);
    return s.isDirectory() ? 'dir' : s.isFile() ? 'file' : undefined;
  } catch {
    return undefined;
  }
}
