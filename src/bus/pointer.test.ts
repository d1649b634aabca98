import { describe, expect, it } from 'vitest';
import { checkPointerRef, formatPointerRef, parsePointer, parsePointerRef, toPointer, type PointerRef } from './pointer.js';
import { thrown } from './resolvers/test-support.js';

const SHA = '3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39';
const DIGEST = 'a'.repeat(64);

function problem(ref: string): { code: string; reason: unknown; field: unknown; message: string } {
  const err = thrown(() => parsePointerRef(ref));
  return { code: err.code, reason: err.data.reason, field: err.data.field, message: err.message };
}

describe('parsePointerRef', () => {
  it.each<[string, PointerRef]>([
    [`repo:services/gateway/vendor_client.py#L280-L360@${SHA}`, { type: 'repo', path: 'services/gateway/vendor_client.py', lines: { start: 280, end: 360 }, commit: SHA }],
    [`repo:README.md#L7@abc1234`, { type: 'repo', path: 'README.md', lines: { start: 7, end: 7 }, commit: 'abc1234' }],
    [`repo:node_modules/@types/x.d.ts@${SHA}`, { type: 'repo', path: 'node_modules/@types/x.d.ts', commit: SHA }],
    [`artifact:SPEC_Budget_Enforcement.md#sec=Rules@deadbeef`, { type: 'artifact', name: 'SPEC_Budget_Enforcement.md', section: 'Rules', digest: 'deadbeef' }],
    [`artifact:build.log#L10-L20@${DIGEST}`, { type: 'artifact', name: 'build.log', lines: { start: 10, end: 20 }, digest: DIGEST }],
    [`artifact:art_${DIGEST}#sec=$.a.b[2]`, { type: 'artifact', name: `art_${DIGEST}`, section: '$.a.b[2]' }],
    ['sam:decision:publish-domain@2026-01-08', { type: 'sam', kind: 'decision', id: 'publish-domain', at: '2026-01-08' }],
    ['sam:event:evt_01jabcdefghjkmnpqrstvwxyz0', { type: 'sam', kind: 'event', id: 'evt_01jabcdefghjkmnpqrstvwxyz0' }],
    ['sam:task:user@host@3', { type: 'sam', kind: 'task', id: 'user@host', at: '3' }],
    [`diff:${SHA}#src/a.ts#L3-L9`, { type: 'diff', commit: SHA, path: 'src/a.ts', lines: { start: 3, end: 9 } }],
    [`diff:abc1234#src/a.ts`, { type: 'diff', commit: 'abc1234', path: 'src/a.ts' }],
    ['test:src/bus/pointer.test.ts > parses', { type: 'test', id: 'src/bus/pointer.test.ts > parses' }],
    ['url:https://example.com/docs?q=1#frag', { type: 'url', url: 'https://example.com/docs?q=1#frag' }],
  ])('parses %s', (ref, expected) => {
    expect(parsePointerRef(ref)).toEqual(expected);
    expect(formatPointerRef(parsePointerRef(ref))).toBe(ref);
  });

  it('formats canonically: lowercase commits, L<a>-L<b>, a single line as L<a>', () => {
    expect(formatPointerRef(parsePointerRef(`repo:a.py#L5-5@${SHA.toUpperCase()}`))).toBe(`repo:a.py#L5@${SHA}`);
    expect(formatPointerRef(parsePointerRef(`repo:a.py#L5-9@${SHA}`))).toBe(`repo:a.py#L5-L9@${SHA}`);
    expect(toPointer(parsePointerRef(`diff:ABC1234#a.py`))).toEqual({ type: 'diff', ref: 'diff:abc1234#a.py' });
  });

  it('rejects a repo pointer without a commit (v0.1, PAS Bus §11.2)', () => {
    for (const ref of ['repo:path/to/file.py#L120-L188@', 'repo:path/to/file.py#L120-L188', 'repo:node_modules/@types/x.d.ts']) {
      expect(problem(ref)).toMatchObject({ code: 'POINTER_INVALID', reason: 'missing-commit', field: 'pointer' });
    }
    expect(problem('repo:a.py@main')).toMatchObject({ reason: 'bad-commit' });
    expect(problem('repo:a.py@abc')).toMatchObject({ reason: 'bad-commit' });
    expect(problem(`repo:a.py@${'a'.repeat(65)}`)).toMatchObject({ reason: 'bad-commit' });
  });

  it.each([
    ['../etc/passwd', 'path-traversal'],
    ['src/../../etc/passwd', 'path-traversal'],
    ['/etc/passwd', 'absolute-path'],
    ['C:/Windows/win.ini', 'absolute-path'],
    ['src\\a.ts', 'backslash'],
    ['src/a\u0000.ts', 'control-character'],
    ['src/a.ts\nHEAD:secret', 'control-character'],
    ['./src/a.ts', 'unnormalized-path'],
    ['src//a.ts', 'unnormalized-path'],
    ['src/', 'unnormalized-path'],
  ])('rejects the repo path %j (%s)', (path, reason) => {
    const p = problem(`repo:${path}#L1-L2@${SHA}`);
    expect(p).toMatchObject({ code: 'POINTER_INVALID', reason, field: 'pointer' });
    expect(p.message).toContain('path');
    expect(problem(`diff:${SHA}#${path}`)).toMatchObject({ code: 'POINTER_INVALID', reason });
  });

  it.each([
    ['L0-L3', 'line numbers start at 1'],
    ['L9-L3', 'ends (L3) before it starts (L9)'],
    ['L1-L2000000', 'line numbers stop at 1000000'],
    ['L1-L99999999', 'not a line range'],
    ['lines=1-3', 'not a line range'],
  ])('rejects the line range %s', (range, message) => {
    const p = problem(`repo:a.py#${range}@${SHA}`);
    expect(p).toMatchObject({ code: 'POINTER_INVALID', reason: 'bad-range' });
    expect(p.message).toContain(message);
  });

  it('requires artifacts to be pinned by digest unless named by content id', () => {
    expect(problem('artifact:SPEC_Foo.md#sec=BudgetRules@')).toMatchObject({ reason: 'missing-digest' });
    expect(problem('artifact:SPEC_Foo.md#sec=BudgetRules')).toMatchObject({ reason: 'missing-digest' });
    expect(problem('artifact:SPEC_Foo.md#sec=Rules@xyz')).toMatchObject({ reason: 'bad-digest' });
    expect(problem('artifact:SPEC_Foo.md#sec=Rules@abc1')).toMatchObject({ reason: 'bad-digest' });
    expect(problem('artifact:SPEC_Foo.md#page=3@deadbeef')).toMatchObject({ reason: 'syntax' });
    expect(parsePointerRef('artifact:SPEC_Foo.md@sha256:DEADBEEF')).toEqual({ type: 'artifact', name: 'SPEC_Foo.md', digest: 'deadbeef' });
  });

  it('checks sam kinds, ids and versions', () => {
    expect(problem('sam:preference:x')).toMatchObject({ reason: 'unknown-sam-kind' });
    expect(problem('sam:task:s1')).toMatchObject({ reason: 'missing-version' });
    expect(problem('sam:task:s1@0')).toMatchObject({ reason: 'bad-version' });
    expect(problem('sam:decision:x@3')).toMatchObject({ reason: 'bad-version' });
    expect(problem('sam:event:')).toMatchObject({ reason: 'bad-name' });
    expect(problem('sam:event:has space')).toMatchObject({ reason: 'bad-name' });
  });

  it('accepts only http(s) urls without credentials', () => {
    expect(problem('url:ftp://example.com/a')).toMatchObject({ reason: 'bad-url' });
    expect(problem('url:example.com')).toMatchObject({ reason: 'bad-url' });
    expect(problem('url:https://user:secret@example.com/')).toMatchObject({ reason: 'credentials-in-url' });
    expect(problem('url:https://example.com/\n')).toMatchObject({ reason: 'control-character' });
  });

  it('rejects unknown types, missing schemes and over-long refs', () => {
    expect(problem('file:a.py')).toMatchObject({ reason: 'unknown-type' });
    expect(problem('a.py')).toMatchObject({ reason: 'syntax' });
    expect(problem(`test:${'x'.repeat(301)}`)).toMatchObject({ reason: 'too-long' });
    expect(problem('test:')).toMatchObject({ reason: 'bad-name' });
  });

  it('returns a value from checkPointerRef instead of throwing', () => {
    expect(checkPointerRef(`repo:a.py@${SHA}`)).toMatchObject({ ok: true, pointer: { type: 'repo' } });
    const bad = checkPointerRef('repo:a.py', 'pointers[3].ref');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.data).toMatchObject({ field: 'pointers[3].ref', reason: 'missing-commit' });
  });
});

describe('parsePointer', () => {
  it('rejects a type that disagrees with the ref, naming the type field', () => {
    const err = thrown(() => parsePointer({ type: 'artifact', ref: `repo:a.py@${SHA}` }, 'pointers[1]'));
    expect(err.data).toMatchObject({ field: 'pointers[1].type', reason: 'type-mismatch' });
  });

  it('fills the line range from span, and rejects a span that contradicts the ref', () => {
    expect(parsePointer({ type: 'repo', ref: `repo:a.py@${SHA}`, span: 'L3-L4' })).toMatchObject({ lines: { start: 3, end: 4 } });
    expect(parsePointer({ type: 'repo', ref: `repo:a.py#L3-L4@${SHA}`, span: 'L3-L4' })).toMatchObject({ lines: { start: 3, end: 4 } });
    expect(thrown(() => parsePointer({ type: 'repo', ref: `repo:a.py#L3-L4@${SHA}`, span: 'L5-L6' })).data).toMatchObject({ field: 'pointer.span', reason: 'span-mismatch' });
    expect(parsePointer({ type: 'artifact', ref: 'artifact:S.md@deadbeef', span: 'sec=Budgets' })).toMatchObject({ section: 'Budgets' });
    expect(thrown(() => parsePointer({ type: 'test', ref: 'test:x', span: 'L1' })).data).toMatchObject({ reason: 'span-mismatch' });
  });

  it('names the ref field when the ref does not parse', () => {
    expect(thrown(() => parsePointer({ type: 'repo', ref: 'repo:../x@abcdef1' }, 'pointers[0]')).data).toMatchObject({
      field: 'pointers[0].ref',
      reason: 'path-traversal',
    });
  });
});
