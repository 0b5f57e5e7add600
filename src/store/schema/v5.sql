-- memd schema, version 5: embeddings. One vector per memory, written by the
-- daemon's embedding worker: the model's output as little-endian f32 (a BLOB
-- of 4 x dimension bytes). The model and dimension of every stored vector are
-- in memory_meta (`embed_model`, `embed_dim`: the model lock). A vector goes
-- when its memory goes, its content changes or it moves to another namespace
-- (the in-memory index is kept per namespace) — for writes by other tools
-- too, INSERT OR REPLACE included — so the rows still to embed are exactly
-- the rows without a vector.
CREATE TABLE memory_vectors (
    memory_id INTEGER PRIMARY KEY,
    vector    BLOB NOT NULL
);

-- Semantic near duplicates found after an add (cosine >= [embed]
-- similar_threshold, same namespace, scope and owner): a notice, never a merge.
CREATE TABLE memory_similar (
    memory_id  INTEGER PRIMARY KEY,
    similar_to INTEGER NOT NULL,
    cosine     REAL NOT NULL,
    found_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE INDEX memory_similar_to ON memory_similar (similar_to);

CREATE TRIGGER memories_ad_vector AFTER DELETE ON memories
BEGIN
    DELETE FROM memory_vectors WHERE memory_id = OLD.id;
    DELETE FROM memory_similar WHERE memory_id = OLD.id OR similar_to = OLD.id;
END;

CREATE TRIGGER memories_au_vector AFTER UPDATE OF id, content, namespace ON memories
WHEN OLD.content IS NOT NEW.content OR OLD.id IS NOT NEW.id
    OR OLD.namespace IS NOT NEW.namespace
BEGIN
    DELETE FROM memory_vectors WHERE memory_id = OLD.id;
    DELETE FROM memory_similar WHERE memory_id = OLD.id;
END;

CREATE TRIGGER memories_bi_vector BEFORE INSERT ON memories
WHEN NEW.id IS NOT NULL
BEGIN
    DELETE FROM memory_vectors WHERE memory_id = NEW.id;
    DELETE FROM memory_similar WHERE memory_id = NEW.id;
END;
