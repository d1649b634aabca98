import { describe, expect, it } from 'vitest';
import { EngramError } from '../../errors.js';
import { toolErrorResult } from './errors.js';

const text = (r: ReturnType<typeof toolErrorResult>) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

describe('toolErrorResult', () => {
  const fault = new EngramError('STORAGE_ERROR', 'disk I/O error at /srv/engram/engram.db (SQLITE_IOERR)', { path: '/srv/engram/engram.db' });

  it('shows a server fault in full to a local caller (stdio)', () => {
    const r = toolErrorResult(fault);
    expect(text(r)).toContain('/srv/engram/engram.db');
    expect(r.isError).toBe(true);
  });

  it('hands a server fault to the server log and gives a remote caller only its code (MCP over HTTP)', () => {
    const logged: EngramError[] = [];
    const r = toolErrorResult(fault, { onServerFault: (e) => logged.push(e) });
    expect(logged).toEqual([fault]);
    expect(text(r)).toContain('STORAGE_ERROR');
    expect(JSON.stringify(r)).not.toContain('/srv/engram');
    const bug = toolErrorResult(new Error('undefined is not a function at Recaller.rank (/app/dist/memory/recall.js:120)'), { onServerFault: () => {} });
    expect(text(bug)).toContain('INTERNAL');
    expect(JSON.stringify(bug)).not.toContain('recall.js');
  });

  it('keeps a retryable store failure retryable, and leaves client errors untouched', () => {
    const busy = toolErrorResult(new EngramError('STORAGE_ERROR', 'database is locked: /srv/x.db', { retryable: true }), { onServerFault: () => {} });
    expect(text(busy)).toContain('retry this call');
    expect((busy.structuredContent as { error: { data: unknown } }).error.data).toEqual({ retryable: true });
    const bad = toolErrorResult(new EngramError('INVALID_INPUT', 'k: must be an integer', { field: 'k' }), { onServerFault: () => {} });
    expect(text(bad)).toContain('k: must be an integer');
  });

  it("tells an agent writing to another project's session not to retry", () => {
    const r = toolErrorResult(new EngramError('SCOPE_DENIED', 'session s belongs to another project', { field: 'sessionId' }));
    expect(text(r)).toContain('another project');
    expect(text(r)).toContain('Do not retry');
  });
});
