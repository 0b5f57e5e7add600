-- memd schema, version 2: an index in the order a session's memory block is
-- built (ARCHITECTURE.md "Frozen snapshot"), so a cold inject reads only the rows
-- that fit its budget instead of sorting the namespace. Partial on active
-- rows, covering the visibility columns so counting eligible rows needs no
-- table lookups.
CREATE INDEX memories_inject ON memories (
    namespace,
    status,
    pinned DESC,
    tier,
    (CASE importance WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END),
    category,
    created_at,
    id,
    scope,
    scope_owner,
    expires_at,
    superseded_by
) WHERE superseded_by IS NULL;
