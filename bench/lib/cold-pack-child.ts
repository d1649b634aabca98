/**
 * The cold case of the context benchmark in a process of its own, so its time and peak RSS are not mixed with
 * the ingest that built the store: opens the store, warms the tokenizer, then times the session's first
 * `pack()` (which loads and token-counts the whole uncompacted tail, then compacts it). Prints JSON.
 *
 *   node [--cpu-prof --cpu-prof-dir DIR] --import tsx bench/lib/cold-pack-child.ts '<store location JSON>' <session> <windowTokens>
 */
import { performance } from 'node:perf_hooks';
import { openEngram } from '../../src/engine.js';

export interface ColdPackOutput {
  packMs: number;
  /** RSS after opening the store and loading the tokenizer, before the pack. */
  rssBeforeMb: number;
  /** The process's peak RSS (getrusage maxrss), which includes the pack. */
  peakRssMb: number;
  heapUsedAfterMb: number;
  compaction: { evicted: number; tokensBefore: number; tokensAfter: number; markerCount: number; isLowWaterReached: boolean } | null;
  packTokens: number;
}

const [locationJson, sessionId, windowArg] = process.argv.slice(2);
const mem = await openEngram(JSON.parse(locationJson!));
mem.tokenizer.count('load the tokenizer tables before timing');
await mem.getSession(sessionId!);
const mb = (bytes: number): number => Math.round((bytes / 1024 / 1024) * 10) / 10;
const rssBeforeMb = mb(process.memoryUsage().rss);
const start = performance.now();
const result = await mem.context.pack(sessionId!, { windowTokens: Number(windowArg), query: 'what is left to do?' });
const packMs = performance.now() - start;
const c = result.compaction;
const output: ColdPackOutput = {
  packMs,
  rssBeforeMb,
  peakRssMb: mb(process.resourceUsage().maxRSS * 1024),
  heapUsedAfterMb: mb(process.memoryUsage().heapUsed),
  compaction: c ? { evicted: c.evicted.length, tokensBefore: c.tokensBefore, tokensAfter: c.tokensAfter, markerCount: c.markerCount, isLowWaterReached: c.isLowWaterReached } : null,
  packTokens: result.pack.totalTokens,
};
await mem.close();
process.stdout.write(`${JSON.stringify(output)}\n`);
