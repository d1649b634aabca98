import { describe, expect, it } from 'vitest';
import { HTTP_FLOOR_FRAMEWORKS, measureHttpFloor, RECALL_ANSWER_BYTES } from './http-floor.js';

describe('the HTTP floor of http-load', () => {
  it('serves the runs\' requests from a server doing only HTTP and JSON, on each framework, and reads its CPU per request', async () => {
    const floor = await measureHttpFloor({ agents: 4, batch: 4, seconds: 2 });
    expect(floor).toMatchObject({ agents: 4, batch: 4, seconds: 2, answerBytes: RECALL_ANSWER_BYTES });
    expect(floor.frameworks.map((f) => f.framework)).toEqual([...HTTP_FLOOR_FRAMEWORKS]);
    for (const f of floor.frameworks) {
      expect(f.appends).toBeGreaterThan(10);
      expect(f.recalls).toBeGreaterThan(10);
      // CPU was read from /proc over the window (10 ms ticks; two seconds of requests use several): some was used.
      expect(f.appendMs).toBeGreaterThan(0);
      expect(f.recallMs).toBeGreaterThan(0);
    }
  }, 60_000);
});
