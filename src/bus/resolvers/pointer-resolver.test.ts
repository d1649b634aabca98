import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventId, SessionId } from '../../model/ids.js';
import { EMPTY_TASK_STATE, type TaskState } from '../../model/task-state.js';
import { createGptTokenizer } from '../../providers/gpt-tokenizer.js';
import type { ArtifactContent } from './artifact-resolver.js';
import { DEFAULT_DEREF_MAX_TOKENS, PointerResolver, createPointerResolver } from './pointer-resolver.js';
import { openRepoResolver, type RepoResolver } from './repo-resolver.js';
import type { SamEvent, SamSource, SamTaskState } from './sam-resolver.js';
import type { TestResult } from './test-resolver.js';
import { createTempRepo, numberedLines, rejected, type TempRepo } from './test-support.js';
import { sha256Hex } from './text-span.js';

const tokenizer = createGptTokenizer();
const countTokens = (text: string): number => tokenizer.count(text);

const S1 = 's1' as SessionId;
const EVENTS: SamEvent[] = [
  { id: 'evt_01jhz3v8g6q2w5x7y9z0a1b2c3' as EventId, sessionId: S1, turn: 4, kind: 'decision', ts: '2026-01-08T09:30:00.000Z', content: 'Publish under engram.dev.' },
  { id: 'evt_01jhz3v8g6q2w5x7y9z0a1b2c4' as EventId, sessionId: S1, turn: 5, kind: 'note', ts: '2026-01-08T09:31:00.000Z', content: 'Remember the DNS TTL.' },
];
const CARD_STATE: TaskState = { ...EMPTY_TASK_STATE, goals: ['ship the bus'], phase: 'implementing' };
const CARDS: SamTaskState[] = [{ sessionId: S1, version: 2, ts: '2026-01-08T09:32:00.000Z', eventId: 'evt_01jhz3v8g6q2w5x7y9z0a1b2c5', state: CARD_STATE }];

/** The event store as the engine exposes it to the bus: a lookup by id. Backed by arrays here. */
const sam: SamSource = {
  getEvent: async (id) => EVENTS.find((e) => e.id === id) ?? null,
  getTaskState: async (sessionId, version) => CARDS.find((c) => c.sessionId === sessionId && c.version === version) ?? null,
};
const RESULTS: TestResult[] = [{ id: 'run-7/ledger.test.ts::atomic', status: 'failed', name: 'reservation is atomic', durationMs: 12, output: 'expected 1 to be 2' }];

describe('PointerResolver', () => {
  let repo: TempRepo;
  let gitRepo: RepoResolver;
  let resolver: PointerResolver;
  let commit: string;
  let later: string;

  beforeAll(async () => {
    repo = createTempRepo();
    commit = repo.commit({ 'src/ledger.ts': numberedLines(2000, 'export const reservation =') });
    later = repo.commit({ 'src/ledger.ts': numberedLines(2000, 'export const reservation = 2 +') });
    gitRepo = await openRepoResolver({ repository: repo.dir, name: 'engram' });
    const spec: ArtifactContent = { sha256: sha256Hex('# Budgets\n\nThree repo spans.\n'), text: '# Budgets\n\nThree repo spans.\n' };
    resolver = createPointerResolver({
      countTokens,
      repo: gitRepo,
      artifacts: { getArtifact: async (name) => (name === 'SPEC.md' ? spec : null) },
      sam,
      tests: { getTestResult: async (id) => RESULTS.find((r) => r.id === id) ?? null },
    });
  });

  afterAll(async () => {
    await gitRepo.close();
    repo.remove();
  });

  it('returns the excerpt, its digest, its tokens and the exact pointer used (PAS Bus §6.2, §8.2)', async () => {
    const pointer = { type: 'repo' as const, ref: `repo:src/ledger.ts#L10-L12@${commit}` };
    const result = await resolver.deref(pointer);
    expect(result.excerpt).toBe('export const reservation = 10\nexport const reservation = 11\nexport const reservation = 12');
    expect(result.contentDigest).toBe(sha256Hex(result.excerpt));
    expect(result.spanDigest).toBe(result.contentDigest);
    expect(result.tokens).toBe(countTokens(result.excerpt));
    expect(result.isTruncated).toBe(false);
    expect(result.lines).toEqual({ start: 10, end: 12 });
    expect(result.pointer).toEqual(pointer);
    expect(result.source).toMatchObject({ type: 'repo', repository: 'engram', commit, path: 'src/ledger.ts', startLine: 10, endLine: 12, totalLines: 2000 });
  });

  it('resolves the same pointer to the same digest, and a later commit to a different one', async () => {
    const a = await resolver.deref(`repo:src/ledger.ts#L100-L140@${commit}`);
    const b = await resolver.deref({ type: 'repo', ref: `repo:src/ledger.ts@${commit}`, span: 'L100-L140' });
    const c = await resolver.deref(`repo:src/ledger.ts#L100-L140@${later}`);
    expect(b.contentDigest).toBe(a.contentDigest);
    expect(c.contentDigest).not.toBe(a.contentDigest);
  });

  it(`caps the excerpt at maxTokens (default ${DEFAULT_DEREF_MAX_TOKENS}) on whole lines; the span digest does not depend on the cap`, async () => {
    const whole = await resolver.deref(`repo:src/ledger.ts@${commit}`);
    expect(whole.isTruncated).toBe(true);
    expect(whole.tokens).toBeLessThanOrEqual(DEFAULT_DEREF_MAX_TOKENS);
    expect(whole.tokens).toBeGreaterThan(DEFAULT_DEREF_MAX_TOKENS - 20);
    expect(whole.lines!.start).toBe(1);
    expect(whole.excerpt.split('\n')).toHaveLength(whole.lines!.end);
    const small = await resolver.deref(`repo:src/ledger.ts@${commit}`, { maxTokens: 50 });
    expect(small.tokens).toBeLessThanOrEqual(50);
    expect(whole.excerpt.startsWith(small.excerpt)).toBe(true);
    expect(small.spanDigest).toBe(whole.spanDigest);
    expect(small.contentDigest).not.toBe(whole.contentDigest);
    expect(small.contentDigest).toBe(sha256Hex(small.excerpt));
  });

  it("checks a pointer's recorded digest against the content (LESS §13.1)", async () => {
    const ref = `repo:src/ledger.ts#L1-L3@${commit}`;
    const first = await resolver.deref(ref);
    await expect(resolver.deref({ type: 'repo', ref, digest: first.spanDigest })).resolves.toMatchObject({ contentDigest: first.contentDigest });
    await expect(resolver.deref({ type: 'repo', ref, digest: `sha256:${first.spanDigest.slice(0, 12)}` })).resolves.toBeDefined();
    const changed = await rejected(resolver.deref({ type: 'repo', ref: `repo:src/ledger.ts#L1-L3@${later}`, digest: first.spanDigest }));
    expect(changed.code).toBe('POINTER_INVALID');
    expect(changed.data).toMatchObject({ field: 'pointer.digest', reason: 'digest-mismatch' });
    expect((await rejected(resolver.deref({ type: 'repo', ref, digest: 'md5:abc' }))).data).toMatchObject({ reason: 'bad-digest' });
  });

  it('refuses bad input with errors naming the field', async () => {
    expect((await rejected(resolver.deref({ type: 'file', ref: 'x' } as never))).data.field).toBe('pointer.type');
    expect((await rejected(resolver.deref({ type: 'repo', ref: 'repo:a.ts', extra: 1 } as never))).data.field).toBe('pointer.extra');
    const noSha = await rejected(resolver.deref('repo:src/ledger.ts#L1-L3'));
    expect(noSha.code).toBe('POINTER_INVALID');
    expect(noSha.data).toMatchObject({ reason: 'missing-commit' });
    for (const maxTokens of [0, 1.5, 16_001]) {
      expect((await rejected(resolver.deref(`repo:src/ledger.ts@${commit}`, { maxTokens }))).data.field).toBe('maxTokens');
    }
  });

  it('reports a nonexistent file as NOT_FOUND through the resolver', async () => {
    const err = await rejected(resolver.deref(`repo:src/missing.ts#L1-L2@${commit}`));
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toContain('no file src/missing.ts');
  });

  it('dispatches artifact, diff, sam and test pointers', async () => {
    const sec = await resolver.deref(`artifact:SPEC.md#sec=Budgets@${sha256Hex('# Budgets\n\nThree repo spans.\n').slice(0, 8)}`);
    expect(sec.excerpt).toBe('# Budgets\n\nThree repo spans.');
    expect(sec.lines).toEqual({ start: 1, end: 3 });
    const diff = await resolver.deref(`diff:${later}#src/ledger.ts#L7`);
    expect(diff.excerpt).toContain('+export const reservation = 2 + 7');
    expect(diff.source).toMatchObject({ type: 'diff', parent: commit });
    expect(diff.lines).toBeUndefined();
    expect((await resolver.deref(`sam:decision:${EVENTS[0]!.id}@2026-01-08`)).excerpt).toBe('Publish under engram.dev.');
    expect((await resolver.deref(`sam:event:${EVENTS[1]!.id}`)).source).toMatchObject({ type: 'sam', eventKind: 'note', turn: 5 });
    expect(JSON.parse((await resolver.deref('sam:task:s1@2')).excerpt)).toEqual(CARD_STATE);
    expect((await resolver.deref('test:run-7/ledger.test.ts::atomic')).excerpt).toBe('failed reservation is atomic (12 ms)\nexpected 1 to be 2');
  });

  it('refuses sam pointers whose kind or date does not match the entry', async () => {
    expect((await rejected(resolver.deref(`sam:decision:${EVENTS[1]!.id}`))).data).toMatchObject({ reason: 'kind-mismatch' });
    expect((await rejected(resolver.deref(`sam:decision:${EVENTS[0]!.id}@2026-01-09`))).data).toMatchObject({ reason: 'date-mismatch' });
    expect((await resolver.deref(`sam:decision:${EVENTS[0]!.id}@2026-01-08T09:30:00Z`)).excerpt).toBe('Publish under engram.dev.');
    expect((await resolver.deref(`sam:decision:${EVENTS[0]!.id}@2026-01-08T11:30+02:00`)).excerpt).toBe('Publish under engram.dev.');
    expect((await rejected(resolver.deref(`sam:decision:${EVENTS[0]!.id}@2026-01-08T09:31:00Z`))).data).toMatchObject({ reason: 'date-mismatch' });
    expect((await rejected(resolver.deref('sam:event:evt_unknown'))).code).toBe('NOT_FOUND');
    expect((await rejected(resolver.deref('sam:task:s1@9'))).code).toBe('NOT_FOUND');
    expect((await rejected(resolver.deref('test:nope'))).code).toBe('NOT_FOUND');
  });

  it('never fetches urls: DEREF_DENIED without a snapshot source, the stored copy with one', async () => {
    const denied = await rejected(resolver.deref('url:https://example.com/spec'));
    expect(denied.code).toBe('DEREF_DENIED');
    expect(denied.data).toMatchObject({ reason: 'url-not-fetched' });
    const withCopies = new PointerResolver({ countTokens, urls: { getSnapshot: async (url) => (url === 'https://example.com/spec' ? { text: 'saved copy', fetchedAt: '2026-01-01T00:00:00Z' } : null) } });
    expect(await withCopies.deref('url:https://example.com/spec')).toMatchObject({ excerpt: 'saved copy', source: { type: 'url', fetchedAt: '2026-01-01T00:00:00Z' } });
    expect((await rejected(withCopies.deref('url:https://example.com/other'))).code).toBe('NOT_FOUND');
  });

  it('reports pointer types it has no source for as NOT_FOUND', async () => {
    const bare = new PointerResolver({ countTokens });
    for (const ref of [`repo:a.ts@${commit}`, `diff:${commit}#a.ts`, 'artifact:a.md@deadbeef', 'sam:event:x', 'test:x']) {
      expect((await rejected(bare.deref(ref))).data).toMatchObject({ reason: 'no-source' });
    }
  });
});
