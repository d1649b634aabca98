import { describe, expect, it } from 'vitest';
import { runStorageContract, selectBackends, skipsFor, type ContractBackend, type ContractSkip } from './harnesses.js';

/** A backend that never opens a store: the runner's own tests need none. */
function backendNamed(name: ContractBackend['name'], skip: ContractSkip[] = []): ContractBackend {
  return { name, createHarness: () => Promise.reject(new Error('no store in the runner tests')), skip };
}

describe('storage contract runner', () => {
  const both = [backendNamed('sqlite'), backendNamed('postgres')];

  it('runs every backend without a filter and only the named ones with ENGRAM_TEST_BACKENDS', () => {
    expect(selectBackends(both, undefined).map((b) => b.name)).toEqual(['sqlite', 'postgres']);
    expect(selectBackends(both, '').map((b) => b.name)).toEqual(['sqlite', 'postgres']);
    expect(selectBackends(both, 'sqlite').map((b) => b.name)).toEqual(['sqlite']);
    expect(selectBackends(both, ' postgres , sqlite ').map((b) => b.name)).toEqual(['sqlite', 'postgres']);
  });

  it('refuses an unknown backend name instead of running nothing', () => {
    expect(() => selectBackends(both, 'sqlite,mysql')).toThrow(/unknown backend mysql/);
  });

  it('refuses a skip that states no reason', () => {
    expect(() => skipsFor(backendNamed('postgres', [{ reason: ' ', tests: ['x > y'] }]), 'x')).toThrow(/must state its reason/);
  });

  it("applies a backend's skips only to the suite they name", () => {
    const pg = backendNamed('postgres', [{ reason: 'why', tests: ['karma > adds a fact', 'task state > starts empty'] }]);
    expect([...skipsFor(pg, 'karma')]).toEqual([['karma > adds a fact', 'why']]);
    expect(skipsFor(pg, 'karm').size).toBe(0);
  });
});

runStorageContract(
  'storage contract runner self-check',
  () => {
    it('skips a test its backend lists, with the reason', () => {
      throw new Error('a test the backend skips ran');
    });
    describe('inner', () => {
      it('skips every test of a describe its backend lists', () => {
        throw new Error('a test the backend skips ran');
      });
    });
    it('runs a test no skip names', () => {
      expect(1 + 1).toBe(2);
    });
  },
  {
    backends: [
      backendNamed('sqlite', [
        {
          reason: 'the runner tests its own skips',
          tests: ['storage contract runner self-check > skips a test its backend lists, with the reason', 'storage contract runner self-check > inner'],
        },
      ]),
    ],
  },
);
