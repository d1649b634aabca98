/** One token of a text as the sentence encoder sees it. */
export interface EmbeddingToken {
  /** The whole token, lowercased (`pool.ts`, `econnrefused`, `don't`). */
  text: string;
  /**
   * Words to look up when the whole token is not in the vocabulary: split at inner punctuation, camelCase,
   * snake_case and letter/digit boundaries, contractions expanded (`don't` -> `do`, `not`). Empty when the
   * token has no inner structure (then only `text` is looked up).
   */
  parts: string[];
  /** Inner punctuation other than an apostrophe, camelCase, or letters mixed with digits: `pool.ts`, `v2`, `getUser`. */
  isIdentifier: boolean;
  /** A contraction (`don't`, `I'm`): its parts carry it, it is never an unknown word. */
  isContraction: boolean;
}

// Letters or digits, joined by the inner punctuation of identifiers, paths, versions and contractions.
const TOKEN = /[\p{L}\p{N}]+(?:['\u2019._\-/:@#+\\][\p{L}\p{N}]+)*/gu;
const INNER_SPLIT = /[^\p{L}\p{N}]+/u;
const CAMEL = /(\p{Ll})(\p{Lu})|(\p{Lu})(\p{Lu}\p{Ll})|(\p{L})(\p{N})|(\p{N})(\p{L})/gu;
/** Contraction tails: the vocabulary has no `n't` or `'s` (the package dropped words with apostrophes). */
const CONTRACTION_TAILS: Record<string, string | undefined> = { m: 'am', re: 'are', ve: 'have', ll: 'will', d: 'would', s: '' };

/**
 * Splits text into tokens for embedding. Deterministic and locale-independent: lowercasing uses
 * `toLowerCase()` (not the locale variant), apostrophes are normalised (U+2019 to `'`). Single letters are
 * dropped: the package's vocabulary has none (nor any number), so `a` and `I` would otherwise count as rare
 * unknown words and outweigh the sentence (measured: -8 points of LoCoMo recall@10).
 */
export function tokenizeForEmbedding(text: string): EmbeddingToken[] {
  const out: EmbeddingToken[] = [];
  for (const match of text.matchAll(TOKEN)) {
    const raw = match[0].replace(/\u2019/g, "'");
    if (raw.length === 1 && /\p{L}/u.test(raw)) continue;
    const lower = raw.toLowerCase();
    const hasPunctuation = /[^\p{L}\p{N}]/u.test(raw);
    if (!hasPunctuation && !hasInnerCase(raw)) {
      out.push({ text: lower, parts: [], isIdentifier: false, isContraction: false });
      continue;
    }
    const contraction = contractionParts(raw);
    if (contraction) {
      out.push({ text: lower, parts: contraction, isIdentifier: false, isContraction: true });
      continue;
    }
    out.push({ text: lower, parts: splitParts(raw), isIdentifier: true, isContraction: false });
  }
  return out;
}

function hasInnerCase(raw: string): boolean {
  // `McDonald`, `createEmbedder`, `HTTPServer`, `v2`: more than an initial capital, or letters and digits.
  return /\p{Ll}\p{Lu}|\p{Lu}\p{Lu}\p{Ll}/u.test(raw) || (/\p{L}/u.test(raw) && /\p{N}/u.test(raw));
}

/** `don't` -> `do`, `not`; `I'm` -> `i`, `am`; `Caroline's` -> `caroline`. Undefined when not a contraction. */
function contractionParts(raw: string): string[] | undefined {
  const apostrophe = raw.indexOf("'");
  if (apostrophe <= 0 || raw.indexOf("'", apostrophe + 1) !== -1 || /[^\p{L}']/u.test(raw)) return undefined;
  return expandContraction(raw.slice(0, apostrophe).toLowerCase(), raw.slice(apostrophe + 1).toLowerCase());
}

function splitParts(raw: string): string[] {
  const parts: string[] = [];
  for (const piece of raw.split(INNER_SPLIT)) {
    if (piece.length === 0) continue;
    const spaced = piece.replace(CAMEL, (_m, a?: string, b?: string, c?: string, d?: string, e?: string, f?: string, g?: string, h?: string) =>
      a !== undefined ? `${a} ${b}` : c !== undefined ? `${c} ${d}` : e !== undefined ? `${e} ${f}` : `${g} ${h}`,
    );
    for (const p of spaced.split(' ')) if (p.length > 0) parts.push(p.toLowerCase());
  }
  return parts;
}

function expandContraction(head: string, tail: string): string[] | undefined {
  if (tail === 't' && head.endsWith('n')) {
    const stem = head.slice(0, -1);
    const base = stem === 'ca' ? 'can' : stem === 'wo' ? 'will' : stem === 'sha' ? 'shall' : stem;
    return base.length > 0 ? [base, 'not'] : ['not'];
  }
  const expanded = CONTRACTION_TAILS[tail];
  if (expanded === undefined) return undefined;
  return expanded === '' ? [head] : [head, expanded];
}
