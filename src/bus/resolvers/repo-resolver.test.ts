import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePointerRef, type RepoRef } from '../pointer.js';
import { openRepoResolver, type RepoResolver } from './repo-resolver.js';
import { createTempRepo, numberedLines, rejected, type TempRepo } from './test-support.js';
import { sha256Hex } from './text-span.js';

const repoRef = (ref: string): RepoRef => parsePointerRef(ref) as RepoRef;

describe('RepoResolver', () => {
  let repo: TempRepo;
  let resolver: RepoResolver;
  let first: string;
  let second: string;

  beforeAll(async () => {
    repo = createTempRepo();
    first = repo.commit({
      'src/a.ts': numberedLines(50, 'a v1'),
      'docs/readme.md': '# Title\r\n\r\nwindows line endings\r\n',
      'empty.txt': '',
      'no-final-newline.txt': 'one\ntwo',
      'name with spaces.txt': 'spaced\n',
      'bin.dat': 'PNG\u0000\u0001\u0002',
      'links/inside': { symlink: '../src/a.ts' },
      'links/outside': { symlink: '../../outside.txt' },
      'links/absolute': { symlink: '/etc/passwd' },
      'links/dangling': { symlink: 'nothing-here' },
      'links/dir': { symlink: '../src' },
      'big.txt': numberedLines(40_000, 'big'),
    });
    second = repo.commit({ 'src/a.ts': numberedLines(60, 'a v2') });
    resolver = await openRepoResolver({ repository: repo.dir, name: 'fixture' });
  });

  afterAll(async () => {
    await resolver.close();
    repo.remove();
  });

  it('reads a line span at the pinned commit, with provenance', async () => {
    const span = await resolver.read(repoRef(`repo:src/a.ts#L3-L5@${first}`));
    expect(span.text).toBe('a v1 3\na v1 4\na v1 5');
    expect(span.firstLine).toBe(3);
    expect(span.source).toEqual({
      type: 'repo',
      repository: 'fixture',
      commit: first,
      path: 'src/a.ts',
      blob: repo.git('rev-parse', `${first}:src/a.ts`).trim(),
      startLine: 3,
      endLine: 5,
      totalLines: 50,
    });
  });

  it('gives different content at different commits and the same content for the same pointer', async () => {
    const a = await resolver.read(repoRef(`repo:src/a.ts#L10-L12@${first}`));
    const b = await resolver.read(repoRef(`repo:src/a.ts#L10-L12@${second}`));
    const again = await resolver.read(repoRef(`repo:src/a.ts#L10-L12@${first}`));
    expect(a.text).toBe('a v1 10\na v1 11\na v1 12');
    expect(b.text).toBe('a v2 10\na v2 11\na v2 12');
    expect(sha256Hex(again.text)).toBe(sha256Hex(a.text));
    expect(sha256Hex(b.text)).not.toBe(sha256Hex(a.text));
  });

  it('reads from the commit, never the working tree', async () => {
    const { writeFileSync } = await import('node:fs');
    writeFileSync(`${repo.dir}/src/a.ts`, 'uncommitted\n');
    try {
      expect((await resolver.read(repoRef(`repo:src/a.ts#L1@${second}`))).text).toBe('a v2 1');
    } finally {
      repo.git('checkout', '--', 'src/a.ts');
    }
  });

  it('accepts an abbreviated sha that git resolves', async () => {
    const span = await resolver.read(repoRef(`repo:src/a.ts#L1@${second.slice(0, 7)}`));
    expect(span.source).toMatchObject({ commit: second });
    expect(span.text).toBe('a v2 1');
  });

  it('reads whole files, empty files, files without a final newline, paths with spaces, CRLF lines', async () => {
    expect((await resolver.read(repoRef(`repo:no-final-newline.txt@${first}`))).text).toBe('one\ntwo');
    expect((await resolver.read(repoRef(`repo:no-final-newline.txt#L2@${first}`))).text).toBe('two');
    expect((await resolver.read(repoRef(`repo:empty.txt@${first}`))).text).toBe('');
    expect((await resolver.read(repoRef(`repo:name with spaces.txt@${first}`))).text).toBe('spaced');
    expect((await resolver.read(repoRef(`repo:docs/readme.md#L1-L3@${first}`))).text).toBe('# Title\r\n\r\nwindows line endings');
  });

  it('follows a symlink that stays inside the repository, including through a linked directory', async () => {
    expect((await resolver.read(repoRef(`repo:links/inside#L2@${first}`))).text).toBe('a v1 2');
    expect((await resolver.read(repoRef(`repo:links/dir/a.ts#L2@${first}`))).text).toBe('a v1 2');
  });

  it('rejects symlinks that point out of the repository', async () => {
    for (const path of ['links/outside', 'links/absolute']) {
      const err = await rejected(resolver.read(repoRef(`repo:${path}@${first}`)));
      expect(err.code).toBe('POINTER_INVALID');
      expect(err.data).toMatchObject({ field: 'pointer', reason: 'symlink-outside-repo' });
      expect(err.message).toContain('outside the repository');
    }
  });

  it('reports a missing file, a dangling symlink, a directory and a binary file clearly', async () => {
    const missing = await rejected(resolver.read(repoRef(`repo:src/nope.ts#L1@${first}`)));
    expect(missing.code).toBe('NOT_FOUND');
    expect(missing.message).toContain('no file src/nope.ts');
    expect((await rejected(resolver.read(repoRef(`repo:links/dangling@${first}`)))).code).toBe('NOT_FOUND');
    expect((await rejected(resolver.read(repoRef(`repo:src@${first}`)))).data).toMatchObject({ reason: 'not-a-file' });
    expect((await rejected(resolver.read(repoRef(`repo:bin.dat@${first}`)))).data).toMatchObject({ reason: 'binary-file' });
  });

  it('rejects a span past the end of the file', async () => {
    const past = await rejected(resolver.read(repoRef(`repo:src/a.ts#L49-L51@${first}`)));
    expect(past.code).toBe('POINTER_INVALID');
    expect(past.data).toMatchObject({ reason: 'span-past-end', totalLines: 50 });
    expect(past.message).toContain('has 50 lines');
    expect((await rejected(resolver.read(repoRef(`repo:src/a.ts#L51@${first}`)))).code).toBe('POINTER_INVALID');
    expect((await resolver.read(repoRef(`repo:src/a.ts#L51-L60@${second}`))).text).toContain('a v2 60');
  });

  it('reports an unknown commit as NOT_FOUND', async () => {
    const err = await rejected(resolver.read(repoRef(`repo:src/a.ts#L1@${'0123456789abcdef'.repeat(2)}01234567`)));
    expect(err.code).toBe('NOT_FOUND');
    expect(err.data).toMatchObject({ reason: 'unknown-commit' });
    // A blob's or tree's sha is not a commit.
    const tree = repo.git('rev-parse', `${first}^{tree}`).trim();
    expect((await rejected(resolver.read(repoRef(`repo:src/a.ts#L1@${tree}`)))).code).toBe('NOT_FOUND');
  });

  it('refuses traversal and absolute paths even when handed an unparsed ref object', async () => {
    for (const path of ['../etc/passwd', '/etc/passwd', './src/a.ts']) {
      const err = await rejected(resolver.read({ type: 'repo', path, commit: first }));
      expect(err.code).toBe('POINTER_INVALID');
    }
  });

  it('answers many concurrent reads over one cat-file process, correctly and in order', async () => {
    await resolver.read(repoRef(`repo:src/a.ts#L1@${first}`));
    const pid = resolver.pid;
    const asks = Array.from({ length: 300 }, (_, i) => {
      const commit = i % 2 === 0 ? first : second;
      const line = (i % 50) + 1;
      return { ref: repoRef(`repo:src/a.ts#L${line}@${commit}`), expected: `a ${commit === first ? 'v1' : 'v2'} ${line}` };
    });
    const order: number[] = [];
    const texts = await Promise.all(
      asks.map(({ ref }, i) =>
        resolver.read(ref).then((span) => {
          order.push(i);
          return span.text;
        }),
      ),
    );
    expect(texts).toEqual(asks.map((a) => a.expected));
    expect(order).toEqual(asks.map((_, i) => i));
    expect(resolver.pid).toBe(pid);
  });

  it('recovers when the cat-file process is killed mid-way', async () => {
    await resolver.read(repoRef(`repo:src/a.ts#L1@${first}`));
    const pid = resolver.pid!;
    // Whole reads of a 600 KB file keep the pipe busy long enough to kill the child between two answers.
    const isAnswered: boolean[] = [];
    const reads = Array.from({ length: 40 }, (_, i) =>
      resolver.read(repoRef(`repo:big.txt#L${i + 1}-L40000@${first}`)).then((span) => {
        isAnswered[i] = true;
        return span;
      }),
    );
    await reads[0];
    const answeredBeforeKill = isAnswered.filter(Boolean).length;
    process.kill(pid, 'SIGKILL');
    const spans = await Promise.all(reads);
    expect(answeredBeforeKill).toBeLessThan(10);
    spans.forEach((span, i) => expect(span.text.startsWith(`big ${i + 1}\nbig ${i + 2}\n`)).toBe(true));
    expect(spans.every((s) => s.text.endsWith('big 40000'))).toBe(true);
    expect(resolver.pid).not.toBe(pid);
    expect((await resolver.read(repoRef(`repo:src/a.ts#L7@${first}`))).text).toBe('a v1 7');
  });

  it('refuses to open a directory that is not a git repository', async () => {
    const err = await rejected(openRepoResolver({ repository: '/' }));
    expect(err.code).toBe('NOT_FOUND');
    expect(err.data.field).toBe('repository');
  });

  it('matches git show for every file at every commit', async () => {
    for (const commit of [first, second]) {
      const expected = execFileSync('git', ['-C', repo.dir, 'show', `${commit}:src/a.ts`], { encoding: 'utf8' });
      expect((await resolver.read(repoRef(`repo:src/a.ts@${commit}`))).text).toBe(expected.replace(/\n$/, ''));
    }
  });
});
