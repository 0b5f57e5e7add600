-- memd schema, version 17: provenance. Every memory states where it came
-- from — a person through the CLI or the viewer, an agent through MCP, its
-- hooks or the HTTP API, capture, an import, another tool, another
-- machine's role — and a merge of a duplicate keeps every source: row 0 is
-- the memory's origin (made by the insert trigger from the row itself, and
-- completed by memd where it knows more), each merge appends one.
CREATE TABLE memory_sources (
    memory_id INTEGER NOT NULL,
    n         INTEGER NOT NULL,
    -- user, agent, capture, import, external, system.
    source    TEXT NOT NULL,
    -- cli, viewer, http, mcp, hook, agent-cli, client, team; NULL: not known
    -- (another tool's insert, a row older than this version).
    via       TEXT,
    agent     TEXT,
    session   TEXT,
    -- Another machine (team memory) and the PostgreSQL role that wrote it.
    machine   TEXT,
    role      TEXT,
    at        TEXT NOT NULL,
    PRIMARY KEY (memory_id, n)
) WITHOUT ROWID;

INSERT INTO memory_sources (memory_id, n, source, agent, at)
    SELECT id, 0, source, created_by, created_at FROM memories;
UPDATE memory_sources SET
    session = (SELECT a.session FROM memory_authors a WHERE a.memory_id = memory_sources.memory_id
               AND a.external = 0 ORDER BY a.generation LIMIT 1),
    machine = (SELECT a.machine FROM memory_authors a WHERE a.memory_id = memory_sources.memory_id
               AND a.external = 0 ORDER BY a.generation LIMIT 1);

CREATE TRIGGER memories_ai_source AFTER INSERT ON memories
BEGIN
    INSERT OR REPLACE INTO memory_sources (memory_id, n, source, agent, at)
    VALUES (NEW.id, 0, NEW.source, NEW.created_by, NEW.created_at);
END;

CREATE TRIGGER memories_ad_source AFTER DELETE ON memories
BEGIN
    DELETE FROM memory_sources WHERE memory_id = OLD.id;
END;

CREATE TRIGGER memories_au_source AFTER UPDATE OF id ON memories
WHEN OLD.id IS NOT NEW.id
BEGIN
    UPDATE memory_sources SET memory_id = NEW.id WHERE memory_id = OLD.id;
END;
