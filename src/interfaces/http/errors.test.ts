import { describe, expect, it } from 'vitest';
import { ERROR_CODES, EngramError } from '../../errors.js';
import { httpStatusFor, toHttpError } from './errors.js';

describe('toHttpError', () => {
  it('gives every error code a status', () => {
    for (const code of ERROR_CODES) expect(httpStatusFor(code)).toBeGreaterThanOrEqual(400);
  });

  it('passes client errors through with their field', () => {
    const e = toHttpError(new EngramError('INVALID_INPUT', 'events[2].kind: bad', { field: 'events[2].kind' }));
    expect(e).toMatchObject({ status: 400, isServerFault: false, body: { error: { code: 'INVALID_INPUT', message: 'events[2].kind: bad', data: { field: 'events[2].kind' } } } });
  });

  it('answers a body in a format the route does not read with 415, as a client error', () => {
    const e = toHttpError(new EngramError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type: text/plain is not accepted here', { field: 'Content-Type', accepted: ['application/json'] }));
    expect(e).toMatchObject({ status: 415, isServerFault: false, body: { error: { code: 'UNSUPPORTED_MEDIA_TYPE', data: { accepted: ['application/json'] } } } });
  });

  it('asks for bearer credentials on 401', () => {
    expect(toHttpError(new EngramError('UNAUTHENTICATED', 'no token')).headers).toEqual({ 'WWW-Authenticate': 'Bearer realm="engram"' });
  });

  it('keeps internals of server faults out of the response', () => {
    const storage = toHttpError(new EngramError('STORAGE_ERROR', 'SQLITE_IOERR at /home/me/.engram/engram.db', { sqliteCode: 'SQLITE_IOERR' }));
    expect(storage.status).toBe(500);
    expect(JSON.stringify(storage.body)).not.toContain('/home/me');
    const bug = toHttpError(new TypeError("Cannot read properties of undefined (reading 'x')"));
    expect(bug).toMatchObject({ status: 500, isServerFault: true, body: { error: { code: 'INTERNAL', data: {} } } });
    expect(JSON.stringify(bug.body)).not.toContain('reading');
  });

  it('answers a retryable storage failure with 503 and Retry-After', () => {
    const e = toHttpError(new EngramError('STORAGE_ERROR', 'locked by pid 4242', { retryable: true }));
    expect(e.status).toBe(503);
    expect(e.headers['Retry-After']).toBe('1');
    expect(JSON.stringify(e.body)).not.toContain('4242');
  });
});
