import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { EngramError } from '../errors.js';
import type { CodexDocument } from './assembly/context-pack.js';

export interface CodexLoadOptions {
  /** Files larger than this are skipped (listed in `skipped`). Default 1 MiB. */
  maxFileBytes?: number;
  /** Most files read. Default 5,000. */
  maxFiles?: number;
}

export interface LoadedCodex {
  documents: CodexDocument[];
  skipped: Array<{ path: string; reason: string }>;
}

// Never part of a codex: version control, dependencies and build output.
const IGNORED_DIRS = new Set(['.git', 'node_modules', 'dist', 'build', '.engram', '.venv', '__pycache__', 'target']);

/**
 * Reads a codex (Deep Memory §2: a set of documents or a directory) from files and directories: text files
 * only, in path order so the block is byte-stable across turns; ids are paths relative to the first root.
 */
export function loadCodex(paths: readonly string[], options: CodexLoadOptions = {}): LoadedCodex {
  const maxFileBytes = options.maxFileBytes ?? 1024 * 1024;
  const maxFiles = options.maxFiles ?? 5000;
  const files: string[] = [];
  const skipped: LoadedCodex['skipped'] = [];
  for (const p of paths) {
    const root = resolve(p);
    let stat;
    try {
      stat = statSync(root);
    } catch {
      throw new EngramError('NOT_FOUND', `codex: no file or directory ${p}`, { field: 'codex', path: p });
    }
    if (stat.isDirectory()) walk(root, files);
    else files.push(root);
  }
  const base = paths.length > 0 && statSync(resolve(paths[0]!)).isDirectory() ? resolve(paths[0]!) : process.cwd();
  const documents: CodexDocument[] = [];
  for (const file of [...new Set(files)].sort()) {
    const rel = relative(base, file) || file;
    if (documents.length >= maxFiles) {
      skipped.push({ path: rel, reason: `more than ${maxFiles} files` });
      continue;
    }
    const size = statSync(file).size;
    if (size > maxFileBytes) {
      skipped.push({ path: rel, reason: `${size} bytes, over the ${maxFileBytes}-byte limit` });
      continue;
    }
    const bytes = readFileSync(file);
    if (bytes.includes(0)) {
      skipped.push({ path: rel, reason: 'binary' });
      continue;
    }
    documents.push({ id: rel, title: rel, text: bytes.toString('utf8') });
  }
  return { documents, skipped };
}

function walk(dir: string, out: string[]): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') && entry.name !== '.') {
      if (entry.isDirectory() || IGNORED_DIRS.has(entry.name)) continue;
    }
    const full = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!IGNORED_DIRS.has(entry.name)) walk(full, out);
    } else if (entry.isFile()) out.push(full);
  }
}
