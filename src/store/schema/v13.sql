-- memd schema, version 13: a search index that stays fast and fair on long
-- turns.
--
-- * A neighbour's text in a memory's thread context (`ctx`) is its first 450
--   characters. FTS5's BM25 normalizes a row by the length of all its
--   columns together, so a short turn between two long ones (a user's
--   question between an assistant's long answers) was ranked as if it were
--   long itself; and every long turn was copied whole into four other rows.
-- * `ns`, the memory's namespace as one token (`ns` + hex of its bytes +
--   `0`: letters and digits only, never changed by the stemmer), lets a
--   search match only the namespaces it reads inside the index, instead of
--   ranking every namespace's matches and dropping the others afterwards.
--   Its BM25 weight is 0.
--
-- The view computes both; the triggers that write the index take them from
-- it, for every writer.

DROP VIEW memories_fts_source;
CREATE VIEW memories_fts_source AS
SELECT m.id AS id, m.content AS content, m.subject AS subject,
    CASE WHEN m.thread IS NULL OR m.thread_pos IS NULL THEN '' ELSE
        coalesce((SELECT group_concat(content, ' ') FROM
            (SELECT substr(p.content, 1, 450) AS content FROM memories p
             WHERE p.namespace = m.namespace AND p.thread = m.thread
                 AND p.thread_pos < m.thread_pos
             ORDER BY p.thread_pos DESC LIMIT 2)), '')
        || ' ' ||
        coalesce((SELECT group_concat(content, ' ') FROM
            (SELECT substr(n.content, 1, 450) AS content FROM memories n
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
        || ' ' || strftime('%Y', coalesce(m.occurred_at, m.created_at)), '') AS date,
    'ns' || hex(m.namespace) || '0' AS ns
FROM memories m;

DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content,
    subject,
    ctx,
    date,
    ns,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts (rowid, content, subject, ctx, date, ns)
    SELECT id, content, subject, ctx, date, ns FROM memories_fts_source;

DROP TRIGGER memories_ai;
CREATE TRIGGER memories_ai AFTER INSERT ON memories
BEGIN
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
    UPDATE memories
        SET changed_generation =
            (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
        WHERE id = NEW.id;
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
    INSERT OR REPLACE INTO memories_fts (rowid, content, subject, ctx, date, ns)
        SELECT id, content, subject, ctx, date, ns FROM memories_fts_source
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
    INSERT INTO memories_fts (rowid, content, subject, ctx, date, ns)
        SELECT id, content, subject, ctx, date, ns FROM memories_fts_source
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
