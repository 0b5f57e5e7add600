-- memd schema, version 4: a bottom-k MinHash sketch of each memory's word
-- 3-shingles, for the write gate's near-duplicate lookup. A near duplicate
-- (Jaccard >= 0.85) shares one of its four smallest shingle hashes with
-- near certainty, so candidates are a few index lookups instead of a text
-- search. The daemon fills it; rows written by other tools get theirs from
-- the next sweep. A row's sketch goes when the row or its content changes.
CREATE TABLE memory_sketch (
    hash      INTEGER NOT NULL,
    memory_id INTEGER NOT NULL,
    PRIMARY KEY (hash, memory_id)
) WITHOUT ROWID;

CREATE INDEX memory_sketch_memory ON memory_sketch (memory_id);

CREATE TRIGGER memories_ad_sketch AFTER DELETE ON memories
BEGIN
    DELETE FROM memory_sketch WHERE memory_id = OLD.id;
END;

CREATE TRIGGER memories_au_sketch AFTER UPDATE OF id, content ON memories
WHEN OLD.content IS NOT NEW.content OR OLD.id IS NOT NEW.id
BEGIN
    DELETE FROM memory_sketch WHERE memory_id = OLD.id;
END;
