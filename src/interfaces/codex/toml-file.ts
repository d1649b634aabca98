import { existsSync, readFileSync } from 'node:fs';
import { EngramError } from '../../errors.js';

/**
 * Codex's `config.toml` as read, changed and written back. The TOML library is `@decimalturn/toml-patch`
 * (docs/integrations.md says why): it parses to a plain object and writes a changed object back by patching the
 * original text, so the user's comments, key order and formatting stay as they were, and removing what was added
 * gives back the same bytes. Loaded on first use: only `hooks install|uninstall --codex` need it.
 */
export interface TomlFile {
  path: string;
  /** Undefined when the file does not exist. */
  text: string | undefined;
  value: Record<string, unknown>;
}

type TomlPatch = typeof import('@decimalturn/toml-patch');
let library: Promise<TomlPatch> | undefined;
const toml = (): Promise<TomlPatch> => (library ??= import('@decimalturn/toml-patch'));

/** Reads a TOML file: a missing or blank file is an empty table; one that does not parse is refused, naming the line. */
export async function readTomlFile(path: string): Promise<TomlFile> {
  if (!existsSync(path)) return { path, text: undefined, value: {} };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new EngramError('INVALID_INPUT', `${path}: cannot read it (${(err as Error).message})`, { field: 'config', file: path });
  }
  if (text.trim() === '') return { path, text, value: {} };
  const { parse } = await toml();
  try {
    return { path, text, value: parse(text) as Record<string, unknown> };
  } catch (err) {
    const e = err as Error & { line?: number; column?: number };
    const where = typeof e.line === 'number' ? `:${e.line}${typeof e.column === 'number' ? `:${e.column + 1}` : ''}` : '';
    const reason = e.message.split('\n').at(-1) ?? e.message;
    throw new EngramError('INVALID_INPUT', `${path}${where}: not valid TOML (${reason}); fix it by hand first, nothing was written`, {
      field: 'config',
      file: path,
      ...(typeof e.line === 'number' ? { line: e.line } : {}),
    });
  }
}

/** The text to write for `value`: the original text patched (comments and layout kept), or a new file. */
export async function renderToml(file: TomlFile, value: Record<string, unknown>): Promise<string> {
  const { patch, stringify, TomlFormat } = await toml();
  if (file.text === undefined || file.text.trim() === '') {
    // A new file in the layout Codex documents: a [mcp_servers.engram] table, arrays without inner spaces.
    const format = TomlFormat.default();
    format.inlineTableStart = 3;
    format.bracketSpacing = false;
    return stringify(value, format);
  }
  const format = TomlFormat.autoDetectFormat(file.text);
  return patch(file.text, value, format);
}
