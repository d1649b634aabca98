/** The artifact lifecycle's table in SQLite (memory/artifact-lifecycle.ts, ENGRAM Annex A.7); listed in migrations.ts. */
export const SQLITE_ARTIFACT_TIER_MIGRATION_SQL = `
  -- One row per artifact whose bytes moved to a file under <db>.cold/ (location: relative to it). The artifacts
  -- row keeps id, digest, sizes and media type; its data becomes empty in the same transaction as this insert.
  -- ON DELETE CASCADE: a purge that deletes an artifact deletes this row with it (the file is erased after commit).
  CREATE TABLE artifact_cold (
    artifact_id   TEXT PRIMARY KEY REFERENCES artifacts(id) ON DELETE CASCADE,
    location      TEXT NOT NULL,
    encoding      TEXT NOT NULL,
    stored_bytes  INTEGER NOT NULL,
    stored_sha256 TEXT NOT NULL,
    hot_bytes     INTEGER NOT NULL,
    moved_ms      INTEGER NOT NULL
  ) STRICT;
  CREATE TRIGGER artifact_cold_no_update BEFORE UPDATE ON artifact_cold
  BEGIN SELECT RAISE(ABORT, 'engram: cold artifact records are immutable'); END;
  CREATE TRIGGER artifact_cold_no_delete BEFORE DELETE ON artifact_cold
  WHEN NOT EXISTS (SELECT 1 FROM purge_in_progress)
  BEGIN SELECT RAISE(ABORT, 'engram: cold artifact records are deleted only by a privacy purge'); END;

  -- Artifacts stay immutable but for one change: dropping the hot bytes of an artifact whose cold copy is
  -- recorded, every other column unchanged.
  DROP TRIGGER artifacts_no_update;
  CREATE TRIGGER artifacts_no_update BEFORE UPDATE ON artifacts
  WHEN NOT (length(NEW.data) = 0 AND length(OLD.data) > 0
    AND NEW.id IS OLD.id AND NEW.sha256 IS OLD.sha256 AND NEW.size_bytes IS OLD.size_bytes
    AND NEW.stored_bytes IS OLD.stored_bytes AND NEW.encoding IS OLD.encoding AND NEW.media_type IS OLD.media_type
    AND NEW.created_ms IS OLD.created_ms
    AND EXISTS (SELECT 1 FROM artifact_cold WHERE artifact_id = OLD.id))
  BEGIN SELECT RAISE(ABORT, 'engram: artifacts are immutable'); END;
`;
