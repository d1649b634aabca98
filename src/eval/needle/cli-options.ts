/**
 * Options of `engram bench needle` and `npm run bench -- needle`, checked in one place (errors name the
 * flag), and the short summaries printed on a terminal. The interfaces only parse flags into
 * {@link NeedleCliArgs}, call {@link planNeedleRun}, run the plan and print.
 */
import { resolve } from 'node:path';
import { EngramError } from '../../errors.js';
import { IMPORT_FORMATS, type ImportFormat } from '../../memory/importers/types.js';
import type { ConditionName } from './metrics.js';
import { DEFAULT_CYCLES, DEFAULT_SEEDS, DEFAULT_TRACES, DEFAULT_WINDOW_TOKENS, type NeedleReport } from './needle-bench.js';
import type { ReplayReport } from './replay.js';

/** Flags as strings, as a command-line parser hands them over. */
export interface NeedleCliArgs {
  quick?: boolean;
  /** One seed or a comma-separated list. */
  seed?: string;
  window?: string;
  cycles?: string;
  out?: string;
  replay?: string;
  format?: string;
  session?: string;
  /** Hidden: traces per seed. */
  traces?: string;
  /** Hidden: needles of each type per trace. */
  needlesPerType?: string;
  /** Engram consolidates each session before probing (engram-run.ts); the report gets a `-consolidated` name. */
  consolidate?: boolean;
}

export type NeedleRunPlan =
  | {
      kind: 'synthetic';
      profile: 'full' | 'quick' | 'custom';
      seeds: number[];
      traces: number;
      needlesPerType: number;
      windowTokens: number;
      cycles: number[];
      outDir: string;
      reportName: string;
      /** The flags that reproduce this run. */
      flags: string;
      consolidate?: boolean;
    }
  | { kind: 'replay'; file: string; format?: ImportFormat; session?: string; windowTokens: number; cycles: number[]; outDir: string; reportName: string };

/** `--quick`: one seed, four traces; well under a minute on a laptop. */
export const QUICK_PROFILE = { seeds: [1], traces: 4, needlesPerType: 2 } as const;
export const DEFAULT_OUT_DIR = 'bench/results';

export function planNeedleRun(args: NeedleCliArgs, cwd = process.cwd()): NeedleRunPlan {
  const windowTokens = args.window === undefined ? DEFAULT_WINDOW_TOKENS : integer(args.window, 'window', 256, 10_000_000);
  const cycles = args.cycles === undefined ? [...DEFAULT_CYCLES] : list(args.cycles, 'cycles', 1, 50);
  const outDir = resolve(cwd, args.out ?? DEFAULT_OUT_DIR);
  if (args.replay !== undefined) {
    if (args.format !== undefined && !(IMPORT_FORMATS as readonly string[]).includes(args.format)) {
      throw new EngramError('INVALID_INPUT', `--format: unknown "${args.format}"; expected one of ${IMPORT_FORMATS.join(', ')}`, { field: 'format' });
    }
    return {
      kind: 'replay',
      file: resolve(cwd, args.replay),
      ...(args.format ? { format: args.format as ImportFormat } : {}),
      ...(args.session ? { session: args.session } : {}),
      windowTokens,
      cycles,
      outDir,
      reportName: 'needle-replay',
    };
  }
  if (args.format !== undefined || args.session !== undefined) {
    throw new EngramError('INVALID_INPUT', `--${args.format !== undefined ? 'format' : 'session'}: only with --replay FILE`, { field: args.format !== undefined ? 'format' : 'session' });
  }
  const base = args.quick ? QUICK_PROFILE : { seeds: DEFAULT_SEEDS, traces: DEFAULT_TRACES, needlesPerType: 2 };
  const seeds = args.seed === undefined ? [...base.seeds] : list(args.seed, 'seed', 0, 2 ** 31);
  const traces = args.traces === undefined ? base.traces : integer(args.traces, 'traces', 1, 10_000);
  const needlesPerType = args.needlesPerType === undefined ? base.needlesPerType : integer(args.needlesPerType, 'needles-per-type', 1, 4);
  const isDefault = args.seed === undefined && args.traces === undefined && args.needlesPerType === undefined && args.window === undefined && args.cycles === undefined;
  const profile = isDefault ? (args.quick ? 'quick' : 'full') : 'custom';
  return {
    kind: 'synthetic',
    profile,
    seeds,
    traces,
    needlesPerType,
    windowTokens,
    cycles,
    outDir,
    // Only the default full run writes the committed report's name; other runs never overwrite it.
    reportName: `${profile === 'full' ? 'needle' : profile === 'quick' ? 'needle-quick' : 'needle-custom'}${args.consolidate ? '-consolidated' : ''}`,
    ...(args.consolidate ? { consolidate: true } : {}),
    flags: [
      args.quick ? '--quick' : '',
      args.consolidate ? '--consolidate' : '',
      args.seed !== undefined ? `--seed ${seeds.join(',')}` : '',
      args.window !== undefined ? `--window ${windowTokens}` : '',
      args.cycles !== undefined ? `--cycles ${cycles.join(',')}` : '',
      args.traces !== undefined ? `--traces ${traces}` : '',
      args.needlesPerType !== undefined ? `--needles-per-type ${needlesPerType}` : '',
    ]
      .filter(Boolean)
      .join(' '),
  };
}

function integer(text: string, flag: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < min || n > max) throw new EngramError('INVALID_INPUT', `--${flag}: "${text}" is not a whole number from ${min} to ${max}`, { field: flag });
  return n;
}

function list(text: string, flag: string, min: number, max: number): number[] {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.length === 0 || parts.some((p) => !/^\d+$/.test(p))) throw new EngramError('INVALID_INPUT', `--${flag}: "${text}" is not a comma-separated list of whole numbers`, { field: flag });
  return [...new Set(parts.map((p) => integer(p, flag, min, max)))];
}

const pct = (v: number | null | undefined): string => (v === null || v === undefined || Number.isNaN(v) ? '-' : `${(v * 100).toFixed(1)}`);

/** The headline table as aligned text for a terminal. */
export function formatNeedleSummary(report: NeedleReport, files: string[]): string {
  const last = report.config.cycles.at(-1);
  const header = ['condition', '0-hop', '1-hop', '2-hop', 'false', 'p@5'];
  const rows = (Object.entries(report.conditions) as Array<[ConditionName, NonNullable<NeedleReport['conditions'][ConditionName]>]>).map(([name, c]) => [
    `${name}${c.isSimulation ? ' (sim.)' : ''}`,
    pct(c.zeroHop),
    pct(c.oneHop),
    pct(c.twoHop),
    pct(c.falseRecall),
    c.precisionAt5 === null ? '-' : c.precisionAt5.toFixed(2),
  ]);
  return [
    `Needle recall after ${last} compaction cycles, seed ${report.headlineSeed}, ${report.config.traces} traces x ${report.config.needlesPerType * 5} needles, ${report.config.windowTokens}-token window (percent):`,
    '',
    ...table(header, rows),
    '',
    ...report.targets.filter((t) => t.seed === report.headlineSeed).map((t) => `target ${t.name}: ${t.value === null ? '-' : t.name === 'precisionAt5' ? t.value.toFixed(2) : `${pct(t.value)} %`} (${t.isMet ? 'met' : 'not met'})`),
    '',
    `${(report.durationMs / 1000).toFixed(1)} s; wrote ${files.join(', ')}`,
  ].join('\n');
}

export function formatReplaySummary(report: ReplayReport, files: string[]): string {
  const header = ['condition', 'cycles', '0-hop', '1-hop', '2-hop', 'false', 'p@5'];
  const rows = (Object.entries(report.conditions) as Array<[ConditionName, ReplayReport['conditions'][ConditionName]]>).map(([name, c]) =>
    c ? [name, String(c.checkpoint), pct(c.zeroHop), pct(c.oneHop), pct(c.twoHop), pct(c.falseRecall), c.precisionAt5 === null ? '-' : c.precisionAt5.toFixed(2)] : [name, 'none reached', '', '', '', '', ''],
  );
  return [
    `Replay of ${report.file} (${report.format}, session ${report.sessionId}): ${report.events} events, ${report.turns} turns, ${report.probes.length} probes, ${report.config.windowTokens}-token window (percent):`,
    '',
    ...table(header, rows),
    '',
    `${(report.durationMs / 1000).toFixed(1)} s; wrote ${files.join(', ')}`,
  ].join('\n');
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), ...rows.map(line)];
}
