import { describe, expect, it } from 'vitest';
import { createGptTokenizer } from '../../providers/gpt-tokenizer.js';
import { createExtractiveSummarizer } from './summarizer.js';
import { createNeedleTrace } from './trace-generator.js';
import { runTrace } from './trace-runner.js';

const tokenizer = createGptTokenizer();

describe('needle trace with consolidation on', () => {
  it('consolidates before probing, reads summaries with the pulls, and loses no needle found without it', async () => {
    const trace = createNeedleTrace({ seed: 1, index: 0, needlesPerType: 1 });
    const common = {
      seed: 1,
      trace: 0,
      sessionId: trace.sessionId,
      windowTokens: 32_000,
      historyBudgetTokens: 24_960,
      cycles: [1],
      conditions: ['engram-fts' as const],
      embedder: null,
      summarizer: createExtractiveSummarizer(tokenizer),
      tokenizer,
    };
    const plain = await runTrace(trace, common);
    const consolidated = await runTrace(trace, { ...common, consolidate: true });
    expect(plain.stats.consolidation).toBeUndefined();
    const c = consolidated.stats.consolidation!;
    expect(c.summaries).toBeGreaterThan(0);
    expect(c.pulls).toBe(consolidated.records.length);
    expect(c.pullsWithSummaries).toBeGreaterThan(0);
    const exact = (rs: typeof plain.records): string[] => rs.filter((r) => r.hops[1].isExact).map((r) => r.probeId);
    expect(consolidated.records.map((r) => r.probeId)).toEqual(plain.records.map((r) => r.probeId));
    for (const id of exact(plain.records)) expect(exact(consolidated.records)).toContain(id);
  }, 120_000);
});
