-- memd schema, version 20: ingested conversation turns, a kind of their own.
-- `memd ingest` stores a transcript's turns with `source = 'ingest'` (trust
-- low, as a captured turn: what was said, not what a person chose to keep).
-- Before this version they were `source = 'user'`: a person's row placed
-- in a thread. Only `ingest` and `add --thread` place a row there, and a
-- thread position is a turn of a conversation, so those rows are marked.
-- In the search index an ingested turn carries the captured turns' mark:
-- it is weighed among conversation turns, not among kept notes.
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
    'ns' || hex(m.namespace) || '0'
        || CASE WHEN m.source IN ('capture', 'ingest') THEN ' nscapture0' ELSE '' END AS ns
FROM memories m;

DROP TRIGGER memories_au_fts_class;
CREATE TRIGGER memories_au_fts_class AFTER UPDATE OF source ON memories
WHEN (OLD.source IN ('capture', 'ingest')) IS NOT (NEW.source IN ('capture', 'ingest'))
  AND NOT EXISTS (SELECT 1 FROM memory_fts_pending WHERE memory_id = NEW.id)
BEGIN
    INSERT OR REPLACE INTO memories_fts (rowid, content, subject, ctx, date, ns)
        SELECT id, content, subject, ctx, date, ns FROM memories_fts_source WHERE id = NEW.id;
END;

-- The trigger above re-indexes each marked row.
UPDATE memories SET source = 'ingest'
    WHERE source = 'user' AND thread IS NOT NULL AND thread_pos IS NOT NULL;
UPDATE memory_sources SET source = 'ingest'
    WHERE n = 0 AND source = 'user'
      AND memory_id IN (SELECT id FROM memories WHERE source = 'ingest');

