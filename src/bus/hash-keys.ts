import { createHash } from 'node:crypto';
import { parsePointer } from './pointer.js';
import { MAX_HASH_KEY_CHARS } from '../model/engram.js';
import type { Pointer } from '../model/pointer.js';

/**
 * Deterministic hash keys of an engram (PAS Bus §5.1, LESS §9.1): fast candidate recall by key lookup, no
 * embedding needed. The same text always gives the same keys, on every server.
 * - `t:<token>`: normalised content tokens and identifiers (lowercased; stopwords dropped);
 * - `g:<a b>` .. `g:<a b c d e>`: short n-grams (2-5) of the claim's content tokens;
 * - `p:<path>`, `f:<file name>`, `d:<directory>`: the files a pointer names (repo, diff, artifact);
 * - `c:<concept>`: concept keys (`service:gateway`) given as tags or keys with a colon, and the kind (`c:kind:risk`).
 * A query derives keys the same way, so a question shares keys with the claims that answer it.
 */

/** Longest n-gram of claim tokens (the seed's 2-5). */
export const MAX_NGRAM = 5;
/** Most n-gram keys per text: a 500-character claim would otherwise make ~300. */
const MAX_NGRAM_KEYS = 48;

const STOPWORDS = new Set(
  (
    'a an and are as at be been but by can could did do does for from had has have he her his how i if in into is it its ' +
    'me my no not of on or our she should so than that the their them then there these they this to too us was we were ' +
    'what when where which who why will with would you your about after before also any because both each just more most ' +
    'only other over same some such very via while'
  ).split(' '),
);

/** Words and identifiers: `src/app.ts`, `--max-retries`, `a3f9c2`, `ECONNREFUSED` stay whole. */
const TOKEN = /[\p{L}\p{N}_][\p{L}\p{N}_./:@#-]*[\p{L}\p{N}_]|[\p{L}\p{N}_]/gu;

/** Normalised content tokens of a text, in order (duplicates kept, for n-grams). */
export function keyTokens(text: string): string[] {
  const out: string[] = [];
  for (const m of text.normalize('NFKC').toLowerCase().matchAll(TOKEN)) {
    const t = m[0];
    // Single digits stay: "retries 3 times" and "retries 4 times" are different claims.
    if ((t.length < 2 && !/\d/.test(t)) || STOPWORDS.has(t)) continue;
    out.push(t);
  }
  return out;
}

export interface HashKeyInput {
  claim: string;
  kind?: string;
  pointers?: readonly Pointer[];
  tags?: readonly string[];
  /** Keys the writer gave (`hash_keys`): kept, normalised. */
  keys?: readonly string[];
}

/** Every key of an engram (or of a query), sorted and unique. */
export function deriveHashKeys(input: HashKeyInput): string[] {
  const keys = new Set<string>();
  const add = (k: string): void => {
    keys.add(fitKey(k));
  };
  const tokens = keyTokens(input.claim);
  for (const t of tokens) add(`t:${t}`);
  let ngrams = 0;
  outer: for (let n = 2; n <= MAX_NGRAM; n++) {
    for (let i = 0; i + n <= tokens.length; i++) {
      if (ngrams >= MAX_NGRAM_KEYS) break outer;
      const before = keys.size;
      add(`g:${tokens.slice(i, i + n).join(' ')}`);
      if (keys.size > before) ngrams++;
    }
  }
  for (const p of input.pointers ?? []) for (const k of pointerKeys(p)) add(k);
  for (const tag of input.tags ?? []) add(tag.includes(':') ? `c:${normaliseConcept(tag)}` : `t:${tag.toLowerCase()}`);
  for (const key of input.keys ?? []) add(normaliseGivenKey(key));
  if (input.kind) add(`c:kind:${input.kind}`);
  return [...keys].sort();
}

/** Keys of a pointer: its path, file name and directory, so engrams about the same file meet. */
export function pointerKeys(pointer: Pointer): string[] {
  let path: string | undefined;
  try {
    const parsed = parsePointer(pointer) as { path?: string; name?: string };
    path = parsed.path ?? parsed.name;
  } catch {
    return [];
  }
  if (!path) return [];
  const clean = path.toLowerCase();
  const slash = clean.lastIndexOf('/');
  const keys = [`p:${clean}`, `f:${slash >= 0 ? clean.slice(slash + 1) : clean}`];
  if (slash > 0) keys.push(`d:${clean.slice(0, slash)}`);
  return keys;
}

/** A key as a writer or caller gave it: `service:gateway` is a concept; `t:`/`g:`/`p:` keys pass as they are. */
export function normaliseGivenKey(key: string): string {
  const k = key.normalize('NFKC').trim().toLowerCase();
  if (/^[tgpfdc]:/.test(k)) return fitKey(k);
  return fitKey(k.includes(':') ? `c:${normaliseConcept(k)}` : `t:${k}`);
}

function normaliseConcept(concept: string): string {
  return concept.normalize('NFKC').trim().toLowerCase().replace(/\s+/g, '-');
}

/** Keys longer than the schema allows keep a readable head and a hash of the whole. */
function fitKey(key: string): string {
  if (key.length <= MAX_HASH_KEY_CHARS) return key;
  const digest = createHash('sha256').update(key).digest('hex').slice(0, 16);
  return `${key.slice(0, MAX_HASH_KEY_CHARS - 17)}~${digest}`;
}

/**
 * The identity of a claim for deduplication: its normalised tokens and its sorted pointer refs, hashed. Two
 * claims that differ only in case, punctuation or stopwords, on the same pointers, are the same engram.
 */
export function dedupeKey(claim: string, pointers: readonly Pointer[]): string {
  const refs = [...new Set(pointers.map((p) => p.ref.trim()))].sort();
  return createHash('sha256').update(keyTokens(claim).join(' ')).update('\u0000').update(refs.join('\u0000')).digest('hex');
}
