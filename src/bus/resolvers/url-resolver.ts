import { EngramError } from '../../errors.js';
import type { UrlRef } from '../pointer.js';
import type { ResolvedSpan } from './text-span.js';

/** A stored copy of a web page (saved by a tool run, an import), never fetched by the resolver. */
export interface UrlSnapshot {
  text: string;
  /** When the copy was taken, ISO-8601. */
  fetchedAt?: string;
}

export interface UrlSource {
  getSnapshot(url: string): Promise<UrlSnapshot | null>;
}

/** Where a url excerpt came from. */
export interface UrlOrigin {
  type: 'url';
  url: string;
  fetchedAt?: string;
}

/**
 * `url:` pointers are references. Engram is local-first and a deref must be reproducible, so the resolver
 * never goes to the network: it reads a stored snapshot when the engine provides a `UrlSource`, and without
 * one it refuses with DEREF_DENIED (`data.reason: 'url-not-fetched'`), which tells the agent to fetch the page
 * with its own tools if it needs the content.
 */
export class UrlResolver {
  constructor(private readonly source?: UrlSource) {}

  async read(ref: UrlRef): Promise<ResolvedSpan<UrlOrigin>> {
    if (!this.source) {
      throw new EngramError('DEREF_DENIED', `pointer: url pointers are references only; Engram does not fetch ${ref.url} (fetch it with a web tool if the content is needed)`, {
        field: 'pointer',
        reason: 'url-not-fetched',
      });
    }
    const snapshot = await this.source.getSnapshot(ref.url);
    if (!snapshot) throw new EngramError('NOT_FOUND', `pointer: no stored copy of ${ref.url}; Engram does not fetch urls`, { field: 'pointer', reason: 'no-snapshot' });
    return { text: snapshot.text, source: { type: 'url', url: ref.url, ...(snapshot.fetchedAt !== undefined ? { fetchedAt: snapshot.fetchedAt } : {}) } };
  }
}
