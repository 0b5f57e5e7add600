-- memd schema, version 18: the search index written once per bulk job.
-- SQLite flushes FTS5's pending inserts at every statement savepoint, so a
-- job of many inserts wrote one index segment per row and then merged them:
-- 40 % of a team pull's time. While memd runs a large job in its own
-- transaction (a page of the team pull, a chunk of an import),
-- `memory_fts_hold` holds one row: a new memory outside a thread goes to
-- `memory_fts_pending` instead of the index, and the job indexes them all
-- in one statement before it ends. Both tables are empty outside such a job,
-- so another tool's insert is indexed at once, as before.
CREATE TABLE memory_fts_hold (
    id INTEGER PRIMARY KEY CHECK (id = 1)
);

CREATE TABLE memory_fts_pending (
    memory_id INTEGER PRIMARY KEY
);

DROP TRIGGER memories_ai;

CREATE TRIGGER memories_ai AFTER INSERT ON memories
BEGIN
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
    UPDATE memories
        SET changed_generation =
            (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
        WHERE id = NEW.id;
END;

CREATE TRIGGER memories_ai_fts AFTER INSERT ON memories
WHEN NEW.thread IS NOT NULL OR NOT EXISTS (SELECT 1 FROM memory_fts_hold)
BEGIN
    INSERT OR REPLACE INTO memories_fts (rowid, content, subject, ctx, date, ns)
        SELECT id, content, subject, ctx, date, ns FROM memories_fts_source WHERE id = NEW.id;
    -- Its neighbours' context now holds it.
    DELETE FROM memories_fts WHERE NEW.thread IS NOT NULL AND rowid IN
        (SELECT id FROM (SELECT id FROM memories WHERE namespace = NEW.namespace
             AND thread = NEW.thread AND thread_pos < NEW.thread_pos
             ORDER BY thread_pos DESC LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE namespace = NEW.namespace
             AND thread = NEW.thread AND thread_pos > NEW.thread_pos
             ORDER BY thread_pos LIMIT 2));
    INSERT INTO memories_fts (rowid, content, subject, ctx, date, ns)
        SELECT id, content, subject, ctx, date, ns FROM memories_fts_source
        WHERE NEW.thread IS NOT NULL AND id IN
        (SELECT id FROM (SELECT id FROM memories WHERE namespace = NEW.namespace
             AND thread = NEW.thread AND thread_pos < NEW.thread_pos
             ORDER BY thread_pos DESC LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE namespace = NEW.namespace
             AND thread = NEW.thread AND thread_pos > NEW.thread_pos
             ORDER BY thread_pos LIMIT 2));
END;

CREATE TRIGGER memories_ai_fts_held AFTER INSERT ON memories
WHEN NEW.thread IS NULL AND EXISTS (SELECT 1 FROM memory_fts_hold)
BEGIN
    INSERT OR IGNORE INTO memory_fts_pending (memory_id) VALUES (NEW.id);
END;
