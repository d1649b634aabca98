import { describe, expect, it } from 'vitest';
import { makeEvent } from './test-support.js';
import { computeTermStats, eventHaystack, eventTerms } from './topic-terms.js';

function keysOf(content: string): string[] {
  return [...eventTerms(makeEvent(1, 'assistant', content)).keys].sort();
}

describe('eventTerms', () => {
  it('keeps content words and adjacent-word phrases, without stop words', () => {
    expect(keysOf('Let me check the Docker build failure now.')).toEqual(['p:build failure', 'p:docker build', 'w:build', 'w:docker', 'w:failure']);
  });

  it('does not join words across punctuation', () => {
    expect(keysOf('nginx. config')).toEqual(['w:config', 'w:nginx']);
    expect(keysOf('"nginx" config')).toEqual(['w:config', 'w:nginx']);
  });

  it('keeps identifiers: paths by their tail without :line, error codes, hosts, code names, long flags', () => {
    const terms = eventTerms(
      makeEvent(
        1,
        'tool_result',
        'at /home/me/proj/src/db/pool.ts:42:7 got ECONNREFUSED and TS2345 from https://api.example.com/v1 in parseQuery max_retries --dry-run v1.2.3',
      ),
    );
    const ids = [...terms.display.values()].sort();
    expect(ids).toEqual(['--dry-run', 'ECONNREFUSED', 'TS2345', 'api.example.com', 'max_retries', 'parseQuery', 'src/db/pool.ts', 'v1.2.3']);
  });

  it('leaves out hashes, uuids, prefixed ids, dates, numbers and units', () => {
    const content =
      'commit 3f9a2c1d8e id 123e4567-e89b-12d3-a456-426614174000 evt_01hzx3k5q2m8n7p6r5s4t3v2w1 2025-01-02T10:00:00Z 8080 200ms 5MB';
    expect(keysOf(content)).toEqual(['w:commit']);
  });

  it('treats common all-caps words as words and slash-joined words as no path', () => {
    expect(keysOf('ERROR JSON and/or HTTP/1.1')).toEqual(['p:error json', 'w:error', 'w:json']);
  });

  it('splits JSON into its values and leaves out its keys', () => {
    expect(keysOf('{"command":"certbot renew --dry-run","file_path":"/etc/hosts"}')).toEqual([
      'i:--dry-run',
      'i:/etc/hosts',
      'p:certbot renew',
      'w:certbot',
      'w:renew',
    ]);
  });

  it('adds the tool name and tags', () => {
    const terms = eventTerms(makeEvent(1, 'tool_call', '', { toolName: 'Bash', tags: ['deploy'] }));
    expect([...terms.keys].sort()).toEqual(['tag:deploy', 'tool:Bash']);
  });

  it('scans only the head and tail of very long content', () => {
    const middle = ` ${'filler '.repeat(5000)}middleword ${'filler '.repeat(5000)}`;
    const keys = keysOf(`headword${middle}tailword`);
    expect(keys).toContain('w:headword');
    expect(keys).toContain('w:tailword');
    expect(keys).not.toContain('w:middleword');
  });
});

describe('computeTermStats', () => {
  it('counts in how many events each term occurs', () => {
    const stats = computeTermStats([
      makeEvent(1, 'user', 'nginx nginx config'),
      makeEvent(2, 'user', 'nginx reload'),
      makeEvent(3, 'user', 'unrelated'),
    ]);
    expect(stats.documentCount).toBe(3);
    expect(stats.documentFrequency.get('w:nginx')).toBe(2);
    expect(stats.documentFrequency.get('w:config')).toBe(1);
    expect(stats.documentFrequency.get('p:nginx config')).toBe(1);
  });
});

describe('eventHaystack', () => {
  it('lowercases content, tags and tool name', () => {
    expect(eventHaystack(makeEvent(1, 'tool_call', 'SSL Cert', { tags: ['Ops'], toolName: 'Bash' }))).toBe('ssl cert\nops\nbash');
  });
});
