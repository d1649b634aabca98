/**
 * Summaries are never deleted on PostgreSQL either (listed in migrations.ts): a summary that is replaced, pruned or
 * purged goes to the cold tier, and only a privacy purge may delete rows (its transaction sets engram.purge, see
 * postgres-purge.ts). SQLite has had the same rule since its summary migration (trigger summaries_no_delete).
 */
export function postgresSummaryGuardMigrationSql(s: string): string {
  return `
    CREATE FUNCTION ${s}.engram_summary_refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_LEVEL = 'ROW' AND current_setting('engram.purge', true) = TG_TABLE_SCHEMA THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION 'engram: % refused on %: summaries are never deleted (they go to the cold tier)', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'EG001';
    END $$;
    CREATE TRIGGER summaries_no_delete BEFORE DELETE ON ${s}.summaries
      FOR EACH ROW EXECUTE FUNCTION ${s}.engram_summary_refuse_delete();
    -- TRUNCATE stays refused even in a purge (the statement-level branch always raises).
    CREATE TRIGGER summaries_no_truncate BEFORE TRUNCATE ON ${s}.summaries
      FOR EACH STATEMENT EXECUTE FUNCTION ${s}.engram_summary_refuse_delete();
  `;
}
