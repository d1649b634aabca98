import { Option, type Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import { IMPORT_FORMAT_NAMES, IMPORT_FORMATS } from '../../../memory/importers/types.js';
import { drainQueue } from './embedding.js';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Engram } from '../../../engine.js';
import type { ImportReport } from '../../../memory/import-runner.js';
import type { ImportFormat } from '../../../memory/importers/types.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { formatPairs, printJson } from '../output.js';
import { createProgress } from '../progress.js';

export interface IngestArgs {
  file: string;
  session?: string;
  project?: string;
  format?: ImportFormat;
  skipInvalid?: boolean;
  json?: boolean;
}

/** `engram ingest FILE|-`: imports a transcript; `-` reads standard input (spooled to a temp file first). */
export async function ingestCommand(mem: Engram, args: IngestArgs, io: Io): Promise<number> {
  let path = args.file;
  let tempDir: string | undefined;
  if (args.file === '-') {
    // Strict imports read the source twice (validate, then store in one transaction), so stdin is spooled to disk once.
    tempDir = mkdtempSync(join(tmpdir(), 'engram-stdin-'));
    path = join(tempDir, 'stdin');
    await pipeline(process.stdin, createWriteStream(path));
  }
  const progress = createProgress(io);
  try {
    const report = await mem.importFile(
      { path, displayName: args.file === '-' ? 'stdin' : args.file },
      {
        ...(args.format ? { format: args.format } : {}),
        ...(args.session ? { sessionId: args.session } : {}),
        ...(args.project !== undefined ? { project: args.project } : {}),
        skipInvalid: args.skipInvalid ?? false,
        onProgress: (p) => progress.update(p.bytesRead, p.totalBytes, p.phase, p.events, 'bytes'),
      },
    );
    progress.stop();
    if (args.json) printJson(io, report);
    else io.out(renderReport(report));
    return report.issueCount > 0 ? EXIT.PARTIAL : EXIT.OK;
  } finally {
    progress.stop();
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  }
}

const SESSIONS_LISTED = 5;
/** Invalid records printed in the text report; `--json` carries every one the report keeps. */
const ISSUES_LISTED = 50;

function renderSessions(sessions: ImportReport['sessions']): string {
  if (sessions.length === 0) return '-';
  const listed = sessions.slice(0, SESSIONS_LISTED).map((s) => `${s.id} (${s.stored} new)`);
  const more = sessions.length - listed.length;
  return more > 0 ? `${sessions.length}: ${listed.join(', ')} and ${more} more (--json lists all)` : listed.join(', ');
}

function renderReport(r: ImportReport): string {
  const lines = [
    formatPairs([
      ['file', r.file],
      ['format', r.format],
      ['stored', r.stored],
      ['already stored', r.duplicates],
      ['sessions', renderSessions(r.sessions)],
    ]),
  ];
  const skipped = Object.entries(r.skipped);
  if (skipped.length > 0) lines.push(`skipped records: ${skipped.map(([why, n]) => `${n} ${why}`).join('; ')}`);
  if (r.issueCount > 0) {
    if (r.detectedFormat !== undefined) lines.push(`the file looks like ${IMPORT_FORMAT_NAMES[r.detectedFormat]}, not ${IMPORT_FORMAT_NAMES[r.format]}: pass --format ${r.detectedFormat}`);
    lines.push(`${r.issueCount} invalid record(s) were left out:`);
    const listed = r.issues.slice(0, ISSUES_LISTED);
    for (const i of listed) lines.push(`  ${i.line > 0 ? `${r.file}:${i.line}` : r.file}: ${i.message}`);
    const more = r.issueCount - listed.length;
    if (more > 0) lines.push(`  ... and ${more} more${r.issues.length > listed.length ? ' (--json lists them)' : ''}`);
  }
  return lines.join('\n');
}

/** `engram ingest`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('ingest')
    .description(
      'import a transcript (generic JSONL, OpenAI or Anthropic messages, a Claude Code session, a Codex CLI rollout, an OpenHands event stream or evaluation output, a SWE-agent trajectory, a Gemini CLI chat)',
    )
    .argument('<file>', 'transcript file, or - for standard input')
    .option('-s, --session <id>', 'import into this session (default: the session ids in the file, else the file name)')
    .option('-p, --project <name>', "the project new sessions belong to: its agents may read them (default: default; see docs/security.md)")
    .addOption(new Option('-f, --format <format>', 'input format (default: detected from the first record)').choices([...IMPORT_FORMATS]))
    .option('--skip-invalid', 'store the valid records and list invalid ones (default: reject the whole file)')
    .option('--no-embed', 'do not embed the new events now (they stay queued for `engram reindex` or `engram serve`); the identifier index is caught up either way')
    .action(
      context.withStore(
        async (m, args: IngestArgs & GlobalOptions & { embed?: boolean }) => {
          const code = await ingestCommand(m, args, io);
          // Appends leave the identifier index to a catch-up (docs/recall.md, "Watermark and tail"); an import
          // catches it up as it embeds, so a CLI-only store does not fall back to the plain path for identifiers.
          await m.maintainTextIndex();
          if (args.embed !== false) await drainQueue(m, io);
          return code;
        },
        true,
        'foreground',
        (args) => [args.file],
      ),
    );
}
