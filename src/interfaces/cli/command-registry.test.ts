import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMAND_FILES, invokedCommand } from './command-registry.js';

const argv = (...words: string[]): string[] => ['node', 'engram', ...words];

describe('invokedCommand', () => {
  it('is the first word that is neither a program option nor its value', () => {
    expect(invokedCommand(argv('recall', 'ECONNREFUSED'))).toBe('recall');
    expect(invokedCommand(argv('--db', 'recall.db', '--json', 'show', 'evt_1'))).toBe('show');
    expect(invokedCommand(argv('--db=x.db', '--embedder', 'none', '--no-redact', 'ingest', 'f.jsonl'))).toBe('ingest');
    expect(invokedCommand(argv('--llm', 'anthropic:claude-haiku-4-5', '--repo', '.', '--pg', 'postgres://h/db', 'stats'))).toBe('stats');
  });

  it('is undefined when only options are given', () => {
    expect(invokedCommand(argv('--help'))).toBeUndefined();
    expect(invokedCommand(argv('--db', 'x.db'))).toBeUndefined();
    expect(invokedCommand(argv())).toBeUndefined();
  });
});

describe('COMMAND_FILES', () => {
  it('names exactly the top-level commands each file registers', async () => {
    for (const file of COMMAND_FILES) {
      const program = new Command();
      const { register } = await file.load();
      // Registering only declares commands and options; the actions are never run here.
      const noAction = (): (() => Promise<void>) => async () => {};
      register(program, { io: { out: () => {}, err: () => {} }, version: '0', withStore: noAction, withoutStore: noAction } as never);
      expect(program.commands.map((c) => c.name())).toEqual(file.names);
    }
  });
});
