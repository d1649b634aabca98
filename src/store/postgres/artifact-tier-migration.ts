/**
 * The artifact lifecycle's table on PostgreSQL (memory/artifact-lifecycle.ts, ENGRAM Annex A.7); listed in
 * migrations.ts. Cold copies live in the database, not in a directory: several servers share one PostgreSQL
 * (leased consolidation jobs), and a directory would have to be one they all mount; in a table the copies are in
 * every backup and replica with their rows, and a purge erases them in its own transaction.
 */
export function postgresArtifactTierMigrationSql(s: string): string {
  return `
    -- One row per artifact whose bytes moved here, compressed harder. The artifacts row keeps id, digest, sizes and
    -- media type; its data becomes empty in the same transaction as this insert. ON DELETE CASCADE: a purge that
    -- deletes an artifact deletes its cold copy with it.
    CREATE TABLE ${s}.artifact_cold (
      artifact_id   text COLLATE "C" PRIMARY KEY REFERENCES ${s}.artifacts (id) ON DELETE CASCADE,
      encoding      text NOT NULL,
      stored_bytes  bigint NOT NULL,
      stored_sha256 text NOT NULL,
      hot_bytes     bigint NOT NULL,
      moved_ms      bigint NOT NULL,
      data          bytea NOT NULL
    );
    -- Already brotli: TOAST compression would spend CPU for nothing.
    ALTER TABLE ${s}.artifact_cold ALTER COLUMN data SET STORAGE EXTERNAL;
    CREATE TRIGGER artifact_cold_immutable BEFORE UPDATE OR DELETE ON ${s}.artifact_cold
      FOR EACH ROW EXECUTE FUNCTION ${s}.engram_refuse_change();
    CREATE TRIGGER artifact_cold_no_truncate BEFORE TRUNCATE ON ${s}.artifact_cold
      FOR EACH STATEMENT EXECUTE FUNCTION ${s}.engram_refuse_change();

    -- Artifacts stay immutable but for one change, made by a transaction that sets engram.lifecycle to this
    -- schema's name (transaction-local, as engram.purge): dropping the hot bytes of an artifact whose cold copy is
    -- recorded, every other column unchanged. A purge may still delete artifacts.
    CREATE FUNCTION ${s}.engram_artifact_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF current_setting('engram.purge', true) = TG_TABLE_SCHEMA THEN
        IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
        RETURN NEW;
      END IF;
      IF TG_OP = 'UPDATE' AND current_setting('engram.lifecycle', true) = TG_TABLE_SCHEMA
         AND octet_length(NEW.data) = 0 AND octet_length(OLD.data) > 0
         AND (NEW.id, NEW.sha256, NEW.size_bytes, NEW.stored_bytes, NEW.encoding, NEW.media_type, NEW.created_ms)
             IS NOT DISTINCT FROM (OLD.id, OLD.sha256, OLD.size_bytes, OLD.stored_bytes, OLD.encoding, OLD.media_type, OLD.created_ms)
         AND EXISTS (SELECT 1 FROM ${s}.artifact_cold c WHERE c.artifact_id = OLD.id) THEN
        RETURN NEW;
      END IF;
      RAISE EXCEPTION 'engram: % refused on %: stored events and artifacts are immutable', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'EG001';
    END $$;
    DROP TRIGGER artifacts_immutable ON ${s}.artifacts;
    CREATE TRIGGER artifacts_immutable BEFORE UPDATE OR DELETE ON ${s}.artifacts
      FOR EACH ROW EXECUTE FUNCTION ${s}.engram_artifact_guard();
  `;
}
