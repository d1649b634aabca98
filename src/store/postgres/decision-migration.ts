/**
 * Decision records (consolidate/decision-records.ts) are rows of the summaries table of their own kind, so they share
 * its cold tier, full-text column, vectors, trust filter, purge and the trigger that refuses deletes; listed in
 * migrations.ts. Every existing row is a summary.
 */
export function postgresDecisionMigrationSql(s: string): string {
  return `
    ALTER TABLE ${s}.summaries ADD COLUMN kind text NOT NULL DEFAULT 'summary' CHECK (kind IN ('summary', 'decision'));
    -- A decision's subject key: a later decision on the same subject of the project supersedes it.
    ALTER TABLE ${s}.summaries ADD COLUMN subject text;
    CREATE INDEX summaries_subject ON ${s}.summaries (project, subject) WHERE subject IS NOT NULL;
  `;
}
