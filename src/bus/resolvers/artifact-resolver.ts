import { EngramError } from '../../errors.js';
import type { ArtifactRef } from '../pointer.js';
import { formatJsonPath, parseJsonPath, selectJsonPath } from './json-path.js';
import { findMarkdownSection, listMarkdownHeadings, type MarkdownHeading } from './markdown-sections.js';
import { sliceLines, stripFinalTerminator, type ResolvedSpan } from './text-span.js';
import type { ReadScope } from './read-scope.js';

/** An artifact's text as the store hands it to the resolver. */
export interface ArtifactContent {
  /** The content id (`art_<sha256>`), when the store has one. */
  id?: string;
  /** sha256 of the artifact's bytes, hex. Pointers pin artifacts by a prefix of it. */
  sha256: string;
  text: string;
  /** `application/json` (or any `+json`) makes sections JSON paths; anything else is read as markdown. */
  mediaType?: string;
}

/**
 * Where artifacts come from; the engine wires it to its artifact store. `digest` is the pointer's pinned
 * sha256 prefix: a store that keeps versions should return that version; one that does not returns the
 * current one, and the resolver reports the mismatch.
 */
export interface ArtifactSource {
  /** Null when no artifact has this name or id, or when `scope`'s reader may not read it. */
  getArtifact(nameOrId: string, digest: string | undefined, scope?: ReadScope): Promise<ArtifactContent | null>;
}

/** Where an artifact excerpt came from. */
export interface ArtifactOrigin {
  type: 'artifact';
  name: string;
  id?: string;
  sha256: string;
  /** How the span was addressed: a markdown heading, a JSON path, a line range, or the whole artifact. */
  addressing: 'heading' | 'json-path' | 'lines' | 'whole';
  /** The matched heading's text, or the canonical `$` path. */
  section?: string;
  startLine?: number;
  endLine?: number;
}

/** Parsed structure kept per artifact digest: content-addressed, so an entry never goes stale. */
const STRUCTURE_CACHE_ENTRIES = 64;

/**
 * Resolves `artifact:<name>#sec=<section>@<digest>` (and `#L<a>-L<b>`): the pinned version of a stored artifact,
 * cut to a markdown section (heading text, slug, compact form or number; see markdown-sections.ts), a JSON value
 * (json-path.ts; a string value is returned as its text, any other value as 2-space JSON), or a line range.
 */
export class ArtifactResolver {
  private readonly structures = new Map<string, MarkdownHeading[] | { json: unknown }>();

  constructor(private readonly source: ArtifactSource) {}

  async read(ref: ArtifactRef, scope: ReadScope = {}): Promise<ResolvedSpan<ArtifactOrigin>> {
    const pinned = ref.digest ?? (/^art_([0-9a-f]{64})$/.exec(ref.name)?.[1] as string | undefined);
    const artifact = await this.source.getArtifact(ref.name, pinned, scope);
    if (!artifact) throw new EngramError('NOT_FOUND', `pointer: no artifact "${ref.name}"`, { field: 'pointer', reason: 'no-such-artifact', name: ref.name });
    const sha256 = artifact.sha256.toLowerCase();
    if (pinned !== undefined && !sha256.startsWith(pinned)) {
      throw new EngramError(
        'POINTER_INVALID',
        `pointer: artifact "${ref.name}" changed since the pointer was made: it pins sha256 ${pinned}…, the stored artifact is ${sha256.slice(0, 16)}…; re-derive the pointer from the current version`,
        { field: 'pointer', reason: 'digest-mismatch', expected: pinned, actual: sha256 },
      );
    }
    const origin = { type: 'artifact' as const, name: ref.name, ...(artifact.id !== undefined ? { id: artifact.id } : {}), sha256 };
    const text = artifact.text;
    if (ref.lines) {
      return {
        text: sliceLines(text, ref.lines, `artifact "${ref.name}"`),
        source: { ...origin, addressing: 'lines', startLine: ref.lines.start, endLine: ref.lines.end },
        firstLine: ref.lines.start,
      };
    }
    if (ref.section === undefined) return { text: stripFinalTerminator(text), source: { ...origin, addressing: 'whole' }, firstLine: 1 };

    const json = this.json(sha256, artifact);
    if (json !== undefined || ref.section.startsWith('$')) {
      if (json === undefined) {
        throw new EngramError('POINTER_INVALID', `pointer: artifact "${ref.name}" is not JSON, so "${ref.section}" addresses nothing; name a heading`, {
          field: 'pointer',
          reason: 'not-json',
        });
      }
      const segments = parseJsonPath(ref.section);
      const found = selectJsonPath(json.json, segments);
      if (!found.found) {
        throw new EngramError('NOT_FOUND', `pointer: ${found.missingAt} in artifact "${ref.name}"`, { field: 'pointer', reason: 'no-such-section' });
      }
      const value = found.value;
      return {
        text: typeof value === 'string' ? value : (JSON.stringify(value, null, 2) ?? 'null'),
        source: { ...origin, addressing: 'json-path', section: formatJsonPath(segments) },
      };
    }

    const headings = this.headings(sha256, text);
    const section = findMarkdownSection(text, ref.section, headings);
    if (!section) {
      const known = headings.slice(0, 12).map((h) => h.slug).join(', ');
      throw new EngramError('NOT_FOUND', `pointer: no section "${ref.section}" in artifact "${ref.name}"${known ? ` (sections: ${known}${headings.length > 12 ? ', …' : ''})` : ' (it has no headings)'}`, {
        field: 'pointer',
        reason: 'no-such-section',
      });
    }
    const range = { start: section.startLine, end: section.endLine };
    return {
      text: sliceLines(text, range, `artifact "${ref.name}"`),
      source: { ...origin, addressing: 'heading', section: section.heading.text, startLine: range.start, endLine: range.end },
      firstLine: range.start,
    };
  }

  /** The parsed JSON of a JSON artifact, or undefined for any other text. */
  private json(sha256: string, artifact: ArtifactContent): { json: unknown } | undefined {
    const cached = this.structures.get(`json:${sha256}`);
    if (cached !== undefined) return Array.isArray(cached) ? undefined : cached;
    const isJsonType = artifact.mediaType !== undefined && /[/+]json\b/.test(artifact.mediaType);
    const head = artifact.text.trimStart()[0];
    let parsed: { json: unknown } | undefined;
    if (isJsonType || head === '{' || head === '[') {
      try {
        parsed = { json: JSON.parse(artifact.text) as unknown };
      } catch {
        parsed = undefined;
      }
    }
    this.remember(`json:${sha256}`, parsed ?? []);
    return parsed;
  }

  private headings(sha256: string, text: string): MarkdownHeading[] {
    const cached = this.structures.get(`md:${sha256}`);
    if (Array.isArray(cached)) return cached;
    const headings = listMarkdownHeadings(text);
    this.remember(`md:${sha256}`, headings);
    return headings;
  }

  private remember(key: string, value: MarkdownHeading[] | { json: unknown }): void {
    if (this.structures.size >= STRUCTURE_CACHE_ENTRIES) this.structures.delete(this.structures.keys().next().value!);
    this.structures.set(key, value);
  }
}
