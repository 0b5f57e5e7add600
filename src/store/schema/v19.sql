-- memd schema, version 19: captured turns marked in the search index.
-- A captured turn's `ns` column holds a second token, `nscapture0` (no
-- namespace token can be it: those are `ns`, hex digits, `0`), so that
-- ranking tells a captured turn from a kept memory inside FTS5 and weighs
-- each one's words by how rare they are among rows of its own kind: a year
-- of captured conversation beside a few thousand kept memories no longer
-- changes how the kept ones rank among themselves.
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
        || CASE WHEN m.source = 'capture' THEN ' nscapture0' ELSE '' END AS ns
FROM memories m;

-- A row that becomes, or stops being, a captured turn is indexed again (a
-- row still waiting for a bulk job's index is indexed by that job).
CREATE TRIGGER memories_au_fts_class AFTER UPDATE OF source ON memories
WHEN (OLD.source IS 'capture') IS NOT (NEW.source IS 'capture')
  AND NOT EXISTS (SELECT 1 FROM memory_fts_pending WHERE memory_id = NEW.id)
BEGIN
    INSERT OR REPLACE INTO memories_fts (rowid, content, subject, ctx, date, ns)
        SELECT id, content, subject, ctx, date, ns FROM memories_fts_source WHERE id = NEW.id;
END;

INSERT OR REPLACE INTO memories_fts (rowid, content, subject, ctx, date, ns)
    SELECT id, content, subject, ctx, date, ns FROM memories_fts_source
    WHERE id IN (SELECT id FROM memories WHERE source = 'capture');
