import { describe, expect, it } from 'vitest';
import { renderTaskState } from '../../src/context/assembly/task-state-yaml.js';
import { defaultBudgets } from '../../src/context/assembly/blocks.js';
import { cardForPack } from '../../src/context/context-engine.js';
import { EMPTY_TASK_STATE, taskStateSchema, type TaskState } from '../../src/model/task-state.js';
import { createGptTokenizer } from '../../src/providers/gpt-tokenizer.js';
import { agentTurns, initialCard } from './agent-turns.js';

describe('agentTurns', () => {
  it('gives the same turns for the same seed and different ones for another seed', () => {
    const a = [...agentTurns(50, { seed: 7 })];
    expect([...agentTurns(50, { seed: 7 })]).toEqual(a);
    expect([...agentTurns(50, { seed: 8 })]).not.toEqual(a);
    expect(initialCard(7)).toEqual(initialCard(7));
  });

  it('opens each turn with the user message, closes it with the reply, and pairs every tool call with its result', () => {
    const ids = new Set<string>();
    for (const turn of agentTurns(200, { seed: 3 })) {
      expect(turn.events[0]).toMatchObject({ kind: 'user', content: turn.userMessage });
      expect(turn.events.at(-1)!.kind).toBe('assistant');
      const calls = turn.events.filter((e) => e.kind === 'tool_call');
      for (const call of calls) {
        expect(ids.has(call.toolCallId!)).toBe(false);
        ids.add(call.toolCallId!);
        const at = turn.events.indexOf(call);
        expect(turn.events.findIndex((e, i) => i > at && e.kind === 'tool_result' && e.toolCallId === call.toolCallId)).toBeGreaterThan(at);
      }
      expect(turn.events.filter((e) => e.kind === 'tool_result')).toHaveLength(calls.length);
      const ts = turn.events.map((e) => e.ts as number);
      expect([...ts].sort((x, y) => x - y)).toEqual(ts);
    }
  });

  it('updates the card on about 40 % of turns', () => {
    const turns = [...agentTurns(2000, { seed: 11 })];
    const share = turns.filter((t) => t.cardUpdate).length / turns.length;
    expect(share).toBeGreaterThan(0.36);
    expect(share).toBeLessThan(0.44);
  });

  it('keeps a valid card that fits the task_state budget of an 8K window on every turn', () => {
    const tokenizer = createGptTokenizer();
    const budget = defaultBudgets(8192).task_state;
    let card: TaskState = taskStateSchema.parse({ ...EMPTY_TASK_STATE, ...initialCard(5) });
    let largest = tokenizer.count(renderTaskState(cardForPack(card)));
    for (const turn of agentTurns(600, { seed: 5 })) {
      if (!turn.cardUpdate) continue;
      card = taskStateSchema.parse({ ...card, ...turn.cardUpdate });
      largest = Math.max(largest, tokenizer.count(renderTaskState(cardForPack(card))));
    }
    expect(largest).toBeLessThanOrEqual(budget);
  });
});
