-- memd schema, version 1.
--
-- Rules external tools rely on (ARCHITECTURE.md "Schema rules"):
-- * a plain sqlite3 shell can write: `INSERT INTO memories(content) VALUES ('x')`
--   works, defaults fill the rest;
-- * triggers and defaults use only built-ins of SQLite 3.37+ shells (no JSON
--   functions, no unixepoch(), no trigram options, no foreign-key actions);
-- * `generation` in memory_meta is bumped by triggers on every insert and
--   delete of memories and tags, and on updates only when a meaningful column
--   really changes (never for access tracking); the same triggers set `rev`
--   and `updated_at`, which nothing else writes;
-- * the FTS5 index keeps its own copy of the text and is kept in sync by
--   triggers for every statement form a shell can run, INSERT OR REPLACE
--   included (FTS5 honours OR REPLACE on its rowid).

CREATE TABLE memory_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

INSERT INTO memory_meta (key, value) VALUES
    ('generation', '0'),
    ('db_uuid', lower(hex(randomblob(16))));

CREATE TABLE memories (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    uid               TEXT NOT NULL UNIQUE DEFAULT (lower(hex(randomblob(16)))),
    namespace         TEXT NOT NULL DEFAULT 'default' CHECK (length(namespace) > 0),
    scope             TEXT NOT NULL DEFAULT 'project'
                      CHECK (scope IN ('project', 'agent', 'session')),
    scope_owner       TEXT,
    content           TEXT NOT NULL CHECK (length(content) > 0),
    subject           TEXT,
    category          TEXT NOT NULL DEFAULT 'note',
    tier              INTEGER NOT NULL DEFAULT 2 CHECK (tier BETWEEN 1 AND 3),
    importance        TEXT NOT NULL DEFAULT 'medium'
                      CHECK (importance IN ('low', 'medium', 'high')),
    confidence        REAL NOT NULL DEFAULT 1.0,
    pinned            INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
    status            TEXT NOT NULL DEFAULT 'promoted'
                      CHECK (status IN ('candidate', 'promoted', 'archived')),
    metadata          TEXT NOT NULL DEFAULT '{}',
    superseded_by     INTEGER,
    superseded_at     TEXT,
    dedupe_key        TEXT,
    observation_count INTEGER NOT NULL DEFAULT 1,
    confirmed_count   INTEGER NOT NULL DEFAULT 0,
    last_confirmed_at TEXT,
    use_count         INTEGER NOT NULL DEFAULT 0,
    last_used_at      TEXT,
    access_score      REAL NOT NULL DEFAULT 0.0,
    source            TEXT NOT NULL DEFAULT 'external',
    created_by        TEXT,
    expires_at        TEXT,
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    rev               INTEGER NOT NULL DEFAULT 1
);

CREATE INDEX memories_visible ON memories (namespace, scope, scope_owner, id);
CREATE INDEX memories_dedupe ON memories (namespace, scope, scope_owner, dedupe_key)
    WHERE dedupe_key IS NOT NULL;
CREATE INDEX memories_superseded_by ON memories (superseded_by)
    WHERE superseded_by IS NOT NULL;
CREATE INDEX memories_expires ON memories (expires_at)
    WHERE expires_at IS NOT NULL;

-- Tags are lower-cased by whoever writes them (the CHECK refuses others).
-- Rows of deleted memories are removed by the memories_ad trigger: the shell
-- runs with foreign keys off, so no foreign-key action is relied on.
CREATE TABLE memory_tags (
    memory_id INTEGER NOT NULL REFERENCES memories (id),
    tag       TEXT NOT NULL CHECK (length(tag) > 0 AND tag = lower(tag)),
    PRIMARY KEY (memory_id, tag)
) WITHOUT ROWID;

CREATE INDEX memory_tags_tag ON memory_tags (tag, memory_id);

-- The old values of every meaningful update and every delete, external ones
-- included: history and undo.
CREATE TABLE memory_revisions (
    rev_id        INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id     INTEGER NOT NULL,
    uid           TEXT,
    op            TEXT NOT NULL,
    rev           INTEGER,
    namespace     TEXT,
    scope         TEXT,
    scope_owner   TEXT,
    content       TEXT,
    subject       TEXT,
    category      TEXT,
    tier          INTEGER,
    importance    TEXT,
    confidence    REAL,
    pinned        INTEGER,
    status        TEXT,
    metadata      TEXT,
    superseded_by INTEGER,
    superseded_at TEXT,
    expires_at    TEXT,
    updated_at    TEXT,
    generation    INTEGER,
    recorded_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE INDEX memory_revisions_memory ON memory_revisions (memory_id, rev_id);

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content,
    subject,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- An INSERT OR REPLACE over an existing id keeps the replaced row's values as
-- a revision (SQLite fires no delete trigger for a REPLACE).
CREATE TRIGGER memories_bi_replace BEFORE INSERT ON memories
WHEN NEW.id IS NOT NULL AND EXISTS (SELECT 1 FROM memories WHERE id = NEW.id)
BEGIN
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation)
    SELECT id, uid, 'replace', rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
    FROM memories WHERE id = NEW.id;
END;

CREATE TRIGGER memories_ai AFTER INSERT ON memories
BEGIN
    INSERT OR REPLACE INTO memories_fts (rowid, content, subject)
        VALUES (NEW.id, NEW.content, NEW.subject);
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
END;

CREATE TRIGGER memories_au AFTER UPDATE ON memories
WHEN OLD.content IS NOT NEW.content
  OR OLD.category IS NOT NEW.category
  OR OLD.subject IS NOT NEW.subject
  OR OLD.tier IS NOT NEW.tier
  OR OLD.scope IS NOT NEW.scope
  OR OLD.scope_owner IS NOT NEW.scope_owner
  OR OLD.namespace IS NOT NEW.namespace
  OR OLD.status IS NOT NEW.status
  OR OLD.pinned IS NOT NEW.pinned
  OR OLD.importance IS NOT NEW.importance
  OR OLD.confidence IS NOT NEW.confidence
  OR OLD.superseded_by IS NOT NEW.superseded_by
  OR OLD.superseded_at IS NOT NEW.superseded_at
  OR OLD.metadata IS NOT NEW.metadata
  OR OLD.expires_at IS NOT NEW.expires_at
  OR OLD.id IS NOT NEW.id
  OR OLD.uid IS NOT NEW.uid
BEGIN
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation)
    VALUES (OLD.id, OLD.uid, 'update', OLD.rev, OLD.namespace, OLD.scope, OLD.scope_owner,
        OLD.content, OLD.subject, OLD.category, OLD.tier, OLD.importance, OLD.confidence,
        OLD.pinned, OLD.status, OLD.metadata, OLD.superseded_by, OLD.superseded_at,
        OLD.expires_at, OLD.updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'));
    UPDATE memories
        SET rev = OLD.rev + 1,
            updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        WHERE id = NEW.id;
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
END;

CREATE TRIGGER memories_au_fts AFTER UPDATE OF id, content, subject ON memories
WHEN OLD.content IS NOT NEW.content
  OR OLD.subject IS NOT NEW.subject
  OR OLD.id IS NOT NEW.id
BEGIN
    DELETE FROM memories_fts WHERE rowid = OLD.id;
    INSERT OR REPLACE INTO memories_fts (rowid, content, subject)
        VALUES (NEW.id, NEW.content, NEW.subject);
END;

CREATE TRIGGER memories_ad AFTER DELETE ON memories
BEGIN
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation)
    VALUES (OLD.id, OLD.uid, 'delete', OLD.rev, OLD.namespace, OLD.scope, OLD.scope_owner,
        OLD.content, OLD.subject, OLD.category, OLD.tier, OLD.importance, OLD.confidence,
        OLD.pinned, OLD.status, OLD.metadata, OLD.superseded_by, OLD.superseded_at,
        OLD.expires_at, OLD.updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'));
    DELETE FROM memory_tags WHERE memory_id = OLD.id;
    DELETE FROM memories_fts WHERE rowid = OLD.id;
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
END;

CREATE TRIGGER memory_tags_ai AFTER INSERT ON memory_tags
BEGIN
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
END;

CREATE TRIGGER memory_tags_au AFTER UPDATE ON memory_tags
WHEN OLD.tag IS NOT NEW.tag OR OLD.memory_id IS NOT NEW.memory_id
BEGIN
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
END;

CREATE TRIGGER memory_tags_ad AFTER DELETE ON memory_tags
BEGIN
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
END;
