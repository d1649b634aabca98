import { EngramError } from '../../errors.js';

/**
 * The small JSON path subset `artifact:<name>#sec=<path>` accepts: `$`, `$.a.b[2]`, `$['key with spaces']`,
 * and the dotted form `a.b.2`. A numeric segment indexes an array, or names a key of an object. No wildcards,
 * filters or slices: a pointer addresses one value.
 */
export type JsonPathSegment = string | number;

export function parseJsonPath(path: string): JsonPathSegment[] {
  const fail = (message: string): never => {
    throw new EngramError('POINTER_INVALID', `pointer: JSON path "${path}" ${message}`, { field: 'pointer', reason: 'bad-json-path' });
  };
  if (!path.startsWith('$')) {
    if (path.split('.').some((s) => s === '')) fail('has an empty segment');
    return path.split('.').map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  }
  const segments: JsonPathSegment[] = [];
  let i = 1;
  while (i < path.length) {
    const c = path[i];
    if (c === '.') {
      const m = /^[^.[\]]+/.exec(path.slice(i + 1));
      if (!m) fail(`has an empty name at ${i}`);
      const name = m![0];
      segments.push(/^\d+$/.test(name) ? Number(name) : name);
      i += 1 + name.length;
    } else if (c === '[') {
      const rest = path.slice(i);
      const index = /^\[(\d+)\]/.exec(rest);
      const quoted = /^\[(['"])((?:\\.|(?!\1).)*)\1\]/.exec(rest);
      if (index) {
        segments.push(Number(index[1]));
        i += index[0].length;
      } else if (quoted) {
        segments.push(quoted[2]!.replace(/\\(.)/g, '$1'));
        i += quoted[0].length;
      } else {
        fail(`has an unreadable [...] at ${i}`);
      }
    } else {
      fail(`expects . or [ at ${i}`);
    }
  }
  return segments;
}

/** The value at `segments`, or where the walk stopped (a `$`-path prefix) when a step is missing. */
export function selectJsonPath(value: unknown, segments: readonly JsonPathSegment[]): { found: true; value: unknown } | { found: false; missingAt: string } {
  let current = value;
  let walked = '$';
  for (const segment of segments) {
    if (Array.isArray(current) && typeof segment === 'number' && segment < current.length) {
      current = current[segment];
    } else if (current !== null && typeof current === 'object' && !Array.isArray(current) && Object.hasOwn(current, String(segment))) {
      current = (current as Record<string, unknown>)[String(segment)];
    } else {
      return { found: false, missingAt: `${walked} has no ${typeof segment === 'number' ? `[${segment}]` : `"${segment}"`}` };
    }
    walked += typeof segment === 'number' ? `[${segment}]` : /^[A-Za-z_$][\w$]*$/.test(segment) ? `.${segment}` : `[${JSON.stringify(segment)}]`;
  }
  return { found: true, value: current };
}

/** The canonical `$` form of a parsed path. */
export function formatJsonPath(segments: readonly JsonPathSegment[]): string {
  return `$${segments.map((s) => (typeof s === 'number' ? `[${s}]` : /^[A-Za-z_$][\w$]*$/.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`)).join('')}`;
}
