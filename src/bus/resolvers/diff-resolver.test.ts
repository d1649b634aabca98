import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePointerRef, type DiffRef } from '../pointer.js';
import { DiffResolver } from './diff-resolver.js';
import { openRepoResolver, type RepoResolver } from './repo-resolver.js';
import { createTempRepo, numberedLines, rejected, type TempRepo } from './test-support.js';

const diffRef = (ref: string): DiffRef => parsePointerRef(ref) as DiffRef;

describe('DiffResolver', () => {
  let repo: TempRepo;
  let resolver: RepoResolver;
  let diffs: DiffResolver;
  let root: string;
  let edit: string;
  let removal: string;

  beforeAll(async () => {
    repo = createTempRepo();
    // Custom diff settings that would change git's output if the resolver did not pin them.
    repo.git('config', 'diff.noprefix', 'true');
    repo.git('config', 'diff.context', '10');
    repo.git('config', 'diff.algorithm', 'histogram');
    root = repo.commit({ 'src/a.ts': numberedLines(40), 'gone.txt': 'bye\n' });
    const edited = numberedLines(40)
      .replace('line 5\n', 'line 5 changed\n')
      .replace('line 30\n', 'line 30a\nline 30b\n')
      .replace('line 35\n', '');
    edit = repo.commit({ 'src/a.ts': edited, 'new.txt': 'fresh\n' });
    removal = repo.commit({ 'gone.txt': null });
    resolver = await openRepoResolver({ repository: repo.dir });
    diffs = new DiffResolver(resolver);
  });

  afterAll(async () => {
    await resolver.close();
    repo.remove();
  });

  it('returns the hunk lines inside the range, against the first parent, with pinned formatting', async () => {
    const span = await diffs.read(diffRef(`diff:${edit}#src/a.ts#L1-L10`));
    expect(span.text).toBe(['--- a/src/a.ts', '+++ b/src/a.ts', '@@ -2,7 +2,7 @@', ' line 2', ' line 3', ' line 4', '-line 5', '+line 5 changed', ' line 6', ' line 7', ' line 8'].join('\n'));
    expect(span.source).toMatchObject({ type: 'diff', commit: edit, parent: root, path: 'src/a.ts', startLine: 1, endLine: 10, hunks: 1 });
  });

  it('cuts a hunk to the range and attributes deleted lines to the next post-image line', async () => {
    // Post-image: "line 30a" is line 30, "line 30b" 31, "line 31".."line 34" 32-35, "line 36" 36; the
    // deleted "line 35" sits before post-image line 36, the deleted "line 30" before line 30.
    const cut = async (range: string): Promise<string[]> => (await diffs.read(diffRef(`diff:${edit}#src/a.ts#${range}`))).text.split('\n').slice(2);
    expect(await cut('L31-L35')).toEqual(['@@ -31,4 +31,5 @@', '+line 30b', ' line 31', ' line 32', ' line 33', ' line 34']);
    expect(await cut('L31-L36')).toEqual(['@@ -31,6 +31,6 @@', '+line 30b', ' line 31', ' line 32', ' line 33', ' line 34', '-line 35', ' line 36']);
    expect(await cut('L30')).toEqual(['@@ -30,1 +30,1 @@', '-line 30', '+line 30a']);
  });

  it('returns the whole diff of the path without a range', async () => {
    const span = await diffs.read(diffRef(`diff:${edit}#src/a.ts`));
    expect(span.source).toMatchObject({ hunks: 2 });
    expect(span.text).toContain('+line 5 changed');
    expect(span.text).toContain('-line 35');
  });

  it('diffs a root commit against the empty tree and a deletion against its pre-image lines', async () => {
    const added = await diffs.read(diffRef(`diff:${root}#src/a.ts#L1-L2`));
    expect(added.text).toBe(['--- /dev/null', '+++ b/src/a.ts', '@@ -0,0 +1,2 @@', '+line 1', '+line 2'].join('\n'));
    expect(added.source).toMatchObject({ parent: null });
    const deleted = await diffs.read(diffRef(`diff:${removal}#gone.txt#L1`));
    expect(deleted.text).toBe(['--- a/gone.txt', '+++ /dev/null', '@@ -1,1 +0,0 @@', '-bye'].join('\n'));
  });

  it('gives the same text for the same pointer, and treats a path as a path, not a glob', async () => {
    const a = await diffs.read(diffRef(`diff:${edit.slice(0, 10)}#src/a.ts#L1-L40`));
    const b = await diffs.read(diffRef(`diff:${edit}#src/a.ts#L1-L40`));
    expect(a.text).toBe(b.text);
    expect((await rejected(diffs.read(diffRef(`diff:${edit}#src/*.ts`)))).code).toBe('NOT_FOUND');
  });

  it('reports an unchanged path, a range without changes and an unknown commit as NOT_FOUND', async () => {
    expect((await rejected(diffs.read(diffRef(`diff:${removal}#src/a.ts`)))).data).toMatchObject({ reason: 'no-change' });
    expect((await rejected(diffs.read(diffRef(`diff:${edit}#src/a.ts#L15-L20`)))).data).toMatchObject({ reason: 'no-change-in-range' });
    expect((await rejected(diffs.read(diffRef(`diff:${'f'.repeat(40)}#src/a.ts`)))).data).toMatchObject({ reason: 'unknown-commit' });
  });
});
