import { EngramError } from '../../errors.js';

/** Test helpers for the resolver tests (not part of the API). */
export { createTempRepo, type TempRepo } from '../../../bench/lib/temp-git-repo.js';

/** `count` numbered lines `<prefix> <i>` (1-based), each ending in a newline. */
export function numberedLines(count: number, prefix = 'line'): string {
  let s = '';
  for (let i = 1; i <= count; i++) s += `${prefix} ${i}\n`;
  return s;
}

/** The EngramError a promise rejects with; fails the test when it resolves or rejects with something else. */
export async function rejected(promise: Promise<unknown>): Promise<EngramError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof EngramError) return err;
    throw err;
  }
  throw new Error('expected the promise to reject with an EngramError');
}

/** The EngramError `fn` throws; fails the test when it throws nothing or something else. */
export function thrown(fn: () => unknown): EngramError {
  try {
    fn();
  } catch (err) {
    if (err instanceof EngramError) return err;
    throw err;
  }
  throw new Error('expected an EngramError');
}
