import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { BACKEND_HARNESSES } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

for (const [name, createHarness] of BACKEND_HARNESSES) {
  describe(`karma: ${name}`, () => {
    let harness: BackendHarness;
    let mem: Engram;
    beforeEach(async () => {
      harness = await createHarness();
      mem = await openEngram({ backend: harness.backend });
      await mem.append('s', [
        { kind: 'user', content: 'the prod DB is on 5432' },
        { kind: 'assistant', content: 'noted' },
      ]);
      await mem.append('other', { kind: 'user', content: 'hello' });
    });
    afterEach(async () => {
      await mem?.close();
      await harness?.cleanup();
    });

    it('promotes verified facts into the karma block in verification order, per scope', async () => {
      const [source] = await mem.listEvents({ sessionId: 's' as never, limit: 1 });
      const global = await mem.karma.add('Deploys happen only on weekdays.');
      const scoped = await mem.karma.add('Production PostgreSQL listens on 5432.', { sessionId: 's', sourceEventId: source!.id, verifiedBy: 'ana' });
      expect((await mem.karma.list({ sessionId: 's' })).map((k) => k.id)).toEqual([global.id, scoped.id]);
      expect((await mem.karma.list({ sessionId: 'other' })).map((k) => k.id)).toEqual([global.id]);
      const { pack } = await mem.context.pack('s', { windowTokens: 4000 });
      const karma = pack.blocks.find((b) => b.kind === 'karma')!.text;
      expect(karma.indexOf('weekdays')).toBeLessThan(karma.indexOf('5432'));
      const otherPack = await mem.context.pack('other', { windowTokens: 4000 });
      expect(otherPack.pack.blocks.find((b) => b.kind === 'karma')!.text).not.toContain('5432');
    });

    it('records removal without deleting, and refuses a second removal', async () => {
      const k = await mem.karma.add('Temporary fact.');
      await mem.karma.remove(k.id, 'bo');
      expect(await mem.karma.list({ sessionId: 's' })).toEqual([]);
      const all = await mem.karma.list({ sessionId: 's', includeRemoved: true });
      expect(all[0]).toMatchObject({ id: k.id, text: 'Temporary fact.', removedBy: 'bo' });
      await expect(mem.karma.remove(k.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('rejects empty text, unknown sessions and unknown source events', async () => {
      await expect(mem.karma.add('   ')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'text' } });
      await expect(mem.karma.add('x', { sessionId: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(mem.karma.add('x', { sourceEventId: 'evt_01jzzzzzzzzzzzzzzzzzzzzzzz' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });
  });
}
