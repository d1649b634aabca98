import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { projectForDirectory, projectName } from './project-identity.js';

describe('projectForDirectory', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'engram-project-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));
  const noEnv = { env: {} };

  it('names a git repository by its root, from any directory inside it', () => {
    const repo = join(root, 'my app');
    mkdirSync(join(repo, '.git'), { recursive: true });
    mkdirSync(join(repo, 'src', 'deep'), { recursive: true });
    const top = projectForDirectory(repo, noEnv);
    expect(top).toMatchObject({ root: repo, source: 'git' });
    expect(top.project).toMatch(/^my-app-[0-9a-f]{6}$/);
    expect(projectForDirectory(join(repo, 'src', 'deep'), noEnv)).toEqual(top);
  });

  it('counts a linked worktree as its repository, and a submodule as its own', () => {
    const repo = join(root, 'repo');
    const gitDir = join(repo, '.git', 'worktrees', 'feature');
    mkdirSync(gitDir, { recursive: true });
    writeFileSync(join(gitDir, 'commondir'), '../..\n');
    const worktree = join(root, 'wt', 'feature');
    mkdirSync(worktree, { recursive: true });
    writeFileSync(join(worktree, '.git'), `gitdir: ${gitDir}\n`);
    expect(projectForDirectory(worktree, noEnv)).toEqual(projectForDirectory(repo, noEnv));

    const sub = join(repo, 'vendor', 'lib');
    mkdirSync(join(repo, '.git', 'modules', 'lib'), { recursive: true });
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, '.git'), 'gitdir: ../../.git/modules/lib\n');
    expect(projectForDirectory(sub, noEnv)).toMatchObject({ root: sub, source: 'git' });
  });

  it('uses the directory itself outside a repository, also one that does not exist here (an imported transcript)', () => {
    const plain = join(root, 'notes');
    mkdirSync(plain);
    expect(projectForDirectory(plain, noEnv)).toMatchObject({ root: plain, source: 'cwd' });
    const elsewhere = '/Users/someone/work/api';
    expect(projectForDirectory(elsewhere, noEnv)).toEqual({ project: projectName(elsewhere), root: elsewhere, source: 'cwd' });
  });

  it('keeps two checkouts of the same name apart, and gives one path the same name every time', () => {
    expect(projectName('/a/api')).not.toBe(projectName('/b/api'));
    expect(projectName('/a/api')).toBe(projectName('/a/api'));
    expect(projectName('/')).toMatch(/^project-[0-9a-f]{6}$/);
  });

  it('takes ENGRAM_PROJECT over the directory, and refuses a name with control characters', () => {
    expect(projectForDirectory(root, { env: { ENGRAM_PROJECT: 'shop' } })).toMatchObject({ project: 'shop', source: 'env' });
    expect(() => projectForDirectory(root, { env: { ENGRAM_PROJECT: 'a\u0007b' } })).toThrow(/ENGRAM_PROJECT/);
  });
});
