import { describe, expect, it } from 'vitest';
import { findCandidates, isNeedleShaped } from './needle-patterns.js';

describe('findCandidates', () => {
  it('finds hash fragments but not ids, digests, numbers or words', () => {
    const text = 'commit a7f3b2c9e1d8 evt_01kaa3b2c9e1d8 art_' + 'ab12'.repeat(16) + ' 20260304 defaced 3f9a2c1';
    expect(findCandidates(text, 'hash').map((c) => c.value)).toEqual(['a7f3b2c9e1d8', '3f9a2c1']);
  });

  it('finds paths with line numbers and leaves the column out', () => {
    expect(findCandidates('at run (src/payments/refund.ts:131:17) and /var/log/nginx/error.log:2847:2026/03/04', 'path').map((c) => c.value)).toEqual([
      'src/payments/refund.ts:131',
      '/var/log/nginx/error.log:2847',
    ]);
  });

  it('finds errors with addresses, flag runs and decision reasons', () => {
    expect(findCandidates('Error: connect ECONNREFUSED 10.0.3.7:5432', 'error')[0]!.value).toBe('ECONNREFUSED 10.0.3.7:5432');
    expect(findCandidates('./bin/sync --env staging --max-retries=7 --timeout=3200ms || break', 'parameter')[0]!.value).toBe('--max-retries=7 --timeout=3200ms');
    expect(findCandidates('{"command":"k6 -e FLAGS=\\"--pool-size=8 --idle-timeout=5s\\""}', 'parameter')[0]!.value).toBe('--pool-size=8 --idle-timeout=5s');
    expect(findCandidates('Use Redis because of native TTL eviction and speed. Later.', 'rationale')[0]!.value).toBe('native TTL eviction and speed');
  });

  it('checks a value on its own', () => {
    expect(isNeedleShaped('a7f3b2c9e1d8', 'hash')).toBe(true);
    expect(isNeedleShaped('123456789012', 'hash')).toBe(false);
    expect(isNeedleShaped('--max-retries=7', 'parameter')).toBe(false);
  });
});
