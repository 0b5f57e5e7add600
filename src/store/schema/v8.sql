-- memd schema, version 8: every row an `INSERT OR REPLACE` removes.
--
-- A REPLACE deletes each row the new one clashes with, on `id` or on `uid`,
-- without firing delete triggers (a shell runs without recursive triggers).
-- The BEFORE INSERT triggers of versions 1, 5 and 7 knew only the `id`
-- clash, and acted before SQLite decided the conflict: a `uid` clash lost
-- the old row's revision and left its index entry, tags and vector behind,
-- and an `INSERT OR IGNORE` over an existing id dropped the kept row's tags.
-- Now the rows a new one clashes with are staged before the insert and
-- handled after it, only when the insert really happened: their old values
-- become a 'replace' revision and what hangs off them goes.
DROP TRIGGER memories_bi_replace;
DROP TRIGGER memories_bi_replace_links;
DROP TRIGGER memories_bi_vector;

CREATE TABLE memory_replace_stage (
    memory_id     INTEGER PRIMARY KEY,
    uid           TEXT,
    rev           INTEGER,
    namespace     TEXT,
    scope         TEXT,
    scope_owner   TEXT,
    content       TEXT,
    subject       TEXT,
    category      TEXT,
    tier          INTEGER,
    importance    TEXT,
    confidence    REAL,
    pinned        INTEGER,
    status        TEXT,
    metadata      TEXT,
    superseded_by INTEGER,
    superseded_at TEXT,
    expires_at    TEXT,
    updated_at    TEXT,
    generation    INTEGER
);

CREATE TRIGGER memories_bi_stage BEFORE INSERT ON memories
BEGIN
    DELETE FROM memory_replace_stage;
    INSERT INTO memory_replace_stage
    SELECT id, uid, rev, namespace, scope, scope_owner, content, subject, category,
        tier, importance, confidence, pinned, status, metadata, superseded_by,
        superseded_at, expires_at, updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
    FROM memories WHERE id = NEW.id OR uid = NEW.uid;
END;

CREATE TRIGGER memories_ai_replaced AFTER INSERT ON memories
WHEN EXISTS (SELECT 1 FROM memory_replace_stage)
BEGIN
    DELETE FROM memory_replace_stage WHERE memory_id IS NOT NEW.id
        AND memory_id IN (SELECT id FROM memories);
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation)
    SELECT memory_id, uid, 'replace', rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation
    FROM memory_replace_stage;
    DELETE FROM memory_tags WHERE memory_id IN (SELECT memory_id FROM memory_replace_stage);
    DELETE FROM memory_sketch WHERE memory_id IN (SELECT memory_id FROM memory_replace_stage);
    DELETE FROM memory_vectors WHERE memory_id IN (SELECT memory_id FROM memory_replace_stage);
    DELETE FROM memory_similar WHERE memory_id IN (SELECT memory_id FROM memory_replace_stage)
        OR similar_to IN (SELECT memory_id FROM memory_replace_stage WHERE memory_id IS NOT NEW.id);
    DELETE FROM memories_fts WHERE rowid IN
        (SELECT memory_id FROM memory_replace_stage WHERE memory_id IS NOT NEW.id);
    DELETE FROM memory_replace_stage;
END;
