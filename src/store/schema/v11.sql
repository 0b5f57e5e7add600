-- memd schema, version 11: threads, event time, and a search index that
-- knows a memory's context.
--
-- * `thread`, `thread_pos`: memories that come from one conversation or
--   session (a transcript, an agent's session) carry the thread's id and
--   their position in it. NULL for a memory that stands alone.
-- * `occurred_at`: when what the memory tells happened (a turn's time), if
--   it is not when it was stored.
-- * The search index gets two columns: `ctx`, the text of the memory's
--   neighbours in its thread (up to 2 before and 2 after, by position, in
--   the same namespace), so a turn is found through the words around it;
--   and `date`, the day of the memory's event (`occurred_at`, else
--   `created_at`) as words ("8 May 2023"). `memories_fts_source` computes
--   both; triggers keep the index in sync for every writer, and rewrite the
--   neighbours' rows when a thread changes.

ALTER TABLE memories ADD COLUMN thread TEXT;
ALTER TABLE memories ADD COLUMN thread_pos INTEGER;
ALTER TABLE memories ADD COLUMN occurred_at TEXT;

CREATE INDEX memories_thread ON memories (namespace, thread, thread_pos)
    WHERE thread IS NOT NULL;

CREATE VIEW memories_fts_source AS
SELECT m.id AS id, m.content AS content, m.subject AS subject,
    CASE WHEN m.thread IS NULL OR m.thread_pos IS NULL THEN '' ELSE
        coalesce((SELECT group_concat(content, ' ') FROM
            (SELECT p.content FROM memories p
             WHERE p.namespace = m.namespace AND p.thread = m.thread
                 AND p.thread_pos < m.thread_pos
             ORDER BY p.thread_pos DESC LIMIT 2)), '')
        || ' ' ||
        coalesce((SELECT group_concat(content, ' ') FROM
            (SELECT n.content FROM memories n
             WHERE n.namespace = m.namespace AND n.thread = m.thread
                 AND n.thread_pos > m.thread_pos
             ORDER BY n.thread_pos LIMIT 2)), '')
    END AS ctx,
    coalesce(CAST(strftime('%d', coalesce(m.occurred_at, m.created_at)) AS INTEGER)
        || ' ' ||
        CASE strftime('%m', coalesce(m.occurred_at, m.created_at))
            WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March'
            WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June'
            WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September'
            WHEN '10' THEN 'October' WHEN '11' THEN 'November' WHEN '12' THEN 'December'
        END
        || ' ' || strftime('%Y', coalesce(m.occurred_at, m.created_at)), '') AS date
FROM memories m;

DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content,
    subject,
    ctx,
    date,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts (rowid, content, subject, ctx, date)
    SELECT id, content, subject, ctx, date FROM memories_fts_source;

DROP TRIGGER memories_ai;
CREATE TRIGGER memories_ai AFTER INSERT ON memories
BEGIN
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
    UPDATE memories
        SET changed_generation =
            (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
        WHERE id = NEW.id;
    INSERT OR REPLACE INTO memories_fts (rowid, content, subject, ctx, date)
        SELECT id, content, subject, ctx, date FROM memories_fts_source WHERE id = NEW.id;
    -- Its neighbours' context now holds it.
    DELETE FROM memories_fts WHERE NEW.thread IS NOT NULL AND rowid IN
        (SELECT id FROM (SELECT id FROM memories WHERE namespace = NEW.namespace
             AND thread = NEW.thread AND thread_pos < NEW.thread_pos
             ORDER BY thread_pos DESC LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE namespace = NEW.namespace
             AND thread = NEW.thread AND thread_pos > NEW.thread_pos
             ORDER BY thread_pos LIMIT 2));
    INSERT INTO memories_fts (rowid, content, subject, ctx, date)
        SELECT id, content, subject, ctx, date FROM memories_fts_source
        WHERE NEW.thread IS NOT NULL AND id IN
        (SELECT id FROM (SELECT id FROM memories WHERE namespace = NEW.namespace
             AND thread = NEW.thread AND thread_pos < NEW.thread_pos
             ORDER BY thread_pos DESC LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE namespace = NEW.namespace
             AND thread = NEW.thread AND thread_pos > NEW.thread_pos
             ORDER BY thread_pos LIMIT 2));
END;

-- Text, thread, position or event time changed: the row's own entry, and
-- the entries of its neighbours before and after the change.
DROP TRIGGER memories_au_fts;
CREATE TRIGGER memories_au_fts AFTER UPDATE OF id, content, subject, namespace, thread,
    thread_pos, occurred_at, created_at ON memories
WHEN OLD.content IS NOT NEW.content
  OR OLD.subject IS NOT NEW.subject
  OR OLD.id IS NOT NEW.id
  OR OLD.namespace IS NOT NEW.namespace
  OR OLD.thread IS NOT NEW.thread
  OR OLD.thread_pos IS NOT NEW.thread_pos
  OR OLD.occurred_at IS NOT NEW.occurred_at
  OR OLD.created_at IS NOT NEW.created_at
BEGIN
    DELETE FROM memories_fts WHERE rowid = OLD.id OR rowid IN
        (SELECT id FROM (SELECT id FROM memories WHERE OLD.thread IS NOT NULL
             AND namespace = OLD.namespace AND thread = OLD.thread
             AND thread_pos < OLD.thread_pos AND id IS NOT NEW.id
             ORDER BY thread_pos DESC LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE OLD.thread IS NOT NULL
             AND namespace = OLD.namespace AND thread = OLD.thread
             AND thread_pos > OLD.thread_pos AND id IS NOT NEW.id
             ORDER BY thread_pos LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE NEW.thread IS NOT NULL
             AND namespace = NEW.namespace AND thread = NEW.thread
             AND thread_pos < NEW.thread_pos
             ORDER BY thread_pos DESC LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE NEW.thread IS NOT NULL
             AND namespace = NEW.namespace AND thread = NEW.thread
             AND thread_pos > NEW.thread_pos
             ORDER BY thread_pos LIMIT 2));
    INSERT OR REPLACE INTO memories_fts (rowid, content, subject, ctx, date)
        SELECT id, content, subject, ctx, date FROM memories_fts_source
        WHERE id = NEW.id OR id IN
        (SELECT id FROM (SELECT id FROM memories WHERE OLD.thread IS NOT NULL
             AND namespace = OLD.namespace AND thread = OLD.thread
             AND thread_pos < OLD.thread_pos AND id IS NOT NEW.id
             ORDER BY thread_pos DESC LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE OLD.thread IS NOT NULL
             AND namespace = OLD.namespace AND thread = OLD.thread
             AND thread_pos > OLD.thread_pos AND id IS NOT NEW.id
             ORDER BY thread_pos LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE NEW.thread IS NOT NULL
             AND namespace = NEW.namespace AND thread = NEW.thread
             AND thread_pos < NEW.thread_pos
             ORDER BY thread_pos DESC LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE NEW.thread IS NOT NULL
             AND namespace = NEW.namespace AND thread = NEW.thread
             AND thread_pos > NEW.thread_pos
             ORDER BY thread_pos LIMIT 2));
END;

-- The thread, position and event time are part of the memory: changing
-- them moves rev like any other meaningful column.
DROP TRIGGER memories_au;
CREATE TRIGGER memories_au AFTER UPDATE ON memories
WHEN OLD.content IS NOT NEW.content
  OR OLD.category IS NOT NEW.category
  OR OLD.subject IS NOT NEW.subject
  OR OLD.tier IS NOT NEW.tier
  OR OLD.scope IS NOT NEW.scope
  OR OLD.scope_owner IS NOT NEW.scope_owner
  OR OLD.namespace IS NOT NEW.namespace
  OR OLD.status IS NOT NEW.status
  OR OLD.pinned IS NOT NEW.pinned
  OR OLD.importance IS NOT NEW.importance
  OR OLD.confidence IS NOT NEW.confidence
  OR OLD.superseded_by IS NOT NEW.superseded_by
  OR OLD.superseded_at IS NOT NEW.superseded_at
  OR OLD.metadata IS NOT NEW.metadata
  OR OLD.expires_at IS NOT NEW.expires_at
  OR OLD.thread IS NOT NEW.thread
  OR OLD.thread_pos IS NOT NEW.thread_pos
  OR OLD.occurred_at IS NOT NEW.occurred_at
  OR OLD.id IS NOT NEW.id
  OR OLD.uid IS NOT NEW.uid
BEGIN
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation, tags)
    VALUES (OLD.id, OLD.uid, 'update', OLD.rev, OLD.namespace, OLD.scope, OLD.scope_owner,
        OLD.content, OLD.subject, OLD.category, OLD.tier, OLD.importance, OLD.confidence,
        OLD.pinned, OLD.status, OLD.metadata, OLD.superseded_by, OLD.superseded_at,
        OLD.expires_at, OLD.updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'),
        coalesce((SELECT tags FROM memory_tag_edit WHERE memory_id = OLD.id),
            (SELECT group_concat(tag, char(10)) FROM
                (SELECT tag FROM memory_tags WHERE memory_id = OLD.id ORDER BY tag)), ''));
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
    UPDATE memories
        SET rev = OLD.rev + 1,
            updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
            changed_generation =
                (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
        WHERE id = NEW.id;
END;

DROP TRIGGER memories_ad;
CREATE TRIGGER memories_ad AFTER DELETE ON memories
BEGIN
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation, tags)
    VALUES (OLD.id, OLD.uid, 'delete', OLD.rev, OLD.namespace, OLD.scope, OLD.scope_owner,
        OLD.content, OLD.subject, OLD.category, OLD.tier, OLD.importance, OLD.confidence,
        OLD.pinned, OLD.status, OLD.metadata, OLD.superseded_by, OLD.superseded_at,
        OLD.expires_at, OLD.updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'),
        coalesce((SELECT group_concat(tag, char(10)) FROM
            (SELECT tag FROM memory_tags WHERE memory_id = OLD.id ORDER BY tag)), ''));
    DELETE FROM memory_tags WHERE memory_id = OLD.id;
    DELETE FROM memories_fts WHERE rowid = OLD.id;
    -- Its neighbours' context no longer holds it.
    DELETE FROM memories_fts WHERE OLD.thread IS NOT NULL AND rowid IN
        (SELECT id FROM (SELECT id FROM memories WHERE namespace = OLD.namespace
             AND thread = OLD.thread AND thread_pos < OLD.thread_pos
             ORDER BY thread_pos DESC LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE namespace = OLD.namespace
             AND thread = OLD.thread AND thread_pos > OLD.thread_pos
             ORDER BY thread_pos LIMIT 2));
    INSERT INTO memories_fts (rowid, content, subject, ctx, date)
        SELECT id, content, subject, ctx, date FROM memories_fts_source
        WHERE OLD.thread IS NOT NULL AND id IN
        (SELECT id FROM (SELECT id FROM memories WHERE namespace = OLD.namespace
             AND thread = OLD.thread AND thread_pos < OLD.thread_pos
             ORDER BY thread_pos DESC LIMIT 2)
         UNION ALL
         SELECT id FROM (SELECT id FROM memories WHERE namespace = OLD.namespace
             AND thread = OLD.thread AND thread_pos > OLD.thread_pos
             ORDER BY thread_pos LIMIT 2));
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
END;
