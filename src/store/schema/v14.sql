-- memd schema, version 14: who made each version of a memory.
--
-- `memory_authors` kept only the author of a row's last change (what the row
-- rule's `changed_by` names). It now keeps one row per change, keyed by the
-- generation of the change, with the rev it produced, so a memory's history
-- says who made each version. Rows are removed with their memory, as before.
CREATE TABLE memory_authors_v14 (
    memory_id  INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    session    TEXT NOT NULL,
    agent      TEXT NOT NULL,
    machine    TEXT,
    external   INTEGER NOT NULL DEFAULT 0,
    rev        INTEGER,
    PRIMARY KEY (memory_id, generation)
) WITHOUT ROWID;
INSERT INTO memory_authors_v14 (memory_id, generation, session, agent, machine, external, rev)
    SELECT a.memory_id, a.generation, a.session, a.agent, a.machine, a.external, m.rev
    FROM memory_authors a LEFT JOIN memories m
        ON m.id = a.memory_id AND m.changed_generation = a.generation;
DROP TRIGGER memories_ad_author;
DROP TABLE memory_authors;
ALTER TABLE memory_authors_v14 RENAME TO memory_authors;
CREATE TRIGGER memories_ad_author AFTER DELETE ON memories
BEGIN
    DELETE FROM memory_authors WHERE memory_id = OLD.id;
END;
