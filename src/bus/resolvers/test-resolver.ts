import { EngramError } from '../../errors.js';
import type { TestRef } from '../pointer.js';
import type { ResolvedSpan } from './text-span.js';
import type { ReadScope } from './read-scope.js';

/** A recorded test result. */
export interface TestResult {
  id: string;
  /** `passed`, `failed`, `skipped`, or the runner's own word. */
  status: string;
  name?: string;
  /** The runner's output for this test (assertion diff, stack, log). */
  output?: string;
  durationMs?: number;
  /** When the result was recorded, ISO-8601. */
  ts?: string;
}

/** Where test results come from (a CI importer, a tool-result parser); wired by the engine. */
export interface TestResultSource {
  /** The newest result with this id that `scope`'s reader may read, or null. */
  getTestResult(id: string, scope?: ReadScope): Promise<TestResult | null>;
}

/** Where a test excerpt came from. */
export interface TestOrigin {
  type: 'test';
  id: string;
  status: string;
  ts?: string;
}

/**
 * Resolves `test:<id>` to the recorded result: a first line `<status> <name> (<ms> ms)`, then the output.
 * A result is only as stable as its id: ids that name a run (`run-42/…`) pin it, ids that name a test do not.
 */
export class TestResolver {
  constructor(private readonly source: TestResultSource) {}

  async read(ref: TestRef, scope: ReadScope = {}): Promise<ResolvedSpan<TestOrigin>> {
    const result = await this.source.getTestResult(ref.id, scope);
    if (!result) throw new EngramError('NOT_FOUND', `pointer: no test result "${ref.id}"`, { field: 'pointer', reason: 'no-such-test' });
    const head = `${result.status} ${result.name ?? result.id}${result.durationMs !== undefined ? ` (${result.durationMs} ms)` : ''}`;
    return {
      text: result.output ? `${head}\n${result.output}` : head,
      source: { type: 'test', id: result.id, status: result.status, ...(result.ts !== undefined ? { ts: result.ts } : {}) },
    };
  }
}
