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

/**
 * This run's parts replace the previous report's; every part it did not run is kept as it was. The full-text rows of
 * a backend the run left out (`ranBackends`, e.g. `--backends postgres` re-measuring PostgreSQL only) are kept too,
 * with their notes (those starting `<backend>:`) and a note naming the run that measured them.
 */
export function mergeScaleSections<C, I, L>(
  current: ScaleSections<C, I, L>,
  ran: readonly ScalePartName[],
  previous: ScaleSections<unknown, unknown, unknown> | undefined,
  ranBackends?: readonly string[],
): ScaleSections<C, I, L> {
  if (!previous) return current;
  const keep = (p: ScalePartName): boolean => !ran.includes(p);
  const notes: Partial<Record<ScalePartName | 'general', string[]>> = { general: current.notes.general ?? [] };
  for (const p of SCALE_PART_NAMES) {
    const n = keep(p) ? previous.notes[p] : current.notes[p];
    if (n && n.length > 0) notes[p] = n;
  }
  let classes = keep('fts') ? (previous.classes as C[]) : current.classes;
  const backendOf = (c: unknown): string | undefined => (c && typeof c === 'object' ? (c as { backend?: unknown }).backend : undefined) as string | undefined;
  const keptBackends = !keep('fts') && ranBackends ? [...new Set(previous.classes.map(backendOf))].filter((b): b is string => b !== undefined && !ranBackends.includes(b)) : [];
  if (keptBackends.length > 0) {
    // In the previous report's order: each backend's rows where they were, this run's new backends after them.
    const order = [...new Set([...previous.classes.map(backendOf), ...current.classes.map(backendOf)])];
    const rows = [...(previous.classes as C[]).filter((c) => keptBackends.includes(backendOf(c)!)), ...current.classes];
    classes = order.flatMap((b) => rows.filter((c) => backendOf(c) === b));
    const by = previous.measured.fts;
    const keptNotes = (previous.notes.fts ?? []).filter((n) => keptBackends.some((b) => n.startsWith(`${b}:`)));
    // The run that measured them: the previous one, unless it had kept them from an earlier one in turn (its note says
    // which), as a run of one backend after a run of the other does.
    const head = `Full-text rows of ${keptBackends.join(', ')} kept from the run that measured them`;
    const earlier = (previous.notes.fts ?? []).map((n) => (n.startsWith(head) ? / \((.*)\); this run measured /.exec(n)?.[1] : undefined)).find((x) => x !== undefined);
    const origin = earlier ?? (by ? `${by.when}, \`${by.command}\`${by.loadAverage !== undefined ? `, load average ${by.loadAverage}` : ''}` : undefined);
    const provenance = `${head}${origin !== undefined ? ` (${origin})` : ''}; this run measured ${ranBackends!.join(', ')}.`;
    notes.fts = [...(notes.fts ?? []), ...keptNotes, provenance];
  }
  const measured: Partial<Record<ScalePartName, PartProvenance>> = {};
  for (const p of SCALE_PART_NAMES) {
    const m = keep(p) ? previous.measured[p] : current.measured[p];
    if (m) measured[p] = m;
  }
  return {
    classes,
    ingest: keep('ingest') ? (previous.ingest as I | undefined) : current.ingest,
    cli: keep('cli') ? (previous.cli as L | undefined) : current.cli,
    hybrid: keep('hybrid') ? previous.hybrid : current.hybrid,
    http: keep('http') ? previous.http : current.http,
    cache: keep('cache') ? previous.cache : current.cache,
    notes,
    measured,
  };
}
