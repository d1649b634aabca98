import { describe, expect, it } from 'vitest';
import type { EventKind, EventRecord } from '../model/event.js';
import type { SessionId } from '../model/ids.js';
import { createGptTokenizer } from '../providers/gpt-tokenizer.js';
import {
  MARKER_MAX_TOKENS,
  buildMarker,
  createMarker,
  markerRangeKey,
  renderMarker,
  toMarkerItem,
  unionTopics,
} from './markers.js';
import { SESSION, makeEvent, invalidField } from './test-support.js';
import { computeTermStats } from './topic-terms.js';

const tokenizer = createGptTokenizer();

/** A coding-agent span: a Docker build failure, its fix, then an SSL certificate renewal. */
function dockerSpan(firstTurn = 12): EventRecord[] {
  const rows: [EventKind, string, string?][] = [
    ['user', 'The Docker build fails on CI since this morning, can you look?'],
    ['tool_call', '{"command":"docker build -t web:latest ."}', 'Bash'],
    ['tool_result', 'Step 7/12 : COPY nginx.conf /etc/nginx/nginx.conf\nERROR: failed to solve: "/nginx.conf" not found', 'Bash'],
    ['assistant', 'The Docker build failure comes from the COPY of nginx.conf: the file moved to deploy/nginx/nginx.conf.'],
    ['tool_call', '{"file_path":"/repo/Dockerfile"}', 'Read'],
    ['tool_result', 'FROM nginx:1.25\nCOPY nginx.conf /etc/nginx/nginx.conf\nCOPY certs/ /etc/ssl/certs/', 'Read'],
    ['tool_call', '{"command":"docker build -t web:latest ."}', 'Bash'],
    ['tool_result', 'Successfully built 3f9a2c1d\nSuccessfully tagged web:latest', 'Bash'],
    ['user', 'Now the SSL cert renewal: certbot says the cert for api.example.com expires in 3 days'],
    ['tool_call', '{"command":"certbot renew --dry-run"}', 'Bash'],
    ['tool_result', 'Attempting to renew cert (api.example.com) failed: connect ECONNREFUSED 127.0.0.1:80. Skipping.', 'Bash'],
    ['assistant', 'certbot renew fails with ECONNREFUSED: nginx is not listening on port 80, and the SSL cert renewal needs it.'],
    ['tool_call', '{"command":"docker compose up -d nginx && certbot renew"}', 'Bash'],
    ['tool_result', 'Congratulations, all renewals succeeded: /etc/letsencrypt/live/api.example.com/fullchain.pem', 'Bash'],
  ];
  return rows.map(([kind, content, toolName], i) => makeEvent(firstTurn + i, kind, content, toolName ? { toolName } : {}));
}


describe('renderMarker', () => {
  it('renders the paper form with an ASCII hyphen', () => {
    expect(renderMarker({ fromTurn: 12, toTurn: 47, topics: ['Docker build failure', 'nginx config', 'SSL cert renewal'] })).toBe(
      '[Events T12-T47 evicted. Key topics: Docker build failure, nginx config, SSL cert renewal. Use recall(query) to retrieve details.]',
    );
  });

  it('leaves out the topics clause when there are none', () => {
    expect(renderMarker({ fromTurn: 5, toTurn: 5, topics: [] })).toBe('[Events T5-T5 evicted. Use recall(query) to retrieve details.]');
  });
});

describe('buildMarker', () => {
  const span = dockerSpan();
  const later = [
    makeEvent(26, 'user', 'Thanks. Next: add a health check endpoint to the API server.'),
    makeEvent(27, 'assistant', 'Adding GET /healthz to src/server/routes.ts.'),
  ];
  const background = computeTermStats([...span, ...later]);

  it('covers the span and names its tools, identifiers and phrases within 60 tokens', () => {
    const marker = buildMarker(span, { background }, tokenizer);
    expect(marker).toMatchObject({
      fromTurn: 12,
      toTurn: 25,
      sessionId: SESSION,
      level: 0,
      eventCount: 14,
      firstTs: span[0]!.ts,
      lastTs: span[13]!.ts,
    });
    expect(marker.topics).toEqual(expect.arrayContaining(['docker build', '/etc/nginx/nginx.conf', 'Bash x4', 'ECONNREFUSED']));
    expect(marker.topicWeights).toHaveLength(marker.topics.length);
    expect([...marker.topicWeights]).toEqual([...marker.topicWeights].sort((a, b) => b - a));
    expect(tokenizer.count(renderMarker(marker))).toBeLessThanOrEqual(MARKER_MAX_TOKENS);
    for (const topic of marker.topics) expect(topic.split(' ').length).toBeLessThanOrEqual(4);
    // Hashes and loopback addresses are not topics; the path of the file topic subsumes its bare name.
    expect(marker.topics.join(' ')).not.toMatch(/3f9a2c1d|127\.0\.0\.1/);
    expect(marker.topics).not.toContain('nginx.conf');
    // JSON keys of tool arguments are schema, not topics.
    expect(marker.topics).not.toContain('command');
  });

  it('puts task-state terms found in the span first, and ignores those not found', () => {
    const marker = buildMarker(span, { background, taskTerms: ['health check', 'SSL cert renewal'] }, tokenizer);
    expect(marker.topics[0]).toBe('SSL cert renewal');
    expect(marker.topics).not.toContain('health check');
    // The phrase inside the task term is not repeated.
    expect(marker.topics).not.toContain('cert renewal');
  });

  it('prefers terms specific to the span over terms common to the whole cache', () => {
    const mk = (turn: number, content: string): EventRecord => makeEvent(turn, 'assistant', content);
    const spanEvents = [mk(1, 'build; postgres tuning'), mk(2, 'build; postgres vacuum'), mk(3, 'build; postgres indexes')];
    const rest = Array.from({ length: 30 }, (_, i) => mk(4 + i, `build step ${i}`));
    // Alone, the two words tie and sort by text; against the cache, 'build' is everywhere and 'postgres' is not.
    expect(buildMarker(spanEvents, {}, tokenizer).topics.slice(0, 2)).toEqual(['build', 'postgres']);
    const marker = buildMarker(spanEvents, { background: computeTermStats([...spanEvents, ...rest]) }, tokenizer);
    expect(marker.topics[0]).toBe('postgres');
    expect(marker.topicWeights[marker.topics.indexOf('build')] ?? 0).toBeLessThan(marker.topicWeights[0]! / 2);
  });

  it('counts tool calls per tool and keeps at most two tool topics', () => {
    const events = ['Bash', 'Bash', 'Bash', 'Read', 'Read', 'Grep'].map((toolName, i) => makeEvent(i + 1, 'tool_call', '{}', { toolName }));
    const marker = buildMarker(events, {}, tokenizer);
    expect(marker.topics.filter((t) => / x\d+$/.test(t))).toEqual(['Bash x3', 'Read x2']);
  });

  it('counts results when the span holds no call of a tool', () => {
    const events = [1, 2].map((turn) => makeEvent(turn, 'tool_result', 'ok', { toolName: 'WebFetch' }));
    expect(buildMarker(events, {}, tokenizer).topics).toContain('WebFetch x2');
  });

  it('uses tags as topics', () => {
    const events = [1, 2, 3].map((turn) => makeEvent(turn, 'note', 'ok', { tags: ['billing-migration'] }));
    expect(buildMarker(events, {}, tokenizer).topics).toContain('billing-migration');
  });

  it('is deterministic', () => {
    expect(buildMarker(span, { background }, tokenizer)).toEqual(buildMarker(span, { background }, tokenizer));
  });

  it('returns a frozen value', () => {
    const marker = buildMarker(span, {}, tokenizer);
    expect(Object.isFrozen(marker)).toBe(true);
    expect(Object.isFrozen(marker.topics)).toBe(true);
  });

  it('rejects an empty span or one that mixes sessions', () => {
    expect(invalidField(() => buildMarker([], {}, tokenizer))).toBe('evictedEvents');
    const other = makeEvent(99, 'user', 'x', { sessionId: 's2' as SessionId });
    expect(invalidField(() => buildMarker([span[0]!, other], {}, tokenizer))).toBe('evictedEvents');
  });
});

describe('createMarker', () => {
  const base = { fromTurn: 100, toTurn: 4000, sessionId: SESSION, level: 0, eventCount: 3901, firstTs: 'a', lastTs: 'b' };

  it('drops topics from the end until the rendered marker fits in 60 tokens', () => {
    const topics = Array.from({ length: 8 }, (_, i) => ({ text: `quarterly revenue forecast ${i}`, weight: 100 - i }));
    const marker = createMarker({ ...base, topics }, tokenizer);
    expect(tokenizer.count(renderMarker(marker))).toBeLessThanOrEqual(MARKER_MAX_TOKENS);
    expect(marker.topics.length).toBeGreaterThan(0);
    expect(marker.topics.length).toBeLessThan(8);
    expect(marker.topics).toEqual(topics.slice(0, marker.topics.length).map((t) => t.text));
  });

  it('cleans topics: no separators, at most 4 words and 40 characters', () => {
    const marker = createMarker(
      {
        ...base,
        topics: [
          { text: 'a, b [c]', weight: 3 },
          { text: 'one two three four five', weight: 2 },
          { text: 'x'.repeat(41), weight: 1 },
        ],
      },
      tokenizer,
    );
    expect(marker.topics).toEqual(['a b c', 'one two three four']);
  });

  it('drops a topic inside a chosen one and upgrades a chosen word to a phrase containing it', () => {
    const marker = createMarker(
      {
        ...base,
        topics: [
          { text: 'nginx', weight: 10 },
          { text: 'nginx config', weight: 8 },
          { text: 'config', weight: 7 },
          { text: 'src/app.ts', weight: 6 },
          { text: 'app.ts', weight: 5 },
        ],
      },
      tokenizer,
    );
    expect(marker.topics).toEqual(['nginx config', 'src/app.ts']);
    expect(marker.topicWeights).toEqual([10, 6]);
  });

  it('keeps zero topics valid', () => {
    const marker = createMarker({ ...base, topics: [] }, tokenizer);
    expect(marker.topics).toEqual([]);
    expect(toMarkerItem(marker, tokenizer).tokens).toBe(tokenizer.count('[Events T100-T4000 evicted. Use recall(query) to retrieve details.]'));
  });

  it('rejects out-of-range numbers, naming the field', () => {
    expect(invalidField(() => createMarker({ ...base, toTurn: 99, topics: [] }, tokenizer))).toBe('toTurn');
    expect(invalidField(() => createMarker({ ...base, eventCount: 0, topics: [] }, tokenizer))).toBe('eventCount');
    expect(invalidField(() => createMarker({ ...base, topics: [{ text: 'x', weight: -1 }] }, tokenizer))).toBe('topics[0].weight');
  });
});

describe('unionTopics', () => {
  it('adds weights of equal topics and counts of the same tool', () => {
    const a = createMarker(
      { fromTurn: 1, toTurn: 5, sessionId: SESSION, level: 0, eventCount: 5, firstTs: 'a', lastTs: 'b', topics: [
        { text: 'Bash x12', weight: 5 },
        { text: 'nginx', weight: 4 },
      ] },
      tokenizer,
    );
    const b = createMarker(
      { fromTurn: 6, toTurn: 9, sessionId: SESSION, level: 0, eventCount: 4, firstTs: 'c', lastTs: 'd', topics: [
        { text: 'NGINX', weight: 1 },
        { text: 'Bash x3', weight: 2 },
        { text: 'ENOENT', weight: 2 },
      ] },
      tokenizer,
    );
    expect(unionTopics([a, b])).toEqual([
      { text: 'Bash x15', weight: 7 },
      { text: 'nginx', weight: 5 },
      { text: 'ENOENT', weight: 2 },
    ]);
  });
});

describe('markerRangeKey', () => {
  it('names the session and turn range', () => {
    expect(markerRangeKey({ sessionId: SESSION, fromTurn: 3, toTurn: 9 })).toBe('s1:T3-T9');
  });
});
