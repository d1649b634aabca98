import { describe, expect, it } from 'vitest';
import { DeterministicExtractor, decisionName } from './deterministic-extractor.js';

const extract = (content: string, more: Partial<{ kind: string; toolName: string; tags: string[]; meta: Record<string, unknown> }> = {}) =>
  new DeterministicExtractor().extract({ id: 'evt_x', kind: more.kind ?? 'assistant', content, tags: more.tags ?? [], ...(more.toolName ? { toolName: more.toolName } : {}), ...(more.meta ? { meta: more.meta } : {}) });

const names = async (content: string, more = {}) => (await extract(content, more)).entities.map((e) => `${e.kind}:${e.name}`);

describe('deterministic extraction', () => {
  it('finds paths, services, errors, symbols, people and project tags, each once', async () => {
    expect(await names('See ./src/api/client.ts and services/ledger/reserve.py; the payment-service logs ECONNREFUSED twice: ECONNREFUSED.', { tags: ['project:shop'] })).toEqual([
      'file:src/api/client.ts',
      'file:services/ledger/reserve.py',
      'service:payment',
      'service:ledger',
      'error:ECONNREFUSED',
      'project:shop',
    ]);
    expect(await names('processPayment() throws CardDeclinedError; ask @Maria, TS2345 in LedgerClient.reserve()')).toEqual([
      'error:CardDeclinedError',
      'error:TS2345',
      'symbol:processPayment',
      'symbol:LedgerClient.reserve',
      'person:maria',
    ]);
  });

  it('does not take version numbers, abbreviations or plain words for entities', async () => {
    expect(await names('Upgraded to v1.2.3, e.g. the node 20.19 release; nothing else changed. The Service is fine.')).toEqual([]);
  });

  it('names commands from shell tool calls, $ lines and backticks, by their first words', async () => {
    expect(await names('npm run build -- --watch', { kind: 'tool_call', toolName: 'bash' })).toEqual(['command:npm run build']);
    expect(await names('x', { kind: 'tool_call', toolName: 'Bash', meta: { command: 'git rebase -i HEAD~3' } })).toEqual(['command:git rebase']);
    expect(await names('Run `docker compose up` then:\n$ psql -h localhost\nand `cat notes`')).toEqual(['command:docker compose up', 'command:psql']);
  });

  it('reads typed relations between two entities of a sentence, and lists after the verb', async () => {
    const { edges } = await extract('The checkout service depends on the ledger service and the tax service. ERR_TIMEOUT was fixed in src/retry.ts.');
    const typed = edges.filter((e) => e.type !== 'mentions').map((e) => `${e.type} ${e.src.kind}:${e.src.name} -> ${e.dst.kind}:${e.dst.name} ${e.confidence}`);
    expect(typed.sort()).toEqual([
      'depends_on service:checkout -> service:ledger 0.8',
      'depends_on service:checkout -> service:tax 0.8',
      'fixed_by error:ERR_TIMEOUT -> file:src/retry.ts 0.8',
    ]);
    // Entities in different sentences are not related by a verb in between.
    const apart = await extract('The auth service is slow. It depends on nothing; the cache service calls home.');
    expect(apart.edges.filter((e) => e.type === 'depends_on')).toEqual([]);
  });

  it('keeps a long listing bounded: at most 200 entities of a kind class per event and 30 co-mentions per error or service', async () => {
    const listing = Array.from({ length: 300 }, (_, i) => `src/gen/file${i}.ts`).join('\n');
    const out = await extract(`ERR_BUILD_FAILED in:\n${listing}`);
    expect(out.entities).toHaveLength(201);
    expect(out.entities.map((e) => e.kind)).toContain('error');
    expect(out.edges.filter((e) => e.type === 'mentions')).toHaveLength(30);
  });

  it('records a decision and what it decides about, and co-mentions of errors and services as weak edges', async () => {
    const d = await extract('Use idempotency keys for the ledger service. Retries double-charged cards.', { kind: 'decision' });
    expect(d.entities.map((e) => `${e.kind}:${e.name}`)).toContain('decision:Use idempotency keys for the ledger service.');
    expect(d.edges.filter((e) => e.type === 'decided').map((e) => `${e.dst.kind}:${e.dst.name} ${e.confidence}`)).toEqual(['service:ledger 0.9']);
    const m = await extract('ERR_LOCKED in the inventory service while reading src/stock.ts');
    expect(m.edges.filter((e) => e.type === 'mentions' && e.src.name === 'ERR_LOCKED').map((e) => [e.dst.name, e.confidence])).toEqual([
      ['src/stock.ts', 0.5],
      ['inventory', 0.5],
    ]);
    expect(decisionName('  First sentence here. Second one.')).toBe('First sentence here.');
  });
});
