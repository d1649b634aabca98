import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { EngramError } from '../../errors.js';
import { isObject } from './claude-settings.js';

/** A JSON settings file as read: its parsed object (empty when the file is missing) and its text. */
export interface SettingsFile {
  path: string;
  /** Undefined when the file does not exist. */
  text: string | undefined;
  value: Record<string, unknown>;
}

/**
 * Reads a Claude Code JSON file. A missing or blank file is an empty object; a file that is not a JSON object
 * is refused with INVALID_INPUT naming the file, line and column, so nothing is written over it.
 */
export function readSettingsFile(path: string): SettingsFile {
  if (!existsSync(path)) return { path, text: undefined, value: {} };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new EngramError('INVALID_INPUT', `${path}: cannot read it (${(err as Error).message})`, { field: 'settings', file: path });
  }
  const body = text.replace(/^\uFEFF/, '');
  if (body.trim() === '') return { path, text, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (err) {
    // Node's parser names the position for some errors only (and, from Node 22, the line and column).
    const position = /position (\d+)/.exec((err as Error).message);
    const where = position ? lineAndColumn(body, Number(position[1])) : undefined;
    throw new EngramError(
      'INVALID_INPUT',
      `${path}${where ? `:${where.line}:${where.column}` : ''}: not valid JSON (${(err as Error).message}); fix it by hand first, nothing was written`,
      { field: 'settings', file: path, ...(where ?? {}) },
    );
  }
  if (!isObject(value)) throw new EngramError('INVALID_INPUT', `${path}: expected a JSON object; fix it by hand first, nothing was written`, { field: 'settings', file: path });
  return { path, text, value };
}

/**
 * The text to write for `value`, in the file's own indentation (two spaces for a new file, as Claude Code
 * writes them) and with its final newline.
 */
export function renderSettings(file: SettingsFile, value: Record<string, unknown>): string {
  const indent = file.text === undefined ? '  ' : (/^[ \t]+(?=")/m.exec(file.text)?.[0] ?? '  ');
  const endsWithNewline = file.text === undefined || file.text.endsWith('\n');
  return JSON.stringify(value, null, indent) + (endsWithNewline ? '\n' : '');
}

/**
 * Replaces the file's content in one step (a temporary file renamed over it, keeping its mode), so Claude Code
 * never reads half a file. `text` undefined removes the file.
 */
export function writeSettingsFile(path: string, text: string | undefined): void {
  if (text === undefined) {
    rmSync(path, { force: true });
    return;
  }
  mkdirSync(dirname(path), { recursive: true });
  const temp = join(dirname(path), `.${Date.now()}-${process.pid}.engram-tmp`);
  writeFileSync(temp, text);
  try {
    if (existsSync(path)) chmodSync(temp, statSync(path).mode & 0o777);
    renameSync(temp, path);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}

/**
 * A unified-style diff of two texts for `--dry-run`: the common head and tail are skipped, the lines between
 * are shown as removed and added, with `context` lines around them. One hunk: install and uninstall change
 * one region per key they touch, and a reader wants to see what, not a minimal edit script.
 */
export function diffLines(before: string, after: string, context = 3): string {
  const a = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const b = after === '' ? [] : after.replace(/\n$/, '').split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  if (head === a.length && head === b.length) return '';
  const from = Math.max(0, head - context);
  const oldCount = a.length - tail - from + Math.min(context, tail);
  const newCount = b.length - tail - from + Math.min(context, tail);
  // As diff(1) writes it: an empty side starts at line 0.
  const lines = [`@@ -${oldCount === 0 ? from : from + 1},${oldCount} +${newCount === 0 ? from : from + 1},${newCount} @@`];
  for (const line of a.slice(from, head)) lines.push(` ${line}`);
  for (const line of a.slice(head, a.length - tail)) lines.push(`-${line}`);
  for (const line of b.slice(head, b.length - tail)) lines.push(`+${line}`);
  for (const line of a.slice(a.length - tail, a.length - tail + context)) lines.push(` ${line}`);
  return lines.join('\n');
}

function lineAndColumn(text: string, position: number): { line: number; column: number } {
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  return { line, column: position - before.lastIndexOf('\n') };
}
