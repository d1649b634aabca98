import { describe, expect, it } from 'vitest';
import { coreProjection, perCoreFigure, renderPerCore, type PerCoreRun } from './per-core.js';

const run = (backend: 'sqlite' | 'postgres', mode: 'mixed' | 'append' | 'recall', serverMs: number, counts: { append?: number; recall?: number; retry?: number } = {}, extra: Partial<PerCoreRun> = {}): PerCoreRun => ({
  config: { backend, mode, agents: 32, batch: 4 },
  ops: {
    append: { requests: counts.append ?? 0, perSec: 0 },
    recall: { requests: counts.recall ?? 0, perSec: 0 },
    retry: { requests: counts.retry ?? 0, perSec: 0 },
  },
  cpu: { serverMsPerRequest: serverMs, clientMsPerRequest: 0.2 },
  ...extra,
});

describe('perCoreFigure', () => {
  it('judges an append-only run on SQLite against 0.5 ms per append and gives the rate per core', () => {
    const f = perCoreFigure(run('sqlite', 'append', 0.89, { append: 1000 }));
    expect(f).toMatchObject({ operation: 'append (4 events)', ms: 0.89, targetMs: 0.5, perCore: 1124, targetPerCore: 2000, pass: false });
  });

  it('holds PostgreSQL recalls to 2.5 ms, not SQLite 2.0', () => {
    expect(perCoreFigure(run('postgres', 'recall', 2.4, { recall: 100 }))).toMatchObject({ targetMs: 2.5, targetPerCore: 400, pass: true });
    expect(perCoreFigure(run('sqlite', 'recall', 2.4, { recall: 100 }))).toMatchObject({ targetMs: 2, pass: false });
  });

  it('weights the mixed run target by its appends (retries included) and recalls', () => {
    // 90 appends + 10 retries at 0.5 ms and 100 recalls at 2.0 ms: 250 ms over 200 requests.
    const f = perCoreFigure(run('sqlite', 'mixed', 1.2, { append: 90, retry: 10, recall: 100 }));
    expect(f.targetMs).toBe(1.25);
    expect(f.pass).toBe(true);
  });

  it('predicts the mixed run from the single-mode runs of the same setup, not from another agent count', () => {
    const append = run('sqlite', 'append', 1, { append: 500 });
    const recall = run('sqlite', 'recall', 3, { recall: 500 });
    const other = { ...run('sqlite', 'recall', 100, { recall: 5 }), config: { backend: 'sqlite' as const, mode: 'recall' as const, agents: 8, batch: 4 } };
    const mixed = run('sqlite', 'mixed', 2.5, { append: 300, recall: 100 });
    expect(perCoreFigure(mixed, [other, append, recall, mixed]).expectedFromSingleMs).toBe(1.5);
  });

  it('does not judge a run whose batch is not the target turn of 4 events, nor one without CPU figures', () => {
    const batch8 = { ...run('sqlite', 'append', 0.1, { append: 10 }), config: { backend: 'sqlite' as const, mode: 'append' as const, agents: 32, batch: 8 } };
    expect(perCoreFigure(batch8).pass).toBeNull();
    const { cpu: _cpu, ...noCpu } = run('sqlite', 'append', 0.1, { append: 10 });
    expect(perCoreFigure(noCpu)).toMatchObject({ ms: null, perCore: null, pass: null });
  });
});

describe('coreProjection', () => {
  it('scales the per-core rate by cores, and takes the load generator and PostgreSQL out of shared cores', () => {
    expect(coreProjection(2, 0.5, 4)).toEqual({ cores: 4, serverOnly: 2000, sameMachine: 1600 });
    expect(coreProjection(1, 0.5, 8, 0.5)).toEqual({ cores: 8, serverOnly: 8000, sameMachine: 4000 });
  });
});

describe('renderPerCore', () => {
  it('renders a row per run with its verdict and the 4 and 8 core projections', () => {
    const md = renderPerCore([run('sqlite', 'append', 0.4, { append: 10 }, { storeEvents: 15_000 }), run('postgres', 'recall', 3, { recall: 10 }, { pg: { backendMsPerRequest: 1, queriesPerRequest: 4 } })]);
    expect(md).toContain('| sqlite | append | 1 | 1 | 32 | 15,000 | append (4 events) | 0.4 | <= 0.5 | 2,500 | >= 2,000 | pass |');
    expect(md).toContain('| postgres | recall | 1 | 1 | 32 | ? | recall | 3 | <= 2.5 | 333 | >= 400 | **FAIL** |');
    // 4 cores: 4000 / 3 alone, 4000 / (3 + 0.2 + 1) shared.
    expect(md).toContain('| 1,333 / 952 |');
    expect(md).toContain('| postgres | recall | 1 | 1 | 32 | 3 | - | 0.2 | 1 |');
  });
});

describe('renderPerCore with workers', () => {
  it('sets a run with more workers beside the one-process run of the same setup', () => {
    const one = run('sqlite', 'append', 1, { append: 10 });
    const two = { ...run('sqlite', 'append', 1.25, { append: 10 }), config: { backend: 'sqlite' as const, mode: 'append' as const, agents: 32, batch: 4, workers: 2 } };
    expect(renderPerCore([one, two])).toContain('| sqlite | append | 2 | 1 | 32 | 1.25 | 1.25x |');
  });
});
