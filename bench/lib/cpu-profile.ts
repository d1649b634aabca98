/**
 * Reads a V8 CPU profile (`node --cpu-prof` writes one `.cpuprofile` per process) into the functions and files
 * that took the most self time, for benchmark reports. Pure.
 */

/** The parts of the `.cpuprofile` JSON this reads. */
export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }>;
  /** Node id per sample. */
  samples?: number[];
  /** Microseconds since the previous sample, per sample. */
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileEntry {
  /** `function (file:line)` or a file path. */
  name: string;
  selfMs: number;
  /** Share of the profile's total sampled time, 0..1. */
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  functions: ProfileEntry[];
  files: ProfileEntry[];
}

/**
 * Self time per function (name, file and line) and per file, largest first, `top` of each. Time comes from
 * the samples' time deltas; a profile without samples falls back to hit counts spread over its duration.
 * V8's pseudo-frames (`(idle)`, `(program)`, `(garbage collector)`) are kept: GC time is a cost like any other.
 */
export function summarizeCpuProfile(profile: CpuProfile, top = 12): ProfileSummary {
  const selfUs = new Map<number, number>();
  if (profile.samples && profile.timeDeltas && profile.samples.length === profile.timeDeltas.length) {
    // timeDeltas[i] is the time before sample i; charge it to that sample's node.
    profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, profile.timeDeltas![i]!)));
  } else {
    const hits = profile.nodes.reduce((sum, n) => sum + (n.hitCount ?? 0), 0);
    const perHit = hits === 0 ? 0 : (profile.endTime - profile.startTime) / hits;
    for (const n of profile.nodes) selfUs.set(n.id, (n.hitCount ?? 0) * perHit);
  }
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let totalUs = 0;
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    totalUs += us;
    const file = shortUrl(node.callFrame.url);
    const fn = node.callFrame.functionName || '(anonymous)';
    const key = file ? `${fn} (${file}:${node.callFrame.lineNumber + 1})` : fn;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    const fileKey = file || fn;
    byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + us);
  }
  const rank = (m: Map<string, number>): ProfileEntry[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, top)
      .map(([name, us]) => ({ name, selfMs: us / 1000, share: totalUs === 0 ? 0 : us / totalUs }));
  return { totalMs: totalUs / 1000, functions: rank(byFunction), files: rank(byFile) };
}

/** `file:///work/main/src/x.ts` -> `src/x.ts`; `node_modules/pkg/...` kept from `node_modules`; node internals as `node:...`. */
export function shortUrl(url: string): string {
  if (url === '') return '';
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('node_modules/');
  if (nm >= 0) return path.slice(nm);
  for (const root of ['/src/', '/bench/']) {
    const at = path.lastIndexOf(root);
    if (at >= 0) return path.slice(at + 1);
  }
  return path;
}

/**
 * The part of a profile sampled between `fromUs` and `toUs` (microseconds on the profile's own clock: V8 stamps
 * samples with CLOCK_MONOTONIC, the clock of `process.hrtime` in any process on the same machine), so a report
 * can charge a benchmark's measured window alone, without start-up or the checks after it. Pure.
 */
export function profileWindow(profile: CpuProfile, fromUs: number, toUs: number): CpuProfile {
  if (!profile.samples || !profile.timeDeltas) return profile;
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas![i]!;
    if (at >= fromUs && at <= toUs) {
      samples.push(id);
      timeDeltas.push(profile.timeDeltas![i]!);
    }
  });
  return { ...profile, samples, timeDeltas, startTime: Math.max(profile.startTime, fromUs), endTime: Math.min(profile.endTime, toUs) };
}
