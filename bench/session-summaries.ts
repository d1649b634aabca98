/**
 * `npm run bench -- session-summaries`: are real coding sessions summarized on a fresh store, without a model, and
 * does the summary keep what the session did? Ground truth is taken mechanically from each transcript's tool calls
 * (bench/lib/transcript-truth.ts): files written or edited, commands that failed, their first error line.
 *
 * Each session goes into a fresh store the way a user's setup would store it:
 * - Claude Code transcripts (../shared/bench-data/transcripts/: the viewer sample and the main sessions of
 *   claude-code-projects/): replayed turn by turn through the hooks `engram hooks install --claude-code` wrote
 *   (SessionStart, UserPromptSubmit, records, Stop; SessionEnd), so the summary is whatever the hooks made;
 * - the other formats (the project's fixtures in test/fixtures/transcripts: Codex CLI rollouts, a SWE-agent
 *   trajectory, OpenHands files): `engram ingest` then `engram consolidate`.
 * When that leaves the session without a summary, `engram consolidate` is run too (for Claude Code) and the row
 * says which step made it. Then a NEW session of the same project starts (SessionStart, startup) and its brief is
 * checked for the same items.
 *
 * Matching: a file counts when its path as recorded, or relative to the project root the transcript records,
 * appears; a failed command counts when its command (first 60 characters) or its error line (first 60) appears;
 * text normalised (bench/lib/injection-score.ts). Writes bench/results/<out>.{md,json}.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createGptTokenizer } from '../src/providers/gpt-tokenizer.js';
import { ClaudeSession, engramCli, installHookWorld } from './lib/claude-hooks.js';
import { projectSessions, replayRecorded, withCwd } from './lib/claude-replay.js';
import { deterministicUuid } from './lib/locomo-transcripts.js';
import { mentionsError, mentionsPath, normalizeText, ERROR_PREFIX_CHARS } from './lib/injection-score.js';
import { sharedBenchData } from './lib/shared-data.js';
import { machineLine, round } from './lib/stats.js';
import { jsonLines, truthOfFile, type Failure, type SessionTruth } from './lib/transcript-truth.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const SHARED_TRANSCRIPTS = join(sharedBenchData(), 'transcripts');
const FIXTURES = resolve(REPO_ROOT, 'test/fixtures/transcripts');

export interface SessionSummariesOptions {
  quick: boolean;
  out: string;
  label?: string;
  /** Where to write the report; default bench/results. */
  resultsDir?: string;
  /** Transcripts to use instead of the default list (tests). */
  sources?: TranscriptSource[];
}

export interface TranscriptSource {
  /** Shown in the report: the file relative to its folder. */
  name: string;
  path: string;
  format: SessionTruth['format'];
}

/** The default list: every real Claude Code main session under ../shared, then the fixtures of other formats. */
export function defaultSources(): TranscriptSource[] {
  const out: TranscriptSource[] = [];
  if (existsSync(SHARED_TRANSCRIPTS)) {
    for (const name of readdirSync(SHARED_TRANSCRIPTS).sort()) {
      if (name.endsWith('.jsonl')) out.push({ name, path: join(SHARED_TRANSCRIPTS, name), format: 'claude-code' });
    }
    const projects = join(SHARED_TRANSCRIPTS, 'claude-code-projects');
    if (existsSync(projects)) {
      for (const project of readdirSync(projects).sort()) {
        const dir = join(projects, project);
        if (!statSync(dir).isDirectory()) continue;
        for (const s of projectSessions(dir)) out.push({ name: `claude-code-projects/${project}/${basename(s.file)}`, path: s.file, format: 'claude-code' });
      }
    }
  }
  const fixtures: Array<[string, SessionTruth['format']]> = [
    ['codex-rollout.jsonl', 'codex'],
    ['codex-rollout-legacy.jsonl', 'codex'],
    ['swe-agent-textkit__textkit-231.traj', 'swe-agent'],
    ['openhands-events.jsonl', 'openhands'],
    ['openhands-trajectory.json', 'openhands'],
  ];
  for (const [name, format] of fixtures) out.push({ name: `test/fixtures/transcripts/${name}`, path: join(FIXTURES, name), format });
  return out;
}

const tokenizer = createGptTokenizer();

interface ItemCheck {
  item: string;
  inSummary: boolean;
  inBrief: boolean;
}

export interface SessionRow {
  name: string;
  format: SessionTruth['format'];
  events: number;
  /** What made the summary: the hooks, `engram consolidate`, or nothing. */
  producedBy: 'hooks' | 'ingest + consolidate' | 'consolidate after the hooks' | 'none';
  summaries: number;
  summaryTokens: number;
  briefTokens: number;
  files: ItemCheck[];
  failures: ItemCheck[];
  errors: ItemCheck[];
  note?: string;
}

function failurePresent(f: Failure, text: string): boolean {
  const command = normalizeText(f.command).slice(0, ERROR_PREFIX_CHARS).trim();
  return (command !== '' && normalizeText(text).includes(command)) || mentionsError(f.error, text);
}

interface StoredSummary {
  sessionId: string | null;
  depth: number;
  kind?: string;
  text: string;
  tokens: number;
}

function sessionSummaries(world: Parameters<typeof engramCli>[0], cwd: string, sessionId: string): StoredSummary[] {
  const list = JSON.parse(engramCli(world, ['summaries', '--json', '--limit', '1000'], cwd)) as StoredSummary[];
  return list.filter((s) => s.depth === 0 && s.kind !== 'decision' && s.sessionId === sessionId);
}

function eventCount(world: Parameters<typeof engramCli>[0], cwd: string): number {
  const stats = JSON.parse(engramCli(world, ['stats', '--json'], cwd)) as { events?: number };
  return stats.events ?? 0;
}

/** Stores one transcript in a fresh store, then checks its summary and the next session's brief. */
async function measureSession(source: TranscriptSource, root: string, cacheDir: string): Promise<SessionRow> {
  const dir = mkdtempSync(join(root, 'session-'));
  const world = installHookWorld({ home: join(dir, 'home'), db: join(dir, 'engram.db'), cacheDir });
  const truth = truthOfFile(source.path, source.format);
  const work = join(dir, 'work');
  mkdirSync(work, { recursive: true });
  let sessionId: string;
  let producedBy: SessionRow['producedBy'];
  // The project directory the hooks see: a real one for a replayed Claude Code session (its records' `cwd` moved
  // there), the recorded one (which need not exist here) for the other formats.
  let projectCwd: string;
  let summaries: StoredSummary[];
  // What `engram consolidate` printed, when it ran: it names a session the gate skipped, with the reasons.
  let gate = '';
  if (source.format === 'claude-code') {
    projectCwd = join(dir, 'project');
    mkdirSync(projectCwd, { recursive: true });
    sessionId = basename(source.path).replace(/\.jsonl$/, '');
    const session = new ClaudeSession(world, sessionId, projectCwd);
    await replayRecorded(session, withCwd(jsonLines(readFileSync(source.path, 'utf8')), projectCwd));
    summaries = sessionSummaries(world, work, sessionId);
    producedBy = 'hooks';
    if (summaries.length === 0) {
      gate = engramCli(world, ['consolidate'], work);
      summaries = sessionSummaries(world, work, sessionId);
      producedBy = summaries.length > 0 ? 'consolidate after the hooks' : 'none';
    }
  } else {
    projectCwd = truth.projectRoot ?? work;
    sessionId = `bench-${deterministicUuid(source.name).slice(0, 8)}`;
    engramCli(world, ['ingest', source.path, '--format', source.format, '--session', sessionId], work);
    gate = engramCli(world, ['consolidate'], work);
    summaries = sessionSummaries(world, work, sessionId);
    producedBy = summaries.length > 0 ? 'ingest + consolidate' : 'none';
  }
  const summaryText = summaries.map((s) => s.text).join('\n\n');
  const next = new ClaudeSession(world, deterministicUuid(`session-summaries:next:${source.name}`), projectCwd, {}, existsSync(projectCwd) ? undefined : work);
  const brief = (await next.start('startup'))?.injected ?? '';
  const check = (item: string, present: (text: string) => boolean): ItemCheck => ({ item, inSummary: present(summaryText), inBrief: present(brief) });
  const row: SessionRow = {
    name: source.name,
    format: source.format,
    events: eventCount(world, work),
    producedBy,
    summaries: summaries.length,
    summaryTokens: summaries.reduce((n, s) => n + (s.tokens ?? tokenizer.count(s.text)), 0),
    briefTokens: brief === '' ? 0 : tokenizer.count(brief),
    files: truth.filesEdited.map((path) => check(path, (text) => mentionsPath(path, text, truth.projectRoot))),
    failures: truth.failures.map((f) => check(`${f.command.slice(0, 60)} -> ${f.error.slice(0, 60)}`, (text) => failurePresent(f, text))),
    errors: truth.failures.filter((f) => f.error !== '').map((f) => check(f.error.slice(0, 80), (text) => mentionsError(f.error, text))),
  };
  if (source.format === 'swe-agent') row.note = 'the format records no exit status: no failed commands';
  const skipped = /^skipped \S+: (.*)$/m.exec(gate);
  if (producedBy === 'none' && skipped) row.note = `skipped by the significance gate: ${skipped[1]}`;
  return row;
}

export interface SessionSummariesReport {
  date: string;
  machine: string;
  commit: string;
  label: string;
  seconds: number;
  totals: {
    sessions: number;
    summarized: number;
    summarizedByHooksOrIngest: number;
    files: { n: number; inSummary: number; inBrief: number };
    failures: { n: number; inSummary: number; inBrief: number };
    errors: { n: number; inSummary: number; inBrief: number };
    summaryTokensMean: number;
  };
  sessions: SessionRow[];
}

const share = (items: ItemCheck[], key: 'inSummary' | 'inBrief'): number => (items.length === 0 ? 0 : round((items.filter((i) => i[key]).length / items.length) * 100, 1));

/** Runs the bench and writes the report; returns it. */
export async function runSessionSummaries(options: SessionSummariesOptions): Promise<SessionSummariesReport> {
  const started = performance.now();
  const root = mkdtempSync(join(tmpdir(), 'engram-session-summaries-'));
  const cacheDir = join(root, 'cache');
  let sources = options.sources ?? defaultSources();
  if (options.quick) sources = [sources.find((s) => s.format === 'claude-code'), sources.find((s) => s.format === 'codex')].filter((s): s is TranscriptSource => s !== undefined);
  const rows: SessionRow[] = [];
  try {
    for (const source of sources) {
      const t = performance.now();
      rows.push(await measureSession(source, root, cacheDir));
      console.log(`session-summaries: ${source.name} in ${round((performance.now() - t) / 1000, 1)} s`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  const all = (key: 'files' | 'failures' | 'errors') => rows.flatMap((r) => r[key]);
  const totals = (key: 'files' | 'failures' | 'errors') => ({ n: all(key).length, inSummary: share(all(key), 'inSummary'), inBrief: share(all(key), 'inBrief') });
  const summarized = rows.filter((r) => r.summaries > 0);
  const report: SessionSummariesReport = {
    date: new Date().toISOString(),
    machine: machineLine(),
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim(),
    label: options.label ?? '',
    seconds: round((performance.now() - started) / 1000, 1),
    totals: {
      sessions: rows.length,
      summarized: summarized.length,
      summarizedByHooksOrIngest: rows.filter((r) => r.producedBy === 'hooks' || r.producedBy === 'ingest + consolidate').length,
      files: totals('files'),
      failures: totals('failures'),
      errors: totals('errors'),
      summaryTokensMean: summarized.length === 0 ? 0 : round(summarized.reduce((n, r) => n + r.summaryTokens, 0) / summarized.length, 0),
    },
    sessions: rows,
  };
  const dir = options.resultsDir ?? join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${options.out}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(dir, `${options.out}.md`), renderSessionSummaries(report));
  console.log(`session-summaries: wrote ${join(dir, `${options.out}.md`)} in ${report.seconds} s`);
  return report;
}

export function renderSessionSummaries(r: SessionSummariesReport): string {
  const t = r.totals;
  const lines = [
    '# Session summaries of real coding sessions, without a model',
    '',
    ...(r.label ? [`**${r.label}**`, ''] : []),
    `Generated by \`npm run bench -- session-summaries\` on ${r.date.slice(0, 10)} at commit ${r.commit} (${r.machine}) in ${r.seconds} s. See bench/session-summaries.ts for the method.`,
    '',
    'Each transcript goes into a fresh store: Claude Code sessions replayed turn by turn through the installed hooks (`engram hooks install --claude-code`; SessionStart, UserPromptSubmit, the turn\'s records, Stop; SessionEnd), the other formats through `engram ingest` and `engram consolidate`. Ground truth from the tool calls: files written or edited (Write/Edit/MultiEdit/NotebookEdit, Codex `apply_patch`, str_replace_editor `create`/`str_replace`/`insert`), failed calls (Claude Code `is_error` results other than the host\'s "The user doesn\'t want to" rejections, non-zero exit codes where the format records them) and their first error line. A file counts when its path or its path relative to the recorded project root appears; a failed command when its command or its error line (first 60 characters, normalised) appears; an error when its line does. The brief is the SessionStart (startup) injection of a new session in the same project.',
    '',
    '| | n | in its summary | in the next session\'s brief | target (summary) |',
    '| --- | ---: | ---: | ---: | --- |',
    `| sessions summarized | ${t.sessions} | ${t.summarized} (${t.summarizedByHooksOrIngest} by the hooks / ingest + consolidate) | | every one |`,
    `| files written or edited | ${t.files.n} | ${t.files.inSummary} % | ${t.files.inBrief} % | >= 95 % |`,
    `| failed commands (command or error) | ${t.failures.n} | ${t.failures.inSummary} % | ${t.failures.inBrief} % | >= 90 % |`,
    `| error lines | ${t.errors.n} | ${t.errors.inSummary} % | ${t.errors.inBrief} % | |`,
    '',
    `Tokens per summarized session (all its session summaries): ${t.summaryTokensMean} on average.`,
    '',
    '| transcript | format | events | summary made by | summaries | summary tokens | brief tokens | files: summary / brief | failed: summary / brief | errors: summary / brief |',
    '| --- | --- | ---: | --- | ---: | ---: | ---: | --- | --- | --- |',
  ];
  const frac = (items: ItemCheck[], key: 'inSummary' | 'inBrief'): string => (items.length === 0 ? '-' : `${items.filter((i) => i[key]).length}/${items.length}`);
  for (const s of r.sessions) {
    lines.push(
      `| ${s.name} | ${s.format} | ${s.events} | ${s.producedBy} | ${s.summaries} | ${s.summaryTokens} | ${s.briefTokens} | ${frac(s.files, 'inSummary')} / ${frac(s.files, 'inBrief')} | ${frac(s.failures, 'inSummary')} / ${frac(s.failures, 'inBrief')} | ${frac(s.errors, 'inSummary')} / ${frac(s.errors, 'inBrief')} |`,
    );
  }
  const notes = r.sessions.filter((s) => s.note);
  if (notes.length > 0) lines.push('', ...notes.map((s) => `- ${s.name}: ${s.note}.`));
  return `${lines.join('\n')}\n`;
}
