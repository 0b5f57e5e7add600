-- memd schema, version 22: an insert dirties no page of the empty stage.
-- SQLite empties a table named in a DELETE without a WHERE clause by
-- clearing its root page: a page written to the WAL by every insert into
-- memories, with the stage empty. With a WHERE clause nothing is written
-- when there is nothing to delete; the trigger does what it did.
DROP TRIGGER memories_bi_stage;
CREATE TRIGGER memories_bi_stage BEFORE INSERT ON memories
BEGIN
    DELETE FROM memory_replace_stage WHERE true;
    INSERT INTO memory_replace_stage (memory_id, uid, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation, tags)
    SELECT id, uid, rev, namespace, scope, scope_owner, content, subject, category,
        tier, importance, confidence, pinned, status, metadata, superseded_by,
        superseded_at, expires_at, updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'),
        coalesce((SELECT group_concat(tag, char(10)) FROM
            (SELECT tag FROM memory_tags t WHERE t.memory_id = memories.id ORDER BY tag)), '')
    FROM memories WHERE id = NEW.id OR uid = NEW.uid;
END;
