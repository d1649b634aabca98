import { EngramError } from '../../errors.js';
import { parsePointer, parsePointerRef, type LineRange, type PointerRef } from '../pointer.js';
import type { Pointer } from '../../model/pointer.js';
import { validatePointer } from '../validation.js';
import { ArtifactResolver, type ArtifactOrigin, type ArtifactSource } from './artifact-resolver.js';
import { DiffResolver, type DiffOrigin } from './diff-resolver.js';
import { fitToTokens, type CountTokens } from './fit-to-tokens.js';
import type { RepoOrigin, RepoResolver } from './repo-resolver.js';
import { SamResolver, type SamOrigin, type SamSource } from './sam-resolver.js';
import { TestResolver, type TestOrigin, type TestResultSource } from './test-resolver.js';
import { sha256Hex, type ResolvedSpan } from './text-span.js';
import type { ReadScope } from './read-scope.js';

export type { ReadScope };
import { UrlResolver, type UrlOrigin, type UrlSource } from './url-resolver.js';

/** Excerpt cap when the caller names none: the seed's `max_tokens` example (PAS Bus §6.2). */
export const DEFAULT_DEREF_MAX_TOKENS = 400;
/** Highest `maxTokens` accepted: far above any per-turn budget (1,200 in PAS Bus §3.2), a guard against typos. */
export const MAX_DEREF_MAX_TOKENS = 16_000;

export type DerefOrigin = RepoOrigin | DiffOrigin | ArtifactOrigin | SamOrigin | TestOrigin | UrlOrigin;

export interface DerefOptions {
  /** Longest excerpt, in tokens of the injected counter. Default `DEFAULT_DEREF_MAX_TOKENS`. */
  maxTokens?: number;
  /**
   * Who reads, for sources that hold sessions (`sam:`, `artifact:`, `test:`): only content of sessions this
   * project owns or that are shared with it is found; anything else is NOT_FOUND, as if it did not exist.
   * Absent: full trust.
   */
  visibleToProject?: string;
}


/** The answer to a deref: exact content tied to the exact pointer by a digest (PAS Bus §6.2, §8.2, §8.3). */
export interface DerefResult {
  /** The pointer as asked for (object form). */
  pointer: Pointer;
  /** The addressed content, cut to whole lines within `maxTokens` when it is longer. */
  excerpt: string;
  /** sha256 (hex) of the excerpt's UTF-8 bytes: proof of what was read (`content_digest`). */
  contentDigest: string;
  /**
   * sha256 (hex) of the whole addressed span, whatever `maxTokens` was: what a pointer's `digest` records,
   * since it does not change with the budget. Equal to `contentDigest` when nothing was cut.
   */
  spanDigest: string;
  /** Tokens in `excerpt`. */
  tokens: number;
  isTruncated: boolean;
  /** For line-addressed content: the lines of the file or artifact the excerpt holds (the last one may be cut). */
  lines?: LineRange;
  source: DerefOrigin;
}

export interface PointerResolverOptions {
  /** Token counter for `maxTokens`, e.g. `(text) => tokenizer.count(text)`. */
  countTokens: CountTokens;
  /** The repository `repo:` and `diff:` pointers address (one per resolver: pointers do not name a repository). */
  repo?: RepoResolver;
  /** Default: a `DiffResolver` over `repo`. */
  diff?: DiffResolver;
  artifacts?: ArtifactSource;
  sam?: SamSource;
  tests?: TestResultSource;
  /** Stored page copies for `url:` pointers; without it they are DEREF_DENIED (see url-resolver.ts). */
  urls?: UrlSource;
}

/**
 * Resolves pointers of every type to budgeted, digested excerpts by dispatching on the pointer's type.
 * Budgets and grants are the caller's (the budget enforcer's) business: this class only reads.
 * A type with no configured source is NOT_FOUND (`data.reason: 'no-source'`).
 */
export class PointerResolver {
  private readonly countTokens: CountTokens;
  private readonly repo: RepoResolver | undefined;
  private readonly diff: DiffResolver | undefined;
  private readonly artifacts: ArtifactResolver | undefined;
  private readonly sam: SamResolver | undefined;
  private readonly tests: TestResolver | undefined;
  private readonly urls: UrlResolver;

  constructor(options: PointerResolverOptions) {
    this.countTokens = options.countTokens;
    this.repo = options.repo;
    this.diff = options.diff ?? (options.repo ? new DiffResolver(options.repo) : undefined);
    this.artifacts = options.artifacts ? new ArtifactResolver(options.artifacts) : undefined;
    this.sam = options.sam ? new SamResolver(options.sam) : undefined;
    this.tests = options.tests ? new TestResolver(options.tests) : undefined;
    this.urls = new UrlResolver(options.urls);
  }

  /**
   * Reads what `pointer` (an object, or a bare ref string) addresses. Throws INVALID_INPUT for a malformed
   * pointer object or `maxTokens`, POINTER_INVALID for a ref that does not parse or no longer matches its
   * `digest`, NOT_FOUND for content that does not exist, DEREF_DENIED for url pointers without snapshots.
   */
  async deref(pointer: Pointer | string, options: DerefOptions = {}): Promise<DerefResult> {
    const maxTokens = options.maxTokens ?? DEFAULT_DEREF_MAX_TOKENS;
    if (!Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > MAX_DEREF_MAX_TOKENS) {
      throw new EngramError('INVALID_INPUT', `maxTokens: expected an integer from 1 to ${MAX_DEREF_MAX_TOKENS}, got ${String(maxTokens)}`, { field: 'maxTokens' });
    }
    let asked: Pointer;
    let ref: PointerRef;
    if (typeof pointer === 'string') {
      ref = parsePointerRef(pointer);
      asked = { type: ref.type, ref: pointer };
    } else {
      asked = validatePointer(pointer);
      ref = parsePointer(asked);
    }
    const span = await this.read(ref, options.visibleToProject !== undefined ? { visibleToProject: options.visibleToProject } : {});
    const fitted = fitToTokens(span.text, maxTokens, this.countTokens);
    const contentDigest = sha256Hex(fitted.text);
    const spanDigest = fitted.isTruncated ? sha256Hex(span.text) : contentDigest;
    if (asked.digest !== undefined) checkDigest(asked.digest, contentDigest, spanDigest);
    return {
      pointer: asked,
      excerpt: fitted.text,
      contentDigest,
      spanDigest,
      tokens: fitted.tokens,
      isTruncated: fitted.isTruncated,
      ...(span.firstLine !== undefined && fitted.keptLines > 0 ? { lines: { start: span.firstLine, end: span.firstLine + fitted.keptLines - 1 } } : {}),
      source: span.source,
    };
  }

  private read(ref: PointerRef, scope: ReadScope): Promise<ResolvedSpan<DerefOrigin>> {
    switch (ref.type) {
      case 'repo':
        return need(this.repo, 'a repository').read(ref);
      case 'diff':
        return need(this.diff, 'a repository').read(ref);
      case 'artifact':
        return need(this.artifacts, 'an artifact store').read(ref, scope);
      case 'sam':
        return need(this.sam, 'an event store').read(ref, scope);
      case 'test':
        return need(this.tests, 'a test-result store').read(ref, scope);
      case 'url':
        return this.urls.read(ref);
    }
  }
}

export function createPointerResolver(options: PointerResolverOptions): PointerResolver {
  return new PointerResolver(options);
}

function need<T>(resolver: T | undefined, what: string): T {
  if (resolver === undefined) throw new EngramError('NOT_FOUND', `pointer: this engine has no ${what} to resolve it`, { field: 'pointer', reason: 'no-source' });
  return resolver;
}

/**
 * A pointer's `digest` records what an earlier deref returned (LESS §13.1, against "phantom reads"): the span
 * digest, or the excerpt digest of that deref. Either, or a prefix of 8+ hex characters of it, matches.
 */
function checkDigest(digest: string, contentDigest: string, spanDigest: string): void {
  const want = digest.toLowerCase().replace(/^sha256:/, '');
  if (!/^[0-9a-f]{8,64}$/.test(want)) {
    throw new EngramError('POINTER_INVALID', 'pointer.digest: expected 8-64 hex characters of a sha256', { field: 'pointer.digest', reason: 'bad-digest' });
  }
  if (!spanDigest.startsWith(want) && !contentDigest.startsWith(want)) {
    throw new EngramError('POINTER_INVALID', `pointer.digest: the content no longer matches: the pointer records ${want.slice(0, 16)}…, the source now gives ${spanDigest.slice(0, 16)}…`, {
      field: 'pointer.digest',
      reason: 'digest-mismatch',
      expected: want,
      actual: spanDigest,
    });
  }
}
