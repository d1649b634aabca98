import { expect, it } from 'vitest';
import type { EventRecord } from '../model/event.js';
import { segmentEpisodes } from './episodes.js';

let turn = 0;
const ev = (kind: string, content: string, minute: number, taskId?: string): EventRecord =>
  ({ id: `evt_${String(++turn).padStart(26, '0')}`, sessionId: 's', turn, kind, content, ts: new Date(Date.UTC(2026, 2, 2, 9, minute)).toISOString(), tags: [], ...(taskId ? { taskId } : {}) }) as unknown as EventRecord;

const talk = (topic: string, n: number, from: number, taskId?: string): EventRecord[] =>
  Array.from({ length: n }, (_, i) => [
    ev('user', `Please change the ${topic} configuration, ${topic} settings and ${topic} tests, part ${i}.`, from + i, taskId),
    ev('assistant', `Updated the ${topic} configuration and ${topic} tests for part ${i}.`, from + i, taskId),
  ]).flat();

it('splits at a pause, at a task change and at a topic shift; every event in one episode, in order', () => {
  const events = [...talk('billing', 3, 0), ...talk('billing', 2, 60, 't1'), ...talk('search', 2, 62, 't2'), ...talk('search', 1, 63, 't3')];
  const eps = segmentEpisodes(events, { topicMaxOverlap: 0 });
  expect(eps.map((e) => e.length)).toEqual([6, 4, 4, 2]);
  expect(eps.flat()).toEqual(events);

  // Topic shift: a long run on one topic, then another that shares few words with it.
  const other = Array.from({ length: 20 }, (_, i) => [
    ev('user', `Why does the kubernetes deployment crashloop after rollout ${i}?`, 21 + i),
    ev('assistant', `The pod readiness probe hits /healthz before migrations finish; raised initialDelaySeconds for rollout ${i}.`, 21 + i),
  ]).flat();
  const long = [...talk('invoice', 20, 0), ...other];
  expect(segmentEpisodes(long).map((e) => e.length)).toEqual([40, 40]);
  // Not before the episode is long enough, and not when turned off.
  expect(segmentEpisodes(long, { topicMinEvents: 100 }).map((e) => e.length)).toEqual([80]);
  expect(segmentEpisodes(long, { topicMaxOverlap: 0 }).map((e) => e.length)).toEqual([80]);
  // The same topic keeps going.
  expect(segmentEpisodes(talk('invoice', 40, 0)).map((e) => e.length)).toEqual([80]);
});
