/**
 * The slice of a pooled connection (or of the pool itself) that the PostgreSQL store's statements use. A leaf of its
 * own so every postgres-*.ts file can take one without importing another's module.
 */
export interface PgRunner {
  query<R>(sql: string, params?: unknown[]): Promise<{ rows: R[]; rowCount?: number | null }>;
}
