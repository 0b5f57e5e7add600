-- memd schema, version 23: code citations. A memory's citations live in its
-- metadata (`cites`); the memories that have any are found through a partial
-- index (LIKE, not a JSON function: a row another tool writes with metadata
-- that is not JSON must still insert). The last verdict a client reported on
-- each citation is kept per memory and citation; it is local to this
-- machine's checkout and leaves with its memory, however the row goes.
CREATE TABLE citation_checks (
    memory_id  INTEGER NOT NULL,
    cite       TEXT NOT NULL,
    verdict    TEXT NOT NULL
               CHECK (verdict IN ('fresh', 'moved', 'changed', 'gone', 'unchecked')),
    now_path   TEXT,
    now_start  INTEGER,
    now_end    INTEGER,
    reason     TEXT,
    checked_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (memory_id, cite)
) WITHOUT ROWID;
CREATE INDEX memories_cited ON memories (namespace) WHERE metadata LIKE '%"cites"%';
CREATE TRIGGER memories_ad_citation_checks AFTER DELETE ON memories
BEGIN
    DELETE FROM citation_checks WHERE memory_id = OLD.id;
END;
