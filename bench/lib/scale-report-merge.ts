import { existsSync, readFileSync } from 'node:fs';

/**
 * `npm run bench -- scale --parts X` measures only some parts of bench/results/scale.{md,json}; the report keeps the
 * other parts' figures from the previous report, each with the run that measured it, so helpers re-running one part
 * (full-text classes, ingest, the CLI, hybrid) do not erase the others'. Pure apart from reading the previous JSON.
 */

export type ScalePartName = 'fts' | 'ingest' | 'cli' | 'hybrid' | 'http' | 'cache';
/** Every part, in report order. */
export const SCALE_PART_NAMES: readonly ScalePartName[] = ['fts', 'ingest', 'cli', 'hybrid', 'http', 'cache'];

/** When and with which arguments a part's figures were measured. */
export interface PartProvenance {
  when: string;
  command: string;
  /** 1-minute load average when the run ended (2 shared cores: figures vary with it). */
  loadAverage?: number;
}

export interface ScaleSections<C, I, L> {
  classes: C[];
  ingest: I | undefined;
  cli: L | undefined;
  hybrid: { markdown: string; json: unknown } | undefined;
  /** `engram serve` under bench/http-load.ts, and the context bench's modelled cache read (bench/lib/scale-parts.ts). */
  http?: { markdown: string; json: unknown } | undefined;
  cache?: { markdown: string; json: unknown } | undefined;
  /** Notes by the part they explain (`general`: the run as a whole). */
  notes: Partial<Record<ScalePartName | 'general', string[]>>;
  measured: Partial<Record<ScalePartName, PartProvenance>>;
}

interface PreviousJson {
  when?: string;
  args?: { parts?: string[]; events?: number; reuse?: boolean; backends?: string[]; pgEvents?: number; queries?: number };
  command?: string;
  classes?: unknown[];
  ingest?: unknown;
  cli?: unknown;
  hybrid?: unknown;
  hybridMarkdown?: string;
  http?: { markdown: string; json: unknown } | null;
  cache?: { markdown: string; json: unknown } | null;
  notes?: unknown;
  measured?: Partial<Record<ScalePartName, PartProvenance>>;
}

/** Reads the previous report (JSON, and the markdown for a hybrid section it did not keep as text). */
export function readPreviousScaleReport(jsonPath: string, mdPath: string): ScaleSections<unknown, unknown, unknown> | undefined {
  if (!existsSync(jsonPath)) return undefined;
  let prev: PreviousJson;
  try {
    prev = JSON.parse(readFileSync(jsonPath, 'utf8')) as PreviousJson;
  } catch {
    return undefined;
  }
  const parts = prev.args?.parts ?? [];
  const legacy: PartProvenance = { when: prev.when ?? 'unknown', command: prev.command ?? `--parts ${parts.join(',')}` };
  const measured: Partial<Record<ScalePartName, PartProvenance>> = { ...prev.measured };
  for (const p of parts as ScalePartName[]) measured[p] ??= legacy;
  let hybridMarkdown = prev.hybridMarkdown;
  if (hybridMarkdown === undefined && prev.hybrid !== null && prev.hybrid !== undefined && existsSync(mdPath)) {
    const md = readFileSync(mdPath, 'utf8');
    const m = /## Hybrid \/ vectors\n\n<!--[^\n]*-->\n([\s\S]*?)\n(?:## Notes|$)/.exec(md);
    hybridMarkdown = m?.[1]?.trim();
  }
  return {
    classes: Array.isArray(prev.classes) ? prev.classes : [],
    ingest: prev.ingest ?? undefined,
    cli: prev.cli ?? undefined,
    hybrid: prev.hybrid !== null && prev.hybrid !== undefined && hybridMarkdown !== undefined ? { markdown: hybridMarkdown, json: prev.hybrid } : undefined,
    http: prev.http ?? undefined,
    cache: prev.cache ?? undefined,
    notes: notesByPart(prev.notes),
    measured,
  };
}

/** Notes as kept: by part, or (an older report, this run's list) a list whose part is told by what each note is about. */
export function notesByPart(notes: unknown): Partial<Record<ScalePartName | 'general', string[]>> {
  if (notes && typeof notes === 'object' && !Array.isArray(notes)) return notes as Partial<Record<ScalePartName | 'general', string[]>>;
  const out: Partial<Record<ScalePartName | 'general', string[]>> = {};
  for (const n of Array.isArray(notes) ? (notes as unknown[]).filter((x): x is string => typeof x === 'string') : []) {
    const part: ScalePartName | 'general' = /^Ingest/.test(n) ? 'ingest' : /^Hybrid/.test(n) ? 'hybrid' : /^PostgreSQL ran on/.test(n) ? 'fts' : 'general';
    (out[part] ??= []).push(n);
  }
  return out;
}

/** This run's parts replace the previous report's; every part it did not run is kept as it was. */
export function mergeScaleSections<C, I, L>(
  current: ScaleSections<C, I, L>,
  ran: readonly ScalePartName[],
  previous: ScaleSections<unknown, unknown, unknown> | undefined,
): ScaleSections<C, I, L> {
  if (!previous) return current;
  const keep = (p: ScalePartName): boolean => !ran.includes(p);
  const notes: Partial<Record<ScalePartName | 'general', string[]>> = { general: current.notes.general ?? [] };
  for (const p of SCALE_PART_NAMES) {
    const n = keep(p) ? previous.notes[p] : current.notes[p];
    if (n && n.length > 0) notes[p] = n;
  }
  const measured: Partial<Record<ScalePartName, PartProvenance>> = {};
  for (const p of SCALE_PART_NAMES) {
    const m = keep(p) ? previous.measured[p] : current.measured[p];
    if (m) measured[p] = m;
  }
  return {
    classes: keep('fts') ? (previous.classes as C[]) : current.classes,
    ingest: keep('ingest') ? (previous.ingest as I | undefined) : current.ingest,
    cli: keep('cli') ? (previous.cli as L | undefined) : current.cli,
    hybrid: keep('hybrid') ? previous.hybrid : current.hybrid,
    http: keep('http') ? previous.http : current.http,
    cache: keep('cache') ? previous.cache : current.cache,
    notes,
    measured,
  };
}
