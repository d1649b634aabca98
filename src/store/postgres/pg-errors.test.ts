import { describe, expect, it } from 'vitest';
import { redactPgUrl, translatePgError } from './pg-errors.js';

const URL_SHOWN = 'postgres://app:***@db.internal:5432/mem';
const serverError = (code: string, extra: Record<string, unknown> = {}): Error =>
  Object.assign(new Error(`server said ${code}`), { code, severity: 'ERROR', ...extra });
const systemError = (code: string): Error => Object.assign(new Error(`connect ${code}`), { code, errno: -1, syscall: 'connect' });

describe('translatePgError', () => {
  it('marks deadlocks, serialization failures and restarts retryable by SQLSTATE', () => {
    for (const code of ['40P01', '40001', '57P01', '08006', '53300']) {
      const e = translatePgError(serverError(code), 'append failed', URL_SHOWN);
      expect(e.code, code).toBe('STORAGE_ERROR');
      expect(e.data, code).toMatchObject({ retryable: true, sqlstate: code });
    }
  });

  it('tells a socket error from a SQLSTATE of the same shape (EPIPE)', () => {
    const e = translatePgError(systemError('EPIPE'), 'append failed', URL_SHOWN);
    expect(e.data).toMatchObject({ retryable: true, systemCode: 'EPIPE' });
    expect(e.data.sqlstate).toBeUndefined();
  });

  it('maps a missing database to NOT_FOUND and bad credentials to a non-retryable STORAGE_ERROR', () => {
    expect(translatePgError(serverError('3D000'), 'open', URL_SHOWN).code).toBe('NOT_FOUND');
    const auth = translatePgError(serverError('28P01'), 'open', URL_SHOWN);
    expect(auth.code).toBe('STORAGE_ERROR');
    expect(auth.data.retryable).toBe(false);
    expect(auth.message).toContain(URL_SHOWN);
  });

  it('treats a code-less driver error as retryable only while connecting', () => {
    expect(translatePgError(new Error('timeout exceeded when trying to connect'), 'open', URL_SHOWN, 'connect').data.retryable).toBe(true);
    expect(translatePgError(new Error('Connection terminated unexpectedly'), 'append', URL_SHOWN, 'query').data.retryable).toBe(false);
  });

  it('names the constraint of a unique violation', () => {
    const e = translatePgError(serverError('23505', { constraint: 'events_session_turn' }), 'append failed', URL_SHOWN);
    expect(e.data).toMatchObject({ constraint: 'events_session_turn', retryable: true });
  });
});

describe('redactPgUrl', () => {
  it('hides the password in the authority and in a password parameter', () => {
    expect(redactPgUrl('postgres://app:s3cr%40t@db:5432/mem')).toBe('postgres://app:***@db:5432/mem');
    expect(redactPgUrl('postgresql://app@db/mem?password=s3cret&sslmode=require')).not.toContain('s3cret');
  });

  it('shows nothing of a URL it cannot parse', () => {
    expect(redactPgUrl('postgres://app:pw@[bad')).toBe('(invalid URL)');
  });
});
