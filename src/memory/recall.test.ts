import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../engine.js';
import { isEngramError } from '../errors.js';
import type { EventInput } from '../model/event.js';
import type { TaskState } from '../model/task-state.js';
import { EMPTY_TASK_STATE } from '../model/task-state.js';
import { Prng } from '../util/prng.js';
import type { RecallOptions } from './recall.js';
import { MODIFIER_FACTORS } from './task-modifier.js';

// Task-conditioned recall on constructed traces, over a real SQLite store. Each trace is built so that plain
// relevance ranks the wrong event first; the test shows that with the factor off, then that the factor flips it.

let dir: string;
let mem: Engram;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-recall-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
});
afterEach(async () => {
  await mem?.close();
  rmSync(dir, { recursive: true, force: true });
});

const card = (over: Partial<TaskState> = {}): TaskState => ({ ...EMPTY_TASK_STATE, phase: 'other', ...over });
const add = async (e: EventInput): Promise<string> => (await mem.append('s1', { ts: 1_000_000, ...e }))[0]!.record.id;
const order = async (query: string, options: RecallOptions = {}): Promise<string[]> => (await mem.recall(query, options)).hits.map((h) => h.eventId);

describe('task-conditioned recall', () => {
  it('ranks the live objective v3 above the v2 it superseded, and marks v2 as superseded', async () => {
    const v2 = await add({ kind: 'decision', content: 'Objective v2: export invoices. The objective is to export invoices as CSV; export invoices nightly.' });
    const v3 = await add({ kind: 'decision', content: 'Objective v3: export invoices as signed PDF files for the auditors.', supersedes: v2 as never });
    const state = card();
    expect(await order('objective export invoices', { taskState: state, disableFactors: ['supersession'] })).toEqual([v2, v3]);
    const r = await mem.recall('objective export invoices', { taskState: state });
    expect(r.hits.map((h) => h.eventId)).toEqual([v3, v2]);
    expect(r.hits[1]).toMatchObject({ supersededBy: v3, factors: { supersession: 0.1 } });
    expect(r.text).toContain(`superseded by ${v3}`);
    // A post-mortem asks for history: the old version is not discounted then.
    expect(await order('objective export invoices', { taskState: card({ requestHistorical: true }) })).toEqual([v2, v3]);
  });

  it('ranks an event made under the current premise above a better match made under an old one', async () => {
    const mysql = await add({ kind: 'note', content: 'Pool size: the connection pool size is 20; keep the pool size small for MySQL.', premiseRef: 'db:mysql' });
    const pg = await add({ kind: 'note', content: 'Connection pool size 50 on the new cluster.', premiseRef: 'db:postgres' });
    const state = card({ premises: ['db:postgres'] });
    expect(await order('pool size', { taskState: state, disableFactors: ['premise'] })).toEqual([mysql, pg]);
    const r = await mem.recall('pool size', { taskState: state });
    expect(r.hits.map((h) => h.eventId)).toEqual([pg, mysql]);
    expect(r.hits[1]!.factors.premise).toBe(0.2);
  });

  it('lifts a constraint above chatter that matches the query better', async () => {
    const chatter = await add({ kind: 'assistant', content: 'Upload limit, upload limit: we talked about the upload limit a lot; the upload limit is a topic.' });
    const rule = await add({ kind: 'note', content: 'Never raise the upload limit above 10 MB without a legal review.', tags: ['constraint'] });
    const state = card();
    expect(await order('upload limit', { taskState: state, disableFactors: ['constraintFloor'] })).toEqual([chatter, rule]);
    // The paper's floor (3.0); the default is lower since the ablation showed it overturning exact answers.
    const r = await mem.recall('upload limit', { taskState: state, modifierOptions: { constraintFloor: 3 } });
    expect(r.hits.map((h) => h.eventId)).toEqual([rule, chatter]);
    expect(r.hits[0]).toMatchObject({ modifier: 3, factors: { constraintFloor: true } });
  });

  it('flips the ranking of tool output and decisions between debugging and planning', async () => {
    const output = await add({ kind: 'tool_result', content: 'Error: timeout while calling the payments service (payments-api:8443) after 30 s', toolName: 'Bash' });
    const decision = await add({ kind: 'decision', content: 'Decision: the payments service timeout stays at 30 s; retries happen in the queue.' });
    expect(await order('payments timeout', { taskState: card({ phase: 'debugging' }) })).toEqual([output, decision]);
    expect(await order('payments timeout', { taskState: card({ phase: 'planning' }) })).toEqual([decision, output]);
  });

  it("discounts another task's event below a weaker match of the current task", async () => {
    const auth = await add({ kind: 'note', content: 'Token refresh: the refresh token rotates on every token refresh call.', taskId: 'auth' });
    const billing = await add({ kind: 'note', content: 'The billing job needs a token refresh before it runs.', taskId: 'billing' });
    const state = card({ taskId: 'billing' });
    expect(await order('token refresh', { taskState: state, disableFactors: ['taskRelevance'] })).toEqual([auth, billing]);
    const r = await mem.recall('token refresh', { taskState: state });
    expect(r.hits.map((h) => h.eventId)).toEqual([billing, auth]);
    expect(r.hits[1]!.factors.taskRelevance).toBe(0.3);
  });

  it('raises a tagged mistake when the task ends with a self-assessment', async () => {
    const plain = await add({ kind: 'note', content: 'Migration notes: the migration ran; migration took 4 minutes; migration ok.' });
    const mistake = await add({ kind: 'note', content: 'We ran the migration without a backup first.', tags: ['mistake'] });
    expect(await order('migration', { taskState: card() })).toEqual([plain, mistake]);
    expect(await order('migration', { taskState: card({ requiresSelfAssessment: true }) })).toEqual([mistake, plain]);
  });

  it('ranks exactly as plain recall when every factor is switched off', async () => {
    const v1 = await add({ kind: 'decision', content: 'Cache layer: use Redis for the session cache.', taskId: 'cache', premiseRef: 'p1' });
    await add({ kind: 'decision', content: 'Cache layer: use Memcached for the session cache instead.', supersedes: v1 as never, taskId: 'other' });
    await add({ kind: 'tool_result', content: 'redis-cli ping: PONG; session cache reachable', tags: ['constraint'] });
    await add({ kind: 'note', content: 'The session cache layer was a mistake to build first.', tags: ['mistake'] });
    const state = card({ taskId: 'cache', phase: 'planning', premises: ['p2'], requiresSelfAssessment: true });
    const plain = await mem.recall('session cache layer');
    const off = await mem.recall('session cache layer', { taskState: state, disableFactors: [...MODIFIER_FACTORS] });
    const on = await mem.recall('session cache layer', { taskState: state });
    const view = (hits: typeof plain.hits) => hits.map((h) => [h.eventId, h.score]);
    expect(view(off.hits)).toEqual(view(plain.hits));
    expect(off.hits.every((h) => h.modifier === 1)).toBe(true);
    expect(view(on.hits)).not.toEqual(view(plain.hits));
  });
});

describe('key events', () => {
  it('are among the hits even when the query does not match them', async () => {
    const key = await add({ kind: 'note', content: 'We agreed to keep the legacy v1 API alive until Q3.' });
    const match = await add({ kind: 'tool_result', content: 'Error: connect ECONNREFUSED 127.0.0.1:5432' });
    expect(await order('ECONNREFUSED')).toEqual([match]);
    const r = await mem.recall('ECONNREFUSED', { taskState: card({ keyEvents: [key as never] }) });
    expect(r.hits.map((h) => h.eventId)).toEqual([match, key]);
    expect(r.hits[1]).toMatchObject({ isKeyEvent: true, relevance: 0 });
    expect(r.hits[0]!.isKeyEvent).toBe(false);
    expect(r.candidates).toBe(2);
  });

  it('are returned when nothing matches the query, and obey the filters', async () => {
    const key = await add({ kind: 'note', content: 'The staging database is reset every Sunday.' });
    const state = card({ keyEvents: [key as never] });
    expect(await order('kubernetes helm chart', { taskState: state })).toEqual([key]);
    // Pinned, not matched: the result says no event matches, and the key event follows.
    const r = await mem.recall('kubernetes helm chart', { taskState: state });
    expect(r.match).toBe('none');
    expect(r.text).toMatch(/^No event in memory matches "kubernetes helm chart"\. The task card's key events follow/);
    expect(await order('kubernetes helm chart', { taskState: state, kinds: ['decision'] })).toEqual([]);
    expect(await order('kubernetes helm chart', { taskState: state, sessionIds: ['other'] })).toEqual([]);
  });
});

describe('speakers', () => {
  it('prefers the events of a speaker the query names, softly, from meta.speaker or meta.name', async () => {
    // Separate sessions, so that neither is found through the other's indexed context.
    const caroline = (await mem.append('c', [{ kind: 'user', content: 'I painted a sunrise over the lake, painted it twice', meta: { speaker: 'Caroline' } }]))[0]!.record.id;
    const melanie = (await mem.append('m', [{ kind: 'user', content: 'I painted a sunrise at dawn', meta: { name: 'Melanie' } }]))[0]!.record.id;
    // Without the preference, the turn that says "painted" twice ranks first.
    expect(await order('what did Melanie paint', { speakerBoost: 0, retriever: 'fts' })).toEqual([caroline, melanie]);
    expect(await order("what did Melanie's kids paint", { retriever: 'fts' })).toEqual([melanie, caroline]);
    // A query naming nobody ranks as before; a named speaker never filters the others out.
    expect(await order('who painted a sunrise', { retriever: 'fts' })).toEqual([caroline, melanie]);
    expect(await order('what did Caroline paint', { retriever: 'fts' })).toEqual([caroline, melanie]);
    await expect(mem.recall('paint', { speakerBoost: -1 })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'speakerBoost' } });
  });
});

describe('second hop and dates (issue #13)', () => {
  it('finds a member of the category a multi-hop question names through the words of its first hits', async () => {
    // Separate sessions: nothing is found through another turn's indexed context.
    const pottery = (await mem.append('a', [{ kind: 'user', content: 'Melanie: My favourite activities lately: pottery class and camping with the kids.' }]))[0]!.record.id;
    const camping = (await mem.append('b', [{ kind: 'user', content: 'We went camping at the beach again with the kids, it was lovely.' }]))[0]!.record.id;
    await mem.append('c', [{ kind: 'user', content: 'Caroline: The adoption agency called about the interview.' }]);
    // "camping" and "kids" are not in the question: only the hop finds the second turn.
    expect(await order('What activities does Melanie partake in?', { secondHopWeight: 0, speakerBoost: 0 })).toEqual([pottery]);
    const hop = await order('What activities does Melanie partake in?', { speakerBoost: 0 });
    expect(hop).toEqual([pottery, camping]);
    // A query that does not look multi-hop gets no second hop unless asked for.
    expect(await order('Melanie pottery activities')).toEqual([pottery]);
    expect(await order('Melanie pottery activities', { secondHopTrigger: 'always' })).toEqual([pottery, camping]);
  });

  it('prefers what was said on the date a question names, softly', async () => {
    const may = (await mem.append('a', [{ kind: 'user', ts: Date.UTC(2022, 4, 25, 12), content: 'Nate baked a cake for Joanna after a long day at the studio with the writers group and the neighbours' }]))[0]!.record.id;
    const june = (await mem.append('b', [{ kind: 'user', ts: Date.UTC(2022, 5, 3, 12), content: 'Nate baked a cake, a lemon cake' }]))[0]!.record.id;
    // Without the boost the short turn saying "cake" twice wins; naming the day of the other turn flips it.
    expect(await order('What cake did Nate bake on 25 May, 2022?', { dateBoost: 0, recencyWeight: 0 })).toEqual([june, may]);
    expect(await order('What cake did Nate bake on 25 May, 2022?', { recencyWeight: 0 })).toEqual([may, june]);
    expect(await order('What cake did Nate bake in June 2022?', { recencyWeight: 0 })).toEqual([june, may]);
    // A date no candidate was said on changes nothing.
    expect(await order('What cake did Nate bake in March 2021?', { recencyWeight: 0 })).toEqual([june, may]);
    await expect(mem.recall('cake', { dateBoost: -1 })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'dateBoost' } });
    await expect(mem.recall('cake', { secondHopWeight: 2 })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'secondHopWeight' } });
    await expect(mem.recall('cake', { secondHopTrigger: 'never' as never })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'secondHopTrigger' } });
    // A JavaScript caller still passing an option of a retired technique is told so, not silently ignored.
    for (const retired of ['fusion', 'expansionWeight', 'relativeDates']) {
      await expect(mem.recall('cake', { [retired]: 1 } as never)).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: retired }, message: expect.stringContaining('retired') });
    }
  });
});

describe('redundancy and quotas', () => {
  it('keeps ten identical tool outputs from filling the pack', async () => {
    const log = 'npm ERR! code ELIFECYCLE\nnpm ERR! errno 1\nnpm ERR! build failed in step postinstall';
    for (let i = 0; i < 10; i++) await add({ kind: 'tool_result', content: log, ts: 1_000_000 + i });
    const decision = await add({ kind: 'decision', content: 'ELIFECYCLE in postinstall: pin node 20 until the build script is fixed.' });
    const note = await add({ kind: 'note', content: 'Workaround for ELIFECYCLE: clear the npm cache, then build again.' });
    const r = await mem.recall('ELIFECYCLE build', { k: 5 });
    expect(r.hits.filter((h) => h.kind === 'tool_result')).toHaveLength(1);
    expect(r.hits.map((h) => h.eventId)).toEqual(expect.arrayContaining([decision, note]));
    const plain = await mem.recall('ELIFECYCLE build', { k: 5, useMmr: false });
    expect(plain.hits.filter((h) => h.kind === 'tool_result').length).toBeGreaterThan(1);
  });

  it('caps tool results at half the budget while a decision competes for the room', async () => {
    const lines = (i: number) => Array.from({ length: 12 }, (_, j) => `deploy step ${i}.${j}: rollout of service-${i}-${j} finished`).join('\n');
    // As large as a tool result's excerpt, so that it cannot slip into the room the tool results leave over.
    // Stored first, so no tool result is in its indexed context (turn-context.ts).
    const why = 'Fridays and Mondays had the most incidents, the on-call rotation changes on Wednesdays, and the release train ends on Thursdays. ';
    const decision = await add({ kind: 'decision', content: `We deploy on Tuesdays only. ${why.repeat(4)}`, ts: 1 });
    for (let i = 0; i < 6; i++) await add({ kind: 'tool_result', content: lines(i), toolName: 'Bash' });
    const withQuota = await mem.recall('deploy rollout service finished', { budgetTokens: 700 });
    expect(withQuota.hits.map((h) => h.eventId)).toContain(decision);
    const noQuota = await mem.recall('deploy rollout service finished', { budgetTokens: 700, typeQuotas: {} });
    expect(noQuota.hits.map((h) => h.eventId)).not.toContain(decision);
    expect(noQuota.usedTokens).toBeLessThanOrEqual(700);
    expect(withQuota.usedTokens).toBeLessThanOrEqual(700);
  });
});

describe('recall log', () => {
  it('records every call with its query, task, session and results, and none when switched off', async () => {
    const id = await add({ kind: 'note', content: 'The deploy key rotates monthly.', taskId: 'ops' });
    const first = await mem.recall('deploy key', { taskState: card({ taskId: 'ops' }), askingSessionId: 's1' });
    const second = await mem.recall('nothing matches this');
    await mem.recall('deploy key', { logRecall: false });
    const log = await mem.store.listRecallLog();
    expect(log.map((r) => r.query)).toEqual(['nothing matches this', 'deploy key']);
    expect(log[1]).toMatchObject({ id: first.logId, sessionId: 's1', taskId: 'ops', results: [{ eventId: id, modifier: 1 }] });
    expect(log[1]!.results[0]!.score).toBe(first.hits[0]!.score);
    expect(log[1]!.options).toMatchObject({ askingSessionId: 's1', taskState: { taskId: 'ops' } });
    expect(log[0]).toMatchObject({ id: second.logId, results: [] });
    expect(log[0]!.durationMs).toBeGreaterThanOrEqual(0);
  });
});

describe('options', () => {
  it('rejects a malformed task state, an unknown factor, a lambda outside 0..1 and a bad quota, naming the field', async () => {
    const cases: Array<[RecallOptions, string]> = [
      [{ taskState: { ...card(), phase: 'napping' } as never }, 'taskState.phase'],
      [{ disableFactors: ['mood' as never] }, 'disableFactors'],
      [{ lambda: 2 }, 'lambda'],
      [{ typeQuotas: { tool_result: 3 } }, 'typeQuotas.tool_result'],
      [{ modifierOptions: { crossTaskFactor: -1 } }, 'modifierOptions.crossTaskFactor'],
    ];
    for (const [options, field] of cases) {
      const err = await mem.recall('anything', options).catch((e: unknown) => e);
      expect(isEngramError(err, 'INVALID_INPUT'), field).toBe(true);
      expect((err as { data: { field: string } }).data.field).toBe(field);
    }
    expect(await mem.store.listRecallLog()).toEqual([]);
  });

  it('removes an event whose modifier is tuned to 0', async () => {
    await add({ kind: 'note', content: 'alpha release notes', taskId: 'a' });
    const b = await add({ kind: 'note', content: 'alpha checklist', taskId: 'b' });
    expect(await order('alpha', { taskState: card({ taskId: 'b' }), modifierOptions: { crossTaskFactor: 0 } })).toEqual([b]);
  });
});

describe('calibrated recall', () => {
  it('reports no match, with no hits, for a string stored nowhere', async () => {
    await add({ kind: 'note', content: 'The checkout service reads its database settings from config/database.yml.' });
    const r = await mem.recall('xyzzyqwerty');
    expect(r).toMatchObject({ match: 'none', hits: [], isTruncated: false });
    expect(r.text).toBe('No event in memory matches "xyzzyqwerty".');
  });

  it('says how many hits hold the query\'s terms, and flags only whole-token exact matches', async () => {
    const btn = await add({ kind: 'tool_result', toolName: 'Read', content: "const btn = document.getElementById('pauseBtn');" });
    const r = await mem.recall("getElementById('pause')");
    expect(r.hits.find((h) => h.eventId === btn)?.isExactMatch ?? false).toBe(false);
    expect(r.match).not.toBe('exact');
    const exact = await add({ kind: 'tool_result', toolName: 'Read', content: "const p = document.getElementById('pause');" });
    const again = await mem.recall("getElementById('pause')");
    expect(again.match).toBe('exact');
    expect(again.hits[0]).toMatchObject({ eventId: exact, isExactMatch: true, coverage: 1 });
    expect(again.text).toMatch(/: \d+ of \d+ candidate events; 1 holds the query's terms \(1 exactly\)/);
  });

  it('gives each hit the share of the query\'s terms its own text holds, not its context\'s', async () => {
    // The reply is indexed with the question's words as context (turn-context.ts) but holds none of them itself.
    const question = (await mem.append('c', [{ kind: 'user', content: 'Which port does the staging database listen on?' }]))[0]!.record.id;
    const reply = (await mem.append('c', [{ kind: 'assistant', content: 'Five four three three.' }]))[0]!.record.id;
    const r = await mem.recall('staging database port');
    expect(r.hits.find((h) => h.eventId === question)?.coverage).toBe(1);
    expect(r.hits.find((h) => h.eventId === reply)?.coverage).toBe(0);
    expect(r.match).toBe('related');
  });

  it('in a batch, says the matches of a query were returned for an earlier one instead of "no match"', async () => {
    const id = await add({ kind: 'tool_result', content: 'Error: connect ECONNREFUSED 10.0.4.12:5433' });
    const batch = await mem.recallBatch(['ECONNREFUSED', 'ECONNREFUSED 10.0.4.12:5433', 'xyzzyqwerty']);
    expect(batch.results.map((r) => [r.match, r.hits.map((h) => h.eventId)])).toEqual([['exact', [id]], ['exact', []], ['none', []]]);
    expect(batch.results[1]!.text).toBe('Every event matching "ECONNREFUSED 10.0.4.12:5433" was returned for an earlier query of this batch.');
    expect(batch.results[2]!.text).toBe('No event in memory matches "xyzzyqwerty".');
  });

  it('lists hits in the order of the scores it prints, over random candidate sets', async () => {
    // MMR picks which hits fill the pack and the quotas' second pass adds skipped ones late; the list is then by score.
    const rng = new Prng(29);
    const words = ['pool', 'size', 'retry', 'timeout', 'deploy', 'cache', 'port', 'queue', 'index', 'token'];
    const kinds = ['note', 'tool_result', 'assistant', 'decision'] as const;
    for (let round = 0; round < 12; round++) {
      const session = `p${round}`;
      const n = rng.int(3, 25);
      const events = Array.from({ length: n }, (_, i) => {
        const text = Array.from({ length: rng.int(3, 12) }, () => rng.pick(words)).join(' ');
        // Repeats make MMR drop and defer near-duplicates.
        return { kind: rng.pick(kinds), content: rng.chance(0.3) ? `${text} ${text}` : text, ts: 1_000_000 + i * rng.int(1, 1000) };
      });
      await mem.append(session, events);
      const query = Array.from({ length: rng.int(1, 3) }, () => rng.pick(words)).join(' ');
      const r = await mem.recall(query, { sessionIds: [session], k: rng.int(2, 8), budgetTokens: rng.int(200, 2000), lambda: rng.pick([0.3, 0.5, 0.7]) });
      const scores = r.hits.map((h) => h.score);
      expect(scores, query).toEqual([...scores].sort((a, b) => b - a));
      const printed = [...r.text.matchAll(/\| score (\d+\.\d+)/g)].map((m) => Number(m[1]));
      expect(printed).toEqual([...printed].sort((a, b) => b - a));
      expect(printed).toHaveLength(r.hits.length);
    }
  });
});
