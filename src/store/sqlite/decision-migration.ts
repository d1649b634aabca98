/**
 * Decision records (consolidate/decision-records.ts) are rows of the summaries table of their own kind, so they share
 * its cold tier, full-text index, vectors, trust filter, purge and the trigger that refuses deletes; listed in
 * migrations.ts. Every existing row is a summary.
 */
export const SQLITE_DECISION_MIGRATION_SQL = `
  ALTER TABLE summaries ADD COLUMN kind TEXT NOT NULL DEFAULT 'summary' CHECK (kind IN ('summary', 'decision'));
  -- A decision's subject key: a later decision on the same subject of the project supersedes it.
  ALTER TABLE summaries ADD COLUMN subject TEXT;
  CREATE INDEX summaries_subject ON summaries (project, subject) WHERE subject IS NOT NULL;
`;
