-- memd schema, version 7: what a shell's `INSERT OR REPLACE` and content
-- edits by other tools leave behind.
--
-- `INSERT OR REPLACE` deletes the old row without firing delete triggers
-- (the shell runs without recursive triggers), so the old row's tags and
-- near-duplicate sketch would stay on the new row: they go before the insert.
CREATE TRIGGER memories_bi_replace_links BEFORE INSERT ON memories
WHEN NEW.id IS NOT NULL
BEGIN
    DELETE FROM memory_tags WHERE memory_id = NEW.id;
    DELETE FROM memory_sketch WHERE memory_id = NEW.id;
END;

-- The exact-dedup key is the daemon's normalization of the content. Content
-- changed without a new key (by another tool) loses its key; the daemon
-- computes it again (at start and in sweeps), and never merges into a row
-- whose key is out of date.
CREATE TRIGGER memories_au_dedupe AFTER UPDATE OF content ON memories
WHEN OLD.content IS NOT NEW.content AND NEW.dedupe_key IS OLD.dedupe_key
BEGIN
    UPDATE memories SET dedupe_key = NULL WHERE id = NEW.id;
END;
