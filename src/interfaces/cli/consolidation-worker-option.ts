import type { Engram } from '../../engine.js';
import { EngramError } from '../../errors.js';
import { ConsolidationWorker, DEFAULT_IDLE_MS, DEFAULT_POLL_MS } from '../../consolidate/consolidation-worker.js';
import { logEscalationsTo, logLlmCallsTo } from '../../consolidate/telemetry.js';
import { defaultColdAfterMs, parseAge } from '../../memory/artifact-lifecycle.js';
import type { GlobalOptions } from './cli-context.js';
import { openLlm } from './llm-option.js';
import type { Io } from './output.js';

/** `90s`, `15m`, `2h` as milliseconds; anything else is INVALID_INPUT naming `field`. */
export function parseDuration(value: string, field: string): number {
  const m = /^(\d+)(s|m|h)$/.exec(value);
  if (!m || Number(m[1]) < 1) throw new EngramError('INVALID_INPUT', `--${field}: "${value}" is not a duration such as 90s, 15m or 2h`, { field });
  return Number(m[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as 's' | 'm' | 'h'];
}

/**
 * The consolidation worker `engram serve` runs: sessions idle for `--consolidate-idle` (default 15 minutes) are
 * summarized with the model of `--llm` (none: the deterministic level); failures go to stderr.
 */
export async function startConsolidationWorker(
  mem: Engram,
  args: GlobalOptions & { consolidateIdle?: string; artifactsColdAfter?: string },
  io: Io,
): Promise<{ worker: ConsolidationWorker; note: string }> {
  const idleMs = args.consolidateIdle !== undefined ? parseDuration(args.consolidateIdle, 'consolidate-idle') : DEFAULT_IDLE_MS;
  const llm = await openLlm(args, { onCall: logLlmCallsTo(mem.bus) });
  const consolidator = mem.consolidator({ llm, telemetry: logEscalationsTo(mem.bus, 'summary') });
  // The artifact lifecycle runs in the same worker, hourly: --artifacts-cold-after, else $ENGRAM_ARTIFACT_COLD_AFTER, else 30d.
  const coldAfterMs = args.artifactsColdAfter !== undefined ? parseAge(args.artifactsColdAfter, 'artifacts-cold-after') : defaultColdAfterMs();
  const worker = new ConsolidationWorker(mem.store, consolidator, {
    idleMs,
    artifactLifecycle: { olderThanMs: coldAfterMs },
    pollMs: Math.min(DEFAULT_POLL_MS, idleMs),
    onError: (err, sessionId) => io.err(`engram serve: consolidation${sessionId ? ` of session ${sessionId}` : ''} failed: ${err instanceof Error ? err.message : String(err)}`),
  });
  worker.start();
  return {
    worker,
    note: `consolidation: sessions idle ${Math.round(idleMs / 1000)} s, ${llm ? llm.name : 'deterministic'}; artifacts cold after ${+(coldAfterMs / 86_400_000).toFixed(2)} d`,
  };
}
