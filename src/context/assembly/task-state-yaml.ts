import { EngramError } from '../../errors.js';

/** The task state card as text for the pack's `task_state` block: compact, deterministic YAML. */

/**
 * Renders a task-state object as compact YAML-like text: keys in insertion order (the schema's order), two-space
 * indentation, strings unquoted unless they would read as another type or contain YAML syntax. `undefined`
 * values are skipped; `Date`s render as ISO-8601. Deterministic for a given object.
 * @throws EngramError `INVALID_INPUT` with `field: 'taskState.<path>'` for a cycle, a function, a symbol, a
 *   bigint, a non-finite number or a non-plain object (Map, class instance).
 */
export function renderTaskState(state: Readonly<Record<string, unknown>>): string {
  const lines: string[] = [];
  renderMapping(state, 0, lines, 'taskState', new Set());
  return lines.join('\n');
}

const INDENT = '  ';

/** A plain object (`{}` or `Object.create(null)`): the only kind of object the card renders. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function renderMapping(obj: Readonly<Record<string, unknown>>, depth: number, lines: string[], path: string, seen: Set<object>): void {
  enter(obj, path, seen);
  for (const [key, value] of Object.entries(obj)) {
    if (value === undefined) continue;
    const prefix = `${INDENT.repeat(depth)}${renderKey(key)}:`;
    renderEntry(prefix, value, depth, lines, `${path}.${key}`, seen);
  }
  seen.delete(obj);
}

function renderSequence(arr: readonly unknown[], depth: number, lines: string[], path: string, seen: Set<object>): void {
  enter(arr, path, seen);
  for (const [i, value] of arr.entries()) {
    const itemPath = `${path}[${i}]`;
    const pad = INDENT.repeat(depth);
    if (isPlainObject(value) && Object.values(value).some((v) => v !== undefined)) {
      // "- key: value" with the following keys aligned under the first one, as YAML writes a list of maps.
      const start = lines.length;
      renderMapping(value, depth + 1, lines, itemPath, seen);
      lines[start] = `${pad}- ${(lines[start] as string).slice(pad.length + INDENT.length)}`;
    } else {
      renderEntry(`${pad}-`, value ?? null, depth, lines, itemPath, seen);
    }
  }
  seen.delete(arr);
}

function renderEntry(prefix: string, value: unknown, depth: number, lines: string[], path: string, seen: Set<object>): void {
  if (Array.isArray(value)) {
    if (value.length === 0) lines.push(`${prefix} []`);
    else {
      lines.push(prefix);
      renderSequence(value, depth + 1, lines, path, seen);
    }
  } else if (isPlainObject(value)) {
    if (!Object.values(value).some((v) => v !== undefined)) lines.push(`${prefix} {}`);
    else {
      lines.push(prefix);
      renderMapping(value, depth + 1, lines, path, seen);
    }
  } else {
    lines.push(`${prefix} ${renderScalar(value, path)}`);
  }
}

function enter(value: object, path: string, seen: Set<object>): void {
  if (seen.has(value)) throw invalid(path, 'cycle in the task state');
  seen.add(value);
}

function renderKey(key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_.-]*$/.test(key) ? key : JSON.stringify(key);
}

function renderScalar(value: unknown, path: string): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(path, 'must be a finite number');
    return String(value);
  }
  if (typeof value === 'string') return renderString(value);
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw invalid(path, 'invalid Date');
    return value.toISOString();
  }
  throw invalid(path, `cannot render a ${typeof value === 'object' ? 'non-plain object' : typeof value} in the task state`);
}

/** Strings a YAML reader would take for another type, or that contain YAML syntax, are JSON-quoted. */
function renderString(s: string): string {
  const needsQuotes =
    s === '' ||
    s !== s.trim() ||
    /[\u0000-\u001f\u007f]/.test(s) ||
    /^[-?:,[\]{}#&*!|>'"%@`]/.test(s) ||
    s.includes(': ') ||
    s.includes(' #') ||
    s.endsWith(':') ||
    /^(true|false|null|yes|no|on|off|~)$/i.test(s) ||
    /^[-+]?(\d[\d_]*(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/.test(s);
  return needsQuotes ? JSON.stringify(s) : s;
}

function invalid(field: string, problem: string): EngramError {
  return new EngramError('INVALID_INPUT', `${field}: ${problem}`, { field });
}
