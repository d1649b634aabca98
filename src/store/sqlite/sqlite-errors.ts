import { EngramError } from '../../errors.js';

/** Maps better-sqlite3 errors (which carry SQLite result codes in `code`) to Engram codes. */
export function translateSqliteError(err: unknown, context: string): EngramError {
  const code = (err as { code?: string }).code ?? '';
  const message = err instanceof Error ? err.message : String(err);
  if (code === 'SQLITE_NOTADB') return new EngramError('NOT_AN_ENGRAM_STORE', `${context}: not a database`, { sqliteCode: code }, { cause: err });
  if (code.startsWith('SQLITE_BUSY')) {
    return new EngramError('STORAGE_ERROR', `${context}: the store is locked by another process (${message})`, { sqliteCode: code, retryable: true }, { cause: err });
  }
  if (code === 'SQLITE_ERROR' && /fts5/i.test(message)) {
    return new EngramError('INVALID_INPUT', `${context}: the search query could not be parsed (${message})`, { field: 'query', sqliteCode: code }, { cause: err });
  }
  return new EngramError('STORAGE_ERROR', `${context}: ${message}`, { sqliteCode: code }, { cause: err });
}

export function* chunks<T>(items: T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}
