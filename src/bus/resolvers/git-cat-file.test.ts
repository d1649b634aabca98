import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitCatFile } from './git-cat-file.js';
import { createTempRepo, rejected, type TempRepo } from './test-support.js';

/** A real child process that does something other than git: dies, hangs, or talks nonsense. */
function nodeChild(script: string): { command: string; args: string[] } {
  return { command: process.execPath, args: ['-e', script] };
}

describe('GitCatFile', () => {
  let repo: TempRepo;
  let head: string;
  let scratch: string;

  beforeAll(() => {
    repo = createTempRepo();
    head = repo.commit({ 'a.txt': 'alpha\n', 'b.txt': 'beta\n' });
    scratch = mkdtempSync(join(tmpdir(), 'engram-cat-file-'));
  });

  afterAll(() => {
    repo.remove();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('answers objects, missing and ambiguous names in order', async () => {
    const cat = new GitCatFile({ repository: repo.dir });
    try {
      const [a, missing, b, commit] = await Promise.all([
        cat.request(`${head}:a.txt`),
        cat.request(`${head}:nope.txt`),
        cat.request(`${head}:b.txt`),
        cat.request(`${head.slice(0, 8)}^{commit}`),
      ]);
      expect(a).toMatchObject({ kind: 'object', type: 'blob', size: 6 });
      expect(a.kind === 'object' && a.content?.toString()).toBe('alpha\n');
      expect(missing).toEqual({ kind: 'missing' });
      expect(b.kind === 'object' && b.content?.toString()).toBe('beta\n');
      expect(commit).toMatchObject({ kind: 'object', type: 'commit', oid: head });
    } finally {
      await cat.close();
    }
  });

  it('skips, without buffering, the content of objects over maxContentBytes', async () => {
    const cat = new GitCatFile({ repository: repo.dir, maxContentBytes: 5 });
    try {
      const [big, next] = await Promise.all([cat.request(`${head}:a.txt`), cat.request(`${head}:b.txt`)]);
      expect(big).toEqual({ kind: 'object', oid: expect.any(String), type: 'blob', size: 6 });
      expect(next.kind === 'object' && next.content?.toString()).toBe('beta\n');
    } finally {
      await cat.close();
    }
  });

  it('restarts a dead child once, then fails the outstanding requests with STORAGE_ERROR', async () => {
    const starts = join(scratch, 'starts.log');
    const cat = new GitCatFile({
      repository: repo.dir,
      spawnCommand: nodeChild(`require('fs').appendFileSync(${JSON.stringify(starts)}, 'x'); process.exit(3)`),
    });
    const err = await rejected(cat.request('HEAD:a.txt'));
    expect(err.code).toBe('STORAGE_ERROR');
    expect(err.message).toContain('exited with code 3');
    expect(readFileSync(starts, 'utf8')).toBe('xx');
    // A later request tries again with a fresh child.
    await rejected(cat.request('HEAD:a.txt'));
    expect(readFileSync(starts, 'utf8')).toBe('xxxx');
    await cat.close();
  });

  it('kills a child that talks out of protocol, and fails after one restart', async () => {
    const cat = new GitCatFile({
      repository: repo.dir,
      spawnCommand: nodeChild(`process.stdin.on('data', () => process.stdout.write('hello there\\n'))`),
    });
    const err = await rejected(cat.request('HEAD:a.txt'));
    expect(err.code).toBe('STORAGE_ERROR');
    expect(err.message).toContain('SIGKILL');
    await cat.close();
  });

  it('fails requests with STORAGE_ERROR when the child answers nothing for requestTimeoutMs', async () => {
    const cat = new GitCatFile({ repository: repo.dir, requestTimeoutMs: 300, spawnCommand: nodeChild('process.stdin.resume()') });
    const err = await rejected(cat.request('HEAD:a.txt'));
    expect(err.code).toBe('STORAGE_ERROR');
    expect(err.data).toMatchObject({ reason: 'timeout' });
    await cat.close();
  });

  it('answers what was asked before close(), then refuses new requests', async () => {
    const cat = new GitCatFile({ repository: repo.dir });
    const pending = cat.request(`${head}:a.txt`);
    await cat.close();
    expect((await pending).kind).toBe('object');
    expect((await rejected(cat.request(`${head}:a.txt`))).code).toBe('STORAGE_ERROR');
  });

  it('does not keep Node running when idle and never closed', () => {
    const module = fileURLToPath(new URL('./repo-resolver.ts', import.meta.url));
    const script = `
      const { openRepoResolver } = await import(${JSON.stringify(module)});
      const r = await openRepoResolver({ repository: ${JSON.stringify(repo.dir)} });
      const span = await r.read({ type: 'repo', path: 'a.txt', commit: ${JSON.stringify(head)} });
      console.log(span.text);`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(out.trim()).toBe('alpha');
  });
});
