import { describe, expect, it } from 'vitest';
import { topicTerms } from './second-hop.js';

const hit = (excerpt: string) => ({ excerpt }) as never;

describe('topicTerms', () => {
  it('takes terms found in at least two of the top three excerpts and not in the probe, most widespread first', () => {
    const first = {
      hits: [
        hit('ERROR billing-worker pgbouncer refused src/billing/pool.ts:88'),
        hit('pgbouncer restarted for billing-worker at 10:02'),
        hit('billing-worker pgbouncer config reload; ledger export'),
        hit('ledger export finished'), // fourth hit: not looked at
      ],
    };
    expect(topicTerms('What did the billing job fail with?', first)).toEqual(['billing-worker', 'pgbouncer']);
  });

  it('offers nothing when the excerpts share no new term', () => {
    expect(topicTerms('why the cache?', { hits: [hit('alpha beta'), hit('gamma delta')] })).toEqual([]);
  });
});
