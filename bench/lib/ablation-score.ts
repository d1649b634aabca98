/**
 * Scores an ablation of recall: for every probe under every condition, the ranked event ids recall returned
 * and the id that answers the probe. Precision@1 = share of probes whose first hit is the answer; hit@k =
 * share whose answer is among the first k hits. Pure.
 */

/** One probe answered under one condition. */
export interface ProbeOutcome {
  probeId: string;
  /** The probe's type (a row group of the table). */
  type: string;
  /** The condition it ran under (a column of the table), e.g. `all on`, `-premise`. */
  condition: string;
  /** Event ids as recall ranked them, best first. */
  rankedIds: readonly string[];
  expectedId: string;
}

export interface AblationCell {
  probes: number;
  /** 0..1 */
  precisionAt1: number;
  /** 0..1, with the `k` of `scoreAblation`. */
  hitAtK: number;
}

export interface AblationTable {
  k: number;
  /** In first-seen order. */
  conditions: string[];
  types: string[];
  overall: Record<string, AblationCell>;
  byType: Record<string, Record<string, AblationCell>>;
  /**
   * Per condition, probes whose first hit differs from the first hit under `baseline` (the first condition
   * seen unless given): how often switching a factor off changes the answer at all, right or wrong.
   */
  changedTop1: Record<string, number>;
  baseline: string;
}

/**
 * Builds the table. Every probe must have run under every condition exactly once.
 * @throws Error naming the probe and condition otherwise, so a broken run cannot print a plausible table.
 */
export function scoreAblation(outcomes: readonly ProbeOutcome[], options: { k?: number; baseline?: string } = {}): AblationTable {
  const k = options.k ?? 5;
  const conditions = unique(outcomes.map((o) => o.condition));
  const types = unique(outcomes.map((o) => o.type));
  const probes = unique(outcomes.map((o) => o.probeId));
  const baseline = options.baseline ?? conditions[0] ?? '';
  const byKey = new Map<string, ProbeOutcome>();
  for (const o of outcomes) {
    const key = `${o.probeId}\u0000${o.condition}`;
    if (byKey.has(key)) throw new Error(`probe ${o.probeId} ran twice under ${o.condition}`);
    byKey.set(key, o);
  }
  for (const p of probes) for (const c of conditions) if (!byKey.has(`${p}\u0000${c}`)) throw new Error(`probe ${p} did not run under ${c}`);

  const cell = (rows: readonly ProbeOutcome[]): AblationCell => ({
    probes: rows.length,
    precisionAt1: rows.length === 0 ? 0 : rows.filter((o) => o.rankedIds[0] === o.expectedId).length / rows.length,
    hitAtK: rows.length === 0 ? 0 : rows.filter((o) => o.rankedIds.slice(0, k).includes(o.expectedId)).length / rows.length,
  });
  const overall: Record<string, AblationCell> = {};
  const byType: Record<string, Record<string, AblationCell>> = Object.fromEntries(types.map((t) => [t, {}]));
  const changedTop1: Record<string, number> = {};
  for (const c of conditions) {
    const rows = outcomes.filter((o) => o.condition === c);
    overall[c] = cell(rows);
    for (const t of types) byType[t]![c] = cell(rows.filter((o) => o.type === t));
    changedTop1[c] = rows.filter((o) => byKey.get(`${o.probeId}\u0000${baseline}`)?.rankedIds[0] !== o.rankedIds[0]).length;
  }
  return { k, conditions, types, overall, byType, changedTop1, baseline };
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
