import { describe, expect, it } from 'vitest';
import { cueTerms, cueWeights, isPresent, readAnswer, stem } from './reader.js';

describe('cueTerms', () => {
  it('keeps the content words of a probe, stemmed, without stop words or words naming the answer form', () => {
    expect(cueTerms('Where exactly did the notifications worker crash? I need the file and line.')).toEqual(['notification', 'worker', 'crash']);
    expect(stem('crashing')).toBe('crash');
    expect(stem('runs')).toBe('runs'); // too short to strip
  });
});

describe('readAnswer', () => {
  const question = 'Which commit broke the checkout build?';

  it('answers with the candidate that has the probe words on its line', () => {
    const evidence = ['b1c2d3e4f5a6 chore(search): bump eslint\na7f3b2c9e1d8 broke the checkout build\n9e9e9e9e9e9e docs: typo'];
    expect(readAnswer('hash', question, evidence)).toMatchObject({ answer: 'a7f3b2c9e1d8', segment: 0 });
  });

  it('abstains when no candidate has a probe word near it', () => {
    expect(readAnswer('hash', question, ['deployed 0a1b2c3d4e5f to staging']).answer).toBeNull();
    expect(readAnswer('hash', question, ['the checkout build broke, no hash was printed']).answer).toBeNull();
  });

  it('breaks ties in favour of the earlier segment', () => {
    const pull = 'a7f3b2c9e1d8 broke the checkout build';
    const window = 'a7f3b2c9e1d9 broke the checkout build';
    expect(readAnswer('hash', question, [pull, window]).answer).toBe('a7f3b2c9e1d8');
    expect(readAnswer('hash', question, [window, pull]).answer).toBe('a7f3b2c9e1d9');
  });

  it('shares the words of a line among the candidates it lists', () => {
    const evidence = [
      'for f in "--pool-size=8 --idle-timeout=5s" "--pool-size=16 --idle-timeout=5s"; do k6 run load/billing.js -e FLAGS="$f"; done',
      'the best billing pool setting is --pool-size=12 --idle-timeout=30s',
    ];
    expect(readAnswer('parameter', 'Which pool flags were best for billing?', evidence).answer).toBe('--pool-size=12 --idle-timeout=30s');
  });

  it('weights rare probe words above ones every line repeats', () => {
    const lines = Array.from({ length: 20 }, (_, i) => `worker notifications heartbeat ${i}`);
    lines.push('    at handle (src/notifications/pool.ts:12:4) worker notifications');
    lines.push('crash at src/notifications/validator.ts:463');
    const weights = cueWeights(['worker', 'crash'], [lines.join('\n')]);
    expect(weights.get('crash')!).toBeGreaterThan(weights.get('worker')!);
    expect(readAnswer('path', 'Where did the notifications worker crash?', [lines.join('\n')]).answer).toBe('src/notifications/validator.ts:463');
  });

  it('reads each needle type', () => {
    expect(readAnswer('error', 'What did the sync job fail with?', ['sync job: Error: connect ECONNREFUSED 10.0.3.7:5432']).answer).toBe('ECONNREFUSED 10.0.3.7:5432');
    expect(readAnswer('rationale', 'Why PostgreSQL for the event store?', ['Use PostgreSQL for the event store because of JSONB support and faster writes.']).answer).toBe('JSONB support and faster writes');
  });
});

describe('isPresent', () => {
  it('finds the exact value in any segment, and only the exact value', () => {
    expect(isPresent('a7f3b2c9e1d8', ['x', 'commit a7f3b2c9e1d8'])).toBe(true);
    expect(isPresent('a7f3b2c9e1d8', ['commit a7f3b2c9e1d9'])).toBe(false);
  });
});
