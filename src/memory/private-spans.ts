/**
 * `<private>...</private>` spans (issue 12, item 4): text a person marks as private is stored verbatim but kept
 * out of the full-text and vector indexes, context packs, recall excerpts and everything served to agents,
 * where it reads `[private]`. Only full trust (the local CLI's `engram show`) reads it.
 *
 * Fail closed: an unclosed `<private>` hides the rest of the text, and a `</private>` without its opening tag
 * (a preview or excerpt cut inside a span) hides everything before it. Tags nest; case does not matter.
 * Pure; linear in the text's length.
 */

/** What a private span reads as wherever it is hidden. */
export const PRIVATE_PLACEHOLDER = '[private]';

const TAG = /<(\/?)private>/gi;

/** Whether `text` holds a private tag (open or close). */
export function hasPrivateSpans(text: string): boolean {
  TAG.lastIndex = 0;
  return TAG.test(text);
}

/** `text` with every private span (tags included) replaced by {@link PRIVATE_PLACEHOLDER}. */
export function maskPrivate(text: string): string {
  if (!hasPrivateSpans(text)) return text;
  const parts: string[] = [];
  let visibleFrom = 0; // start of the text not yet emitted
  let spanStart = -1; // start of the open span, when depth > 0
  let depth = 0;
  TAG.lastIndex = 0;
  for (let m = TAG.exec(text); m !== null; m = TAG.exec(text)) {
    const isClose = m[1] === '/';
    if (!isClose) {
      if (depth === 0) spanStart = m.index;
      depth++;
      continue;
    }
    if (depth === 0) {
      // A close without an open: what precedes it (back to the last hidden span) may be the tail of a span.
      parts.push(PRIVATE_PLACEHOLDER);
      visibleFrom = m.index + m[0].length;
      continue;
    }
    depth--;
    if (depth === 0) {
      parts.push(text.slice(visibleFrom, spanStart), PRIVATE_PLACEHOLDER);
      visibleFrom = m.index + m[0].length;
    }
  }
  if (depth > 0) parts.push(text.slice(visibleFrom, spanStart), PRIVATE_PLACEHOLDER);
  else parts.push(text.slice(visibleFrom));
  return joinPlaceholders(parts);
}

/** Adjacent placeholders (two spans with nothing between) read as one. */
function joinPlaceholders(parts: string[]): string {
  const out: string[] = [];
  for (const p of parts) {
    if (p === '') continue;
    if (p === PRIVATE_PLACEHOLDER && out[out.length - 1] === PRIVATE_PLACEHOLDER) continue;
    out.push(p);
  }
  return out.join('');
}
