import { thrown } from '../test-support.js';
import { describe, expect, it } from 'vitest';
import { createGptTokenizer } from '../../providers/gpt-tokenizer.js';
import { assemblePack } from './assembler.js';
import type { HistoryItem, PackInput } from './context-pack.js';
import { prefixReuse, prefixReuseTokens } from './blocks.js';
import {
  CODEBASE_MEDIA_TYPE,
  createArtifactInjectorRegistry,
  createFormatterRegistry,
  formatAnthropic,
  formatOpenAi,
  formatText,
} from './formatters.js';
import type { AnthropicContentBlock, AnthropicMessagesPayload, OpenAiMessage } from './formatters.js';

const tokenizer = createGptTokenizer();
const WINDOW = 128_000;


const TOPICS = ['the nginx config', 'the failing migration', 'cache headers', 'the CI runner', 'TLS renewal', 'the index rebuild'];

/** Events of turns 1..turns of a synthetic agent session; every third turn runs a tool. */
function sessionEvents(turns: number): HistoryItem[] {
  const items: HistoryItem[] = [];
  let seq = 0;
  const add = (item: Omit<HistoryItem, 'id' | 'turn' | 'ts'>): void => {
    seq++;
    items.push({ ...item, id: `evt_${String(seq).padStart(5, '0')}`, turn: seq, ts: 1_700_000_000_000 + seq * 1000 });
  };
  for (let t = 1; t <= turns; t++) {
    const topic = TOPICS[t % TOPICS.length] as string;
    add({ role: 'user', text: `Turn ${t}: please look at ${topic} and tell me what changed since the last deploy.` });
    if (t % 3 === 0) {
      add({ role: 'assistant', toolName: 'grep', toolCallId: `call_${t}`, text: JSON.stringify({ pattern: topic, path: 'src/' }) });
      add({ role: 'tool', toolName: 'grep', toolCallId: `call_${t}`, text: `src/server.ts:${t * 7}: // ${topic} handled here\nsrc/util.ts:${t}: retry()` });
    }
    add({ role: 'assistant', text: `For ${topic}: two lines changed in turn ${t}; the rest is as before. I will keep watching it.` });
  }
  return items;
}

function stableParts(): Omit<PackInput, 'history' | 'query'> {
  return {
    identity: 'You are Engram-assisted ops agent. Be precise, cite event ids, and prefer recall over guessing.',
    codex: [
      { id: 'doc:runbook', title: 'Runbook', text: Array.from({ length: 80 }, (_, i) => `Step ${i}: check ${TOPICS[i % TOPICS.length]} and record the outcome.`).join('\n') },
    ],
    karma: [
      { id: 'k1', text: 'The staging database is db-stg-2, not db-stg-1.', verifiedAt: '2025-01-02T00:00:00Z' },
      { id: 'k2', text: 'Deploys happen from the release branch only.', verifiedAt: '2025-01-03T00:00:00Z' },
    ],
    markers: ['[Events T1–T40 evicted. Key topics: initial setup, credentials rotation. Use recall(query) to retrieve details.]'],
    taskState: { goals: ['keep production green'], phase: 'monitoring', open_loops: ['flaky CI runner'] },
  };
}

function pack(history: HistoryItem[], query: string) {
  return assemblePack({ ...stableParts(), history, query }, { tokenizer, windowTokens: WINDOW });
}

/** Every content block of an Anthropic payload as `role:json` without cache markers, in prompt order. */
function anthropicStream(payload: AnthropicMessagesPayload): string[] {
  const strip = (b: AnthropicContentBlock): string => {
    const { cache_control: _ignored, ...rest } = b;
    return JSON.stringify(rest);
  };
  return [
    ...payload.system.map((b) => `system:${strip(b)}`),
    ...payload.messages.flatMap((m) => m.content.map((b) => `${m.role}:${strip(b)}`)),
  ];
}

function withoutCacheControl(payload: AnthropicMessagesPayload): string {
  return JSON.stringify(payload, (key, value: unknown) => (key === 'cache_control' ? undefined : value));
}

function assertValidOpenAi(messages: OpenAiMessage[]): void {
  messages.forEach((m, i) => {
    if (m.role === 'assistant' && m.tool_calls) {
      expect(m.tool_calls.length).toBeGreaterThan(0);
      expect(m.content).toBeNull();
      const ids = m.tool_calls.map((c) => c.id);
      const following = messages.slice(i + 1, i + 1 + ids.length);
      expect(following.map((f) => f.role)).toEqual(ids.map(() => 'tool'));
      expect(following.map((f) => (f.role === 'tool' ? f.tool_call_id : '')).sort()).toEqual([...ids].sort());
      for (const c of m.tool_calls) {
        expect(c.type).toBe('function');
        expect(c.function.name.length).toBeGreaterThan(0);
        expect(typeof c.function.arguments).toBe('string');
      }
    }
    if (m.role === 'tool') {
      let j = i - 1;
      while (messages[j]?.role === 'tool') j--;
      const owner = messages[j];
      expect(owner?.role).toBe('assistant');
      expect(owner?.role === 'assistant' && owner.tool_calls?.some((c) => c.id === m.tool_call_id)).toBe(true);
    }
  });
  expect(messages.at(-1)?.role).toBe('user');
}

function assertValidAnthropic(payload: AnthropicMessagesPayload): void {
  const { messages } = payload;
  expect(messages[0]?.role).toBe('user');
  messages.forEach((m, i) => {
    if (i > 0) expect(m.role).not.toBe(messages[i - 1]?.role);
    for (const b of m.content) if (b.type === 'text') expect(b.text.trim()).not.toBe('');
    const uses = m.content.filter((b) => b.type === 'tool_use');
    if (m.role === 'assistant' && uses.length > 0) {
      const next = messages[i + 1];
      const leading = next?.content.slice(0, uses.length) ?? [];
      expect(leading.every((b) => b.type === 'tool_result')).toBe(true);
      expect(leading.map((b) => (b.type === 'tool_result' ? b.tool_use_id : '')).sort()).toEqual(
        uses.map((b) => (b.type === 'tool_use' ? b.id : '')).sort(),
      );
    }
    m.content.forEach((b, k) => {
      if (b.type !== 'tool_result') return;
      // A tool_result sits at the start of a user turn right after the tool_use turn that asked for it.
      expect(m.role).toBe('user');
      expect(m.content.slice(0, k).every((x) => x.type === 'tool_result')).toBe(true);
      expect(messages[i - 1]?.content.some((x) => x.type === 'tool_use' && x.id === b.tool_use_id)).toBe(true);
    });
  });
}

/** History exercising every pairing case: an orphan result, parallel calls answered out of order, an
 * interleaved user message, a pending call. */
function trickyHistory(): HistoryItem[] {
  const at = (n: number, item: Omit<HistoryItem, 'id' | 'turn' | 'ts'>): HistoryItem => ({ ...item, id: `evt_${n}`, turn: n, ts: n });
  return [
    at(1, { role: 'tool', toolName: 'ls', toolCallId: 'c0', text: 'README.md' }),
    at(2, { role: 'user', text: 'Run both checks.' }),
    at(3, { role: 'assistant', toolName: 'lint', toolCallId: 'cA', text: '{"fix":false}' }),
    at(4, { role: 'assistant', toolName: 'test', toolCallId: 'cB', text: '{"filter":"db"}' }),
    at(5, { role: 'tool', toolName: 'test', toolCallId: 'cB', text: '3 passed' }),
    at(6, { role: 'tool', toolName: 'lint', toolCallId: 'cA', text: 'clean' }),
    at(7, { role: 'assistant', text: 'Both pass. Checking the build.' }),
    at(8, { role: 'assistant', toolName: 'build', toolCallId: 'cC', text: 'not json' }),
    at(9, { role: 'user', text: 'Also check the logs.' }),
    at(10, { role: 'tool', toolName: 'build', toolCallId: 'cC', text: 'ok' }),
    at(11, { role: 'system', text: 'Reminder: the deploy window closes at 18:00.' }),
    at(12, { role: 'assistant', toolName: 'logs', toolCallId: 'cD', text: '{"tail":50}' }),
  ];
}

describe('formatText', () => {
  it('renders non-empty blocks as tagged sections in pack order', () => {
    const p = assemblePack({ identity: 'Be brief.', query: 'Status?', taskState: 'phase: idle' }, { tokenizer, windowTokens: WINDOW });
    expect(formatText(p)).toBe('<identity>\nBe brief.\n</identity>\n\n<task_state>\nphase: idle\n</task_state>\n\n<query>\nStatus?\n</query>');
  });
});

describe('prefix reuse across turns', () => {
  it('appending one history item keeps every earlier block a byte-identical prefix (text and anthropic)', () => {
    const events = sessionEvents(10);
    const before = pack(events.slice(0, -1), 'What next?');
    const after = pack(events, 'What next?');
    const t0 = formatText(before);
    const t1 = formatText(after);
    const t0History = t0.slice(0, t0.indexOf('\n</history>'));
    expect(t1.startsWith(`${t0History}\n`)).toBe(true);

    const s0 = anthropicStream(formatAnthropic(before));
    const s1 = anthropicStream(formatAnthropic(after));
    // All but the trailing task-state and query blocks of the earlier request recur, in order, in the later one.
    expect(s0.at(-2)).toContain('<task_state>');
    expect(s1.slice(0, s0.length - 2)).toEqual(s0.slice(0, -2));
  });

  it('reuses over 90 % of each turn as a byte-identical prefix of the previous turn over a 50-turn session', () => {
    // sessionEvents(t) is a prefix of sessionEvents(t + 1): the history of turns 1..t, with an unchanged task state.
    const turnPack = (t: number) => pack(sessionEvents(t), `Turn ${t + 1}: anything new on ${TOPICS[(t + 1) % TOPICS.length]}?`);
    let previous: { text: string; anthropic: AnthropicMessagesPayload } | undefined;
    const textRatios: number[] = [];
    const wireRatios: number[] = [];
    for (let t = 1; t <= 50; t++) {
      const p = turnPack(t);
      expect(p.blocks.find((b) => b.kind === 'history')?.droppedItems).toBe(0);
      const text = formatText(p);
      const anthropic = formatAnthropic(p);
      if (previous) {
        expect(text.startsWith(previous.text.slice(0, previous.text.indexOf('\n</history>')))).toBe(true);
        const s0 = anthropicStream(previous.anthropic);
        expect(anthropicStream(anthropic).slice(0, s0.length - 2)).toEqual(s0.slice(0, -2));
        textRatios.push(prefixReuse(previous.text, text).ratio);
        wireRatios.push(prefixReuse(withoutCacheControl(previous.anthropic), withoutCacheControl(anthropic)).ratio);
      }
      previous = { text, anthropic };
    }
    expect(textRatios).toHaveLength(49);
    const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(Math.min(...textRatios)).toBeGreaterThan(0.9);
    // The JSON wire form adds framing per message, so the early tool turns (four new events against a static
    // floor of ~1.5K tokens) dip to ~0.88; the share grows as the reused prefix does.
    expect(Math.min(...wireRatios)).toBeGreaterThan(0.85);
    expect(mean(wireRatios)).toBeGreaterThan(0.9);
    expect(Math.min(...textRatios.slice(-10), ...wireRatios.slice(-10))).toBeGreaterThan(0.95);
    // In tokens too, which is what a prefix cache skips.
    expect(prefixReuseTokens(formatText(turnPack(49)), formatText(turnPack(50)), tokenizer).ratio).toBeGreaterThan(0.9);
  });
});

describe('formatOpenAi', () => {
  it('produces valid Chat Completions messages with tool calls paired with their results', () => {
    const p = assemblePack({ ...stableParts(), history: trickyHistory(), query: 'Summarize.' }, { tokenizer, windowTokens: WINDOW });
    const { messages } = formatOpenAi(p);
    assertValidOpenAi(messages);
    expect(messages.map((m) => m.role)).toEqual([
      'system', // identity
      'system', // codex
      'system', // karma
      'system', // markers
      'user', // orphan result of c0 (its call is outside the window), as text
      'user',
      'assistant', // tool_calls cA + cB
      'tool',
      'tool',
      'assistant',
      'assistant', // tool_calls cC, with its result pulled ahead of the interleaved user message
      'tool',
      'user',
      'system', // the system event
      'assistant', // pending call cD, as text
      'system', // task state
      'user', // query
    ]);
    const parallel = messages[6];
    expect(parallel?.role === 'assistant' && parallel.tool_calls?.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([
      ['cA', 'lint', '{"fix":false}'],
      ['cB', 'test', '{"filter":"db"}'],
    ]);
    expect(messages[7]).toEqual({ role: 'tool', tool_call_id: 'cA', content: 'clean' });
    expect(messages[4]).toEqual({ role: 'user', content: '[tool result ls #c0] README.md' });
    expect(messages[14]).toEqual({ role: 'assistant', content: '[tool call logs #cD] {"tail":50}' });
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'Summarize.' });
    expect(messages[0]).toEqual({ role: 'system', content: `<identity>\n${stableParts().identity}\n</identity>` });
  });
});

describe('formatAnthropic', () => {
  it('places at most four cache breakpoints, at the ends of codex, karma, markers and history', () => {
    const p = assemblePack({ ...stableParts(), history: sessionEvents(6), query: 'Next?' }, { tokenizer, windowTokens: WINDOW });
    const payload = formatAnthropic(p);
    const blocks = [...payload.system, ...payload.messages.flatMap((m) => m.content)];
    const marked = blocks.flatMap((b, i) => (b.cache_control ? [i] : []));
    expect(marked).toHaveLength(4);
    for (const i of marked) expect(blocks[i]?.cache_control).toEqual({ type: 'ephemeral' });
    expect(payload.system.map((b) => b.text.split('\n')[0])).toEqual(['<identity>', '<codex>', '<karma>', '<markers>']);
    expect(payload.system.map((b) => b.cache_control !== undefined)).toEqual([false, true, true, true]);
    // The fourth sits on the last history block, right before the task state and the query.
    const taskStateAt = blocks.findIndex((b) => b.type === 'text' && b.text.startsWith('<task_state>'));
    expect(marked[3]).toBe(taskStateAt - 1);
    expect(blocks.slice(taskStateAt).every((b) => b.cache_control === undefined)).toBe(true);
  });

  it('moves a breakpoint to the nearest earlier block when its block is empty, never exceeding four', () => {
    const p = assemblePack({ identity: 'Be brief.', markers: ['[Events T1–T9 evicted.]'], history: sessionEvents(2), query: 'q' }, { tokenizer, windowTokens: WINDOW });
    const payload = formatAnthropic(p);
    // codex and karma are empty: both collapse onto the end of identity.
    expect(payload.system.map((b) => b.cache_control !== undefined)).toEqual([true, true]);
    expect(payload.messages.flatMap((m) => m.content).filter((b) => b.cache_control).length).toBe(1);
    expect(thrown(() => formatAnthropic(p, { breakpointAfter: ['identity', 'codex', 'karma', 'markers', 'history'] })).data.field).toBe(
      'breakpointAfter',
    );
  });

  it('moves the markers breakpoint to the end of the stable head when the history has one', () => {
    const history = sessionEvents(6);
    // The head ends with the tool round of turn 3: its result is the last block of the head.
    const headEnd = history.findIndex((h) => h.role === 'tool');
    const flagged = history.map((h, i) => (i === headEnd ? { ...h, isCacheHeadEnd: true } : h));
    const payload = formatAnthropic(assemblePack({ ...stableParts(), history: flagged, query: 'Next?' }, { tokenizer, windowTokens: WINDOW }));
    const blocks = [...payload.system, ...payload.messages.flatMap((m) => m.content)];
    const marked = blocks.flatMap((b, i) => (b.cache_control ? [i] : []));
    expect(marked).toHaveLength(4);
    // codex and karma keep theirs; the markers block has none, the head's last block (turn 3's tool result) has it.
    expect(payload.system.map((b) => b.cache_control !== undefined)).toEqual([false, true, true, false]);
    const at = blocks.findIndex((b) => b.type === 'tool_result' && b.tool_use_id === history[headEnd]!.toolCallId);
    expect(marked[2]).toBe(at);
    // Without the flag, the same pack puts it after the markers block as before.
    const plain = formatAnthropic(assemblePack({ ...stableParts(), history, query: 'Next?' }, { tokenizer, windowTokens: WINDOW }));
    expect(plain.system.map((b) => b.cache_control !== undefined)).toEqual([false, true, true, true]);
  });

  it('produces valid Messages API turns with tool_use answered by tool_result', () => {
    const p = assemblePack({ ...stableParts(), history: trickyHistory(), query: 'Summarize.' }, { tokenizer, windowTokens: WINDOW });
    const payload = formatAnthropic(p);
    assertValidAnthropic(payload);
    const uses = payload.messages.flatMap((m) => m.content).filter((b) => b.type === 'tool_use');
    expect(uses.map((b) => (b.type === 'tool_use' ? [b.id, b.name, b.input] : []))).toEqual([
      ['cA', 'lint', { fix: false }],
      ['cB', 'test', { filter: 'db' }],
      ['cC', 'build', { arguments: 'not json' }],
    ]);
    const last = payload.messages.at(-1);
    expect(last?.role).toBe('user');
    expect(last?.content.at(-1)).toEqual({ type: 'text', text: 'Summarize.' });
  });
  it('maps tool ids and names outside [a-zA-Z0-9_-] the same way on the call and its result', () => {
    const history: HistoryItem[] = [
      { id: 'e1', role: 'user', text: 'go', turn: 1, ts: 0 },
      { id: 'e2', role: 'assistant', toolName: 'fs.read', toolCallId: 'call:1.a', text: '{}', turn: 2, ts: 0 },
      { id: 'e3', role: 'tool', toolName: 'fs.read', toolCallId: 'call:1.a', text: 'data', turn: 3, ts: 0 },
    ];
    const payload = formatAnthropic(assemblePack({ identity: '', history, query: 'q' }, { tokenizer, windowTokens: WINDOW }));
    assertValidAnthropic(payload);
    expect(payload.messages[1]?.content[0]).toMatchObject({ type: 'tool_use', id: 'call_1_a', name: 'fs_read' });
    expect(payload.messages[2]?.content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'call_1_a' });
  });
});

describe('FormatterRegistry', () => {
  it('serves the built-ins by name and accepts new formatters', () => {
    const registry = createFormatterRegistry();
    const p = assemblePack({ identity: 'Be brief.', query: 'q' }, { tokenizer, windowTokens: WINDOW });
    expect(registry.names()).toEqual(['anthropic', 'openai', 'text']);
    expect(registry.get<string>('text')(p)).toBe(formatText(p));
    expect(registry.get('openai')(p)).toEqual(formatOpenAi(p));
    registry.register('query-only', (pack) => pack.blocks.at(-1)?.text);
    expect(registry.get('query-only')(p)).toBe('q');
  });

  it('refuses a duplicate name and reports an unknown one as NOT_FOUND', () => {
    const registry = createFormatterRegistry();
    expect(thrown(() => registry.register('text', formatText)).code).toBe('INVALID_INPUT');
    expect(thrown(() => registry.get('gemini')).code).toBe('NOT_FOUND');
  });
});

describe('ArtifactInjectorRegistry', () => {
  it('injects text by media-type family and a codebase as a sorted tree plus file contents', () => {
    const injectors = createArtifactInjectorRegistry();
    expect(injectors.inject({ id: 'art_1', mediaType: 'text/x-python; charset=utf-8', text: 'print(1)' })).toEqual({
      id: 'art_1',
      title: 'art_1',
      text: 'print(1)',
    });
    const codebase = JSON.stringify({
      files: [{ path: 'src/b.ts', text: 'export const b = 2;' }, { path: 'README.md' }, { path: 'src/a/c.ts', text: 'c' }, { path: 'src/a/d.ts' }],
    });
    const doc = injectors.inject({ id: 'repo:app', title: 'app', mediaType: CODEBASE_MEDIA_TYPE, text: codebase });
    expect(doc.text).toBe(
      ['README.md\nsrc/\n  a/\n    c.ts\n    d.ts\n  b.ts', '--- src/a/c.ts ---\nc', '--- src/b.ts ---\nexport const b = 2;'].join('\n\n'),
    );
  });

  it('plugs in a new media type without touching the assembler, and rejects an unhandled one', () => {
    const injectors = createArtifactInjectorRegistry();
    expect(thrown(() => injectors.inject({ id: 'a', mediaType: 'image/png', text: '' })).data.field).toBe('mediaType');
    injectors.register('image/*', (a) => ({ id: a.id, title: a.title ?? a.id, text: `[image] ${a.text}` }));
    const doc = injectors.inject({ id: 'img', mediaType: 'image/png', text: 'a red error dialog' });
    const p = assemblePack({ identity: '', codex: [doc], query: 'q' }, { tokenizer, windowTokens: WINDOW });
    expect(p.blocks.find((b) => b.kind === 'codex')?.text).toContain('[image] a red error dialog');
  });
});
