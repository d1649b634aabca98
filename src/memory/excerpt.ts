/**
 * Cuts the part of a text that best shows why it matched: the window of at most `maxChars` that covers
 * the most distinct query tokens (identifiers count double), snapped to line starts where possible.
 */
export interface ExcerptOptions {
  /** Longest excerpt in characters, ellipses excluded. Default 600. */
  maxChars?: number;
}

const DEFAULT_MAX_CHARS = 600;
/** Most distinct needles searched: a query keeps 32 terms (query-terms.ts), which split into a few words each. */
const MAX_NEEDLES = 96;

interface Needle {
  text: string;
  weight: number;
}

export function cutExcerpt(text: string, needles: readonly string[], identifiers: readonly string[], options: ExcerptOptions = {}): string {
  const maxChars = options.maxChars ?? DEFAULT_MAX_CHARS;
  if (text.length <= maxChars) return text;
  const lower = text.toLowerCase();
  // Each needle once, at its highest weight, and a bounded number of them: every needle is a scan of the text.
  const weights = new Map<string, number>();
  const addNeedle = (needle: string, weight: number): void => {
    if (weights.size < MAX_NEEDLES || weights.has(needle)) weights.set(needle, Math.max(weight, weights.get(needle) ?? 0));
  };
  for (const id of identifiers) if (id.length > 0) addNeedle(id.toLowerCase(), 3);
  for (const n of needles) {
    for (const part of n.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
      // Word stems: "retries" should find "retry"; a 5-char prefix is a cheap, language-agnostic stem.
      if (part.length >= 2) addNeedle(part.length > 6 ? part.slice(0, 5) : part, 1);
    }
  }
  const list: Needle[] = [...weights].map(([needle, weight]) => ({ text: needle, weight }));
  // Every occurrence of every needle, capped per needle so one frequent word cannot dominate the scan.
  const hits: Array<{ pos: number; needle: number; weight: number }> = [];
  list.forEach((needle, i) => {
    let from = 0;
    for (let count = 0; count < 200; count++) {
      const pos = lower.indexOf(needle.text, from);
      if (pos < 0) break;
      hits.push({ pos, needle: i, weight: needle.weight });
      from = pos + needle.text.length;
    }
  });
  if (hits.length === 0) return clip(text, 0, maxChars);
  hits.sort((a, b) => a.pos - b.pos);

  // Sliding window over the hits: maximise the summed weight of distinct needles inside maxChars.
  let best = { score: -1, left: 0, right: 0 };
  const counts = new Map<number, number>();
  let score = 0;
  let left = 0;
  for (let right = 0; right < hits.length; right++) {
    const h = hits[right]!;
    const c = counts.get(h.needle) ?? 0;
    if (c === 0) score += h.weight;
    counts.set(h.needle, c + 1);
    while (h.pos - hits[left]!.pos > maxChars * 0.8) {
      const l = hits[left]!;
      const lc = counts.get(l.needle)! - 1;
      counts.set(l.needle, lc);
      if (lc === 0) score -= l.weight;
      left++;
    }
    if (score > best.score) best = { score, left, right };
  }
  const first = hits[best.left]!.pos;
  // Start a little before the first hit, at a line start if one is near.
  let start = Math.max(0, first - Math.floor(maxChars * 0.2));
  const lineStart = text.lastIndexOf('\n', first);
  if (lineStart >= start) start = lineStart + 1;
  // Every hit of the window whole: an identifier at its end was cut through ("needle-11-33-71a…") when the window
  // began early. Later start, never past the first hit.
  let end = 0;
  for (let i = best.left; i <= best.right; i++) end = Math.max(end, hits[i]!.pos + list[hits[i]!.needle]!.text.length);
  if (end - start > maxChars) start = Math.min(first, end - maxChars);
  return clip(text, start, maxChars);
}

function clip(text: string, start: number, maxChars: number): string {
  const end = Math.min(text.length, start + maxChars);
  return `${start > 0 ? '…' : ''}${text.slice(start, end)}${end < text.length ? '…' : ''}`;
}
