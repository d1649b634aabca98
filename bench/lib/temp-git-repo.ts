import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * A real git repository in a temp directory, for the benchmarks and the tests of the bus resolvers (not part of
 * the API). It lives in bench/lib/ because benchmarks never import test-only files; the tests reach it through
 * src/bus/resolvers/test-support.ts.
 */
export interface TempRepo {
  dir: string;
  git(...args: string[]): string;
  /** Writes (string), symlinks ({ symlink: target }) or deletes (null) files, commits, returns the full sha. */
  commit(files: Record<string, string | { symlink: string } | null>, message?: string): string;
  remove(): void;
}

const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Engram Test',
  GIT_AUTHOR_EMAIL: 'test@engram.invalid',
  GIT_COMMITTER_NAME: 'Engram Test',
  GIT_COMMITTER_EMAIL: 'test@engram.invalid',
  GIT_AUTHOR_DATE: '2026-01-19T10:00:00Z',
  GIT_COMMITTER_DATE: '2026-01-19T10:00:00Z',
  GIT_CONFIG_NOSYSTEM: '1',
};

export function createTempRepo(prefix = 'engram-bus-repo-'): TempRepo {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const git = (...args: string[]): string =>
    execFileSync('git', ['-C', dir, '-c', 'commit.gpgsign=false', '-c', 'core.autocrlf=false', ...args], {
      encoding: 'utf8',
      env: { ...process.env, ...GIT_ENV },
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 * 1024 * 1024,
    });
  git('init', '-q', '-b', 'main');
  let n = 0;
  return {
    dir,
    git,
    commit(files, message) {
      for (const [path, content] of Object.entries(files)) {
        const abs = join(dir, path);
        if (content === null) {
          unlinkSync(abs);
          continue;
        }
        mkdirSync(dirname(abs), { recursive: true });
        rmSync(abs, { force: true });
        if (typeof content === 'string') writeFileSync(abs, content);
        else symlinkSync(content.symlink, abs);
      }
      git('add', '-A');
      git('commit', '-q', '--allow-empty', '-m', message ?? `commit ${++n}`);
      return git('rev-parse', 'HEAD').trim();
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
