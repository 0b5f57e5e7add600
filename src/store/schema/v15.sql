-- memd schema, version 15: conversations captured from agent hosts.
--
-- A captured turn is a memory (`source = 'capture'`, category `episode`, in
-- the thread `<host>:<session>`) whose `turn` names where it came from
-- (`<host>:<session>:<line id>`): unique, so a turn is never stored twice
-- (a rewritten transcript, a resume into a new file, a session back after
-- it ended). `capture_state` keeps, per host and session, where the next
-- capture starts in the transcript and what was captured so far.
ALTER TABLE memories ADD COLUMN turn TEXT;
CREATE UNIQUE INDEX memories_turn ON memories (turn) WHERE turn IS NOT NULL;
CREATE INDEX memories_capture ON memories (namespace, created_at) WHERE source = 'capture';
CREATE TABLE capture_state (
    host          TEXT NOT NULL,
    session       TEXT NOT NULL,
    namespace     TEXT NOT NULL,
    file          TEXT NOT NULL DEFAULT '',
    path          TEXT NOT NULL DEFAULT '',
    offset        INTEGER NOT NULL DEFAULT 0,
    turns         INTEGER NOT NULL DEFAULT 0,
    bytes         INTEGER NOT NULL DEFAULT 0,
    redactions    INTEGER NOT NULL DEFAULT 0,
    marked        INTEGER NOT NULL DEFAULT 0,
    invalid_lines INTEGER NOT NULL DEFAULT 0,
    last_at       TEXT,
    last_error    TEXT,
    PRIMARY KEY (host, session)
) WITHOUT ROWID;
-- A captured turn keeps no history: the revisions of a row whose uid is a
-- captured turn's (`cap-…`) are dropped as they are written, so a turn
-- forgotten or past its retention leaves no copy (and, never pushed, no
-- delete for the team to see).
CREATE TRIGGER memory_revisions_capture AFTER INSERT ON memory_revisions
WHEN NEW.uid LIKE 'cap-%'
BEGIN
    DELETE FROM memory_revisions WHERE memory_id = NEW.memory_id AND uid = NEW.uid;
END;
