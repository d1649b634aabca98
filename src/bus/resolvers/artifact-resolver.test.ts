import { describe, expect, it } from 'vitest';
import { parsePointerRef, type ArtifactRef } from '../pointer.js';
import { ArtifactResolver, type ArtifactContent, type ArtifactSource } from './artifact-resolver.js';
import { parseJsonPath, selectJsonPath } from './json-path.js';
import { findMarkdownSection, listMarkdownHeadings } from './markdown-sections.js';
import { rejected, thrown } from './test-support.js';
import { sha256Hex } from './text-span.js';

const SPEC = `# Engram Bus

Intro text.

## 3. Budgets

Budget intro.

### 3.1 Inline Budget

MAX_INLINE_TOKENS 800

### 3.2 Dereference Budget

MAX_REPO_SPANS 3

\`\`\`md
# not a heading inside a fence
\`\`\`

## Budget Rules ##

Reject oversize messages.

## Rules

Second rules section.

## Rules

Third.
`;

const CONFIG = JSON.stringify({ budgets: { maxRepoSpans: 3, roles: ['parent', 'child', 'reviewer'], 'max inline': 800 }, note: 'pointer-first' });

/** An in-memory artifact store that keeps every version: a real `ArtifactSource` needs no more than a map. */
class MemoryArtifacts implements ArtifactSource {
  private readonly versions = new Map<string, ArtifactContent[]>();
  put(name: string, text: string, mediaType?: string): string {
    const sha256 = sha256Hex(text);
    const list = this.versions.get(name) ?? [];
    list.push({ id: `art_${sha256}`, sha256, text, ...(mediaType ? { mediaType } : {}) });
    this.versions.set(name, list);
    this.versions.set(`art_${sha256}`, [list[list.length - 1]!]);
    return sha256;
  }
  async getArtifact(name: string, digest: string | undefined): Promise<ArtifactContent | null> {
    const list = this.versions.get(name) ?? [];
    return list.find((a) => digest !== undefined && a.sha256.startsWith(digest)) ?? list[list.length - 1] ?? null;
  }
}

/** Same store without history: only the latest version of a name. */
class LatestOnly extends MemoryArtifacts {
  override async getArtifact(name: string): Promise<ArtifactContent | null> {
    return super.getArtifact(name, undefined);
  }
}

const ref = (r: string): ArtifactRef => parsePointerRef(r) as ArtifactRef;

describe('ArtifactResolver', () => {
  const store = new MemoryArtifacts();
  const specSha = store.put('SPEC.md', SPEC, 'text/markdown');
  const configSha = store.put('config.json', CONFIG, 'application/json');
  const resolver = new ArtifactResolver(store);
  const pin = specSha.slice(0, 12);

  it('returns a markdown section up to the next heading of the same or higher level', async () => {
    const span = await resolver.read(ref(`artifact:SPEC.md#sec=3. Budgets@${pin}`));
    expect(span.text.split('\n')[0]).toBe('## 3. Budgets');
    expect(span.text).toContain('MAX_REPO_SPANS 3');
    expect(span.text).toContain('# not a heading inside a fence');
    expect(span.text).not.toContain('Budget Rules');
    expect(span.source).toMatchObject({ type: 'artifact', name: 'SPEC.md', sha256: specSha, addressing: 'heading', section: '3. Budgets', startLine: 5 });
    expect(span.firstLine).toBe(5);
  });

  it("matches a heading by text, case, slug, the seed's compact form and section number", async () => {
    const first = async (section: string): Promise<string> => (await resolver.read(ref(`artifact:SPEC.md#sec=${section}@${pin}`))).text.split('\n')[0]!;
    expect(await first('Budget Rules')).toBe('## Budget Rules ##');
    expect(await first('budget rules')).toBe('## Budget Rules ##');
    expect(await first('budget-rules')).toBe('## Budget Rules ##');
    expect(await first('BudgetRules')).toBe('## Budget Rules ##');
    expect(await first('3.1')).toBe('### 3.1 Inline Budget');
    expect(await first('rules-1')).toBe('## Rules');
    expect((await resolver.read(ref(`artifact:SPEC.md#sec=rules-1@${pin}`))).text).toContain('Third.');
    expect((await resolver.read(ref(`artifact:SPEC.md#sec=Rules@${pin}`))).text).toContain('Second rules section.');
  });

  it('returns JSON values by $-path or dotted path', async () => {
    const at = async (section: string): Promise<string> => (await resolver.read(ref(`artifact:config.json#sec=${section}@${configSha.slice(0, 8)}`))).text;
    expect(await at('$.budgets.roles[1]')).toBe('child');
    expect(await at('budgets.roles.2')).toBe('reviewer');
    expect(await at("$.budgets['max inline']")).toBe('800');
    expect(await at('$.budgets.roles')).toBe(JSON.stringify(['parent', 'child', 'reviewer'], null, 2));
    const missing = await rejected(resolver.read(ref(`artifact:config.json#sec=$.budgets.roles[7]@${configSha.slice(0, 8)}`)));
    expect(missing.code).toBe('NOT_FOUND');
    expect(missing.message).toContain('$.budgets.roles has no [7]');
  });

  it('reads line ranges and whole artifacts, by name or content id', async () => {
    expect((await resolver.read(ref(`artifact:SPEC.md#L1-L3@${pin}`))).text).toBe('# Engram Bus\n\nIntro text.');
    expect((await resolver.read(ref(`artifact:art_${configSha}`))).text).toBe(CONFIG);
  });

  it('reads the pinned version from a store that keeps versions', async () => {
    const s = new MemoryArtifacts();
    const v1 = s.put('notes.md', '# A\n\none\n');
    s.put('notes.md', '# A\n\ntwo\n');
    expect((await new ArtifactResolver(s).read(ref(`artifact:notes.md#sec=A@${v1.slice(0, 8)}`))).text).toBe('# A\n\none');
  });

  it('refuses with a clear error when the artifact changed since the pointer was made', async () => {
    const s = new LatestOnly();
    const v1 = s.put('notes.md', '# A\n\none\n');
    const v2 = s.put('notes.md', '# A\n\ntwo\n');
    const err = await rejected(new ArtifactResolver(s).read(ref(`artifact:notes.md#sec=A@${v1.slice(0, 8)}`)));
    expect(err.code).toBe('POINTER_INVALID');
    expect(err.data).toMatchObject({ reason: 'digest-mismatch', expected: v1.slice(0, 8), actual: v2 });
    expect(err.message).toContain('changed since the pointer was made');
  });

  it('reports unknown artifacts, sections, JSON paths on markdown and spans past the end', async () => {
    expect((await rejected(resolver.read(ref('artifact:nope.md@deadbeef')))).code).toBe('NOT_FOUND');
    const noSection = await rejected(resolver.read(ref(`artifact:SPEC.md#sec=Pricing@${pin}`)));
    expect(noSection.code).toBe('NOT_FOUND');
    expect(noSection.message).toContain('sections: engram-bus, 3-budgets');
    expect((await rejected(resolver.read(ref(`artifact:SPEC.md#sec=$.a@${pin}`)))).data).toMatchObject({ reason: 'not-json' });
    expect((await rejected(resolver.read(ref(`artifact:SPEC.md#L1-L999@${pin}`)))).data).toMatchObject({ reason: 'span-past-end' });
  });
});

describe('markdown sections', () => {
  it('lists ATX headings outside code fences with GitHub slugs', () => {
    expect(listMarkdownHeadings(SPEC).map((h) => [h.level, h.text, h.slug, h.line])).toEqual([
      [1, 'Engram Bus', 'engram-bus', 1],
      [2, '3. Budgets', '3-budgets', 5],
      [3, '3.1 Inline Budget', '31-inline-budget', 9],
      [3, '3.2 Dereference Budget', '32-dereference-budget', 13],
      [2, 'Budget Rules', 'budget-rules', 21],
      [2, 'Rules', 'rules', 25],
      [2, 'Rules', 'rules-1', 29],
    ]);
  });

  it('ends a section before the next heading of the same or higher level, without trailing blank lines', () => {
    expect(findMarkdownSection(SPEC, '3.1')).toMatchObject({ startLine: 9, endLine: 11 });
    expect(findMarkdownSection(SPEC, 'Engram Bus')).toMatchObject({ startLine: 1, endLine: 31 });
    expect(findMarkdownSection(SPEC, 'nothing')).toBeUndefined();
  });
});

describe('JSON paths', () => {
  it('parses $-paths and dotted paths and walks them', () => {
    expect(parseJsonPath('$.a.b[2]')).toEqual(['a', 'b', 2]);
    expect(parseJsonPath(`$['a.b']["c\\"d"]`)).toEqual(['a.b', 'c"d']);
    expect(parseJsonPath('a.0.b')).toEqual(['a', 0, 'b']);
    expect(parseJsonPath('$')).toEqual([]);
    expect(selectJsonPath({ a: [{ b: 1 }] }, ['a', 0, 'b'])).toEqual({ found: true, value: 1 });
    expect(selectJsonPath({ a: { 0: 'key' } }, ['a', 0])).toEqual({ found: true, value: 'key' });
    expect(selectJsonPath({ a: [] }, ['a', 'length'])).toEqual({ found: false, missingAt: '$.a has no "length"' });
    expect(thrown(() => parseJsonPath('$.a[x]')).code).toBe('POINTER_INVALID');
    expect(thrown(() => parseJsonPath('a..b')).code).toBe('POINTER_INVALID');
  });
});
