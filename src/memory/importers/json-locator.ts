/** Where chosen values of a JSON text start, and the line of the first syntax error if there is one. */
export interface JsonLocation {
  /** Path (segments joined by `/`, array indexes as numbers, the root is ``) to its 1-based start line. */
  lines: Map<string, number>;
  /** Line where the text stops being JSON; undefined when it is well formed. */
  errorLine?: number;
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const SIMPLE_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]); // " \ / b f n r t
const HEX_4 = /[0-9a-fA-F]{4}/y;

type State = 'value' | 'afterValue' | 'key' | 'colon';

/**
 * One pass over a JSON text that records the start line of every value whose path matches a pattern,
 * and finds the line of the first syntax error. JSON.parse reports neither: it gives values without
 * positions, and its error messages differ between Node versions (some carry no position at all).
 *
 * @param patterns paths in the same form where a `*` segment matches any array index, e.g. `messages/*`
 *   for every element of a top-level `messages` array. Only matching values are recorded, so memory stays
 *   proportional to what the caller asked for.
 */
export function locateJsonValues(text: string, patterns: readonly string[]): JsonLocation {
  const wanted = patterns.map((p) => (p === '' ? [] : p.split('/')));
  const maxDepth = wanted.reduce((max, p) => Math.max(max, p.length), -1);
  const lines = new Map<string, number>();
  const path: string[] = [];
  const containers: Array<'array' | 'object'> = [];
  let state: State = 'value';
  let mayClose = false;
  let line = 1;
  let i = 0;
  const n = text.length;
  const fail = (): JsonLocation => ({ lines, errorLine: line });

  const record = (): void => {
    if (path.length > maxDepth) return;
    for (const pattern of wanted) {
      if (pattern.length === path.length && pattern.every((seg, k) => seg === path[k] || (seg === '*' && /^\d+$/.test(path[k]!)))) {
        lines.set(path.join('/'), line);
        return;
      }
    }
  };

  /** Moves past the string starting at `i`; false when it is not a well-formed JSON string. */
  const skipString = (): boolean => {
    i += 1;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i += 1;
        return true;
      }
      if (c === 0x5c) {
        const e = text.charCodeAt(i + 1);
        if (SIMPLE_ESCAPES.has(e)) i += 2;
        else if (e === 0x75) {
          HEX_4.lastIndex = i + 2;
          if (!HEX_4.test(text)) return false;
          i += 6;
        } else return false;
      } else if (c < 0x20) return false;
      else i += 1;
    }
    return false;
  };

  for (;;) {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x0a) line += 1;
      else if (c !== 0x20 && c !== 0x09 && c !== 0x0d) break;
      i += 1;
    }
    if (state === 'afterValue' && containers.length === 0) return i < n ? fail() : { lines };
    if (i >= n) return fail();
    const c = text[i];

    if (state === 'value') {
      if (c === ']' && mayClose) {
        containers.pop();
        path.pop();
        i += 1;
        state = 'afterValue';
        continue;
      }
      record();
      if (c === '{') {
        containers.push('object');
        state = 'key';
        mayClose = true;
        i += 1;
      } else if (c === '[') {
        containers.push('array');
        path.push('0');
        mayClose = true;
        i += 1;
      } else if (c === '"') {
        if (!skipString()) return fail();
        state = 'afterValue';
      } else if (text.startsWith('true', i) || text.startsWith('null', i)) {
        i += 4;
        state = 'afterValue';
      } else if (text.startsWith('false', i)) {
        i += 5;
        state = 'afterValue';
      } else {
        NUMBER.lastIndex = i;
        if (!NUMBER.test(text)) return fail();
        i = NUMBER.lastIndex;
        state = 'afterValue';
      }
    } else if (state === 'afterValue') {
      const inArray = containers[containers.length - 1] === 'array';
      if (c === ',') {
        if (inArray) {
          path[path.length - 1] = String(Number(path[path.length - 1]) + 1);
          state = 'value';
        } else {
          path.pop();
          state = 'key';
        }
        mayClose = false;
        i += 1;
      } else if (c === (inArray ? ']' : '}')) {
        containers.pop();
        path.pop();
        i += 1;
      } else return fail();
    } else if (state === 'key') {
      if (c === '}' && mayClose) {
        containers.pop();
        i += 1;
        state = 'afterValue';
        continue;
      }
      if (c !== '"') return fail();
      const start = i;
      if (!skipString()) return fail();
      const raw = text.slice(start + 1, i - 1);
      path.push(raw.includes('\\') ? (JSON.parse(text.slice(start, i)) as string) : raw);
      state = 'colon';
    } else {
      if (c !== ':') return fail();
      i += 1;
      state = 'value';
      mayClose = false;
    }
  }
}
