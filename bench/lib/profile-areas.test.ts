import { describe, expect, it } from 'vitest';
import type { CpuProfile } from './cpu-profile.js';
import { profileAreas } from './profile-areas.js';

const SRC = 'file:///repo/src/memory/recall';

/** A profile of one call tree (root first) per sample, 1 ms each. */
function profile(stacks: Array<Array<[string, string]>>): CpuProfile {
  const nodes: CpuProfile['nodes'] = [{ id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: 0 } }];
  const samples: number[] = [];
  for (const stack of stacks) {
    let parent = nodes[0]! as CpuProfile['nodes'][number] & { children?: number[] };
    for (const [fn, url] of stack) {
      const id = nodes.length + 1;
      nodes.push({ id, callFrame: { functionName: fn, url, lineNumber: 0 } });
      (parent.children ??= []).push(id);
      parent = nodes[nodes.length - 1]!;
    }
    samples.push(nodes.length);
  }
  return { nodes, samples, timeDeltas: samples.map(() => 1000), startTime: 0, endTime: samples.length * 1000 };
}

describe('profileAreas', () => {
  it("charges recall's samples to the pipeline stage the pipeline called, naming the store's search and the log apart", () => {
    const pipeline: [string, string] = ['runRecallPipeline', `${SRC}/pipeline.ts`];
    const areas = profileAreas(
      profile([
        [pipeline, ['retrieveCandidates', `${SRC}/candidates.ts`], ['searchText', 'file:///repo/src/store/sqlite/sqlite-backend.ts']],
        [pipeline, ['retrieveCandidates', `${SRC}/candidates.ts`], ['withoutDerived', `${SRC}/candidates.ts`]],
        // A helper of candidates.ts called by the pool stage counts for the pool.
        [pipeline, ['poolCandidates', `${SRC}/pool.ts`], ['withoutDerived', `${SRC}/candidates.ts`]],
        [pipeline, ['orderByNovelty', `${SRC}/order.ts`], ['mmrSelect', 'file:///repo/src/memory/mmr.ts']],
        [['recallExcluding', 'file:///repo/src/memory/recall.ts'], ['logRecall', `${SRC}/log.ts`]],
        [['parseRequest', 'file:///repo/node_modules/hono/dist/index.js']],
      ]),
    );
    const ms = Object.fromEntries(areas.recall.map((a) => [a.area, a.ms]));
    expect(ms).toEqual({
      'candidates: full-text search (FTS5 matching, bm25, visibility)': 1,
      candidates: 1,
      pool: 1,
      order: 1,
      'log: recall log write': 1,
    });
    expect(areas.areas.find((a) => a.area.startsWith('recall'))!.ms).toBe(5);
  });
});
