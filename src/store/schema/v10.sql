-- memd schema, version 10: every change of a row moves its rev, and the row
-- records the generation of its last change (the drift guard's row rule).
--
-- * `changed_generation`: the generation of the row's last meaningful
--   change, set by the same triggers that move `rev` (so it moves exactly
--   when `rev` moves, for changes by other tools too). Rows from before this
--   version start at 0: their last change is older than every session.
-- * Tag changes are changes of the row: each statement that adds or removes
--   a tag moves the row's rev and leaves a revision, unless memd groups
--   several tag changes into one (`memory_tag_edit`, below).
-- * A row replaced by `INSERT OR REPLACE` (a shell, or `import --replace`)
--   gets a rev above the replaced one and a fresh `updated_at`: rev never
--   goes back.
-- * Revisions keep the row's tags (one per line, sorted; '' for none).

ALTER TABLE memories ADD COLUMN changed_generation INTEGER NOT NULL DEFAULT 0;

-- The memd session that made a row's last change, written by memd after
-- the change: valid while `generation` equals the row's
-- `changed_generation` (a later change by another tool, or by memd's own
-- background work, leaves it stale, and then the daemon's commit log
-- names the author). Triggers cannot know the session; this outlives the
-- commit log, so a session's own change is always recognised as its own.
CREATE TABLE memory_authors (
    memory_id  INTEGER PRIMARY KEY,
    generation INTEGER NOT NULL,
    session    TEXT NOT NULL,
    agent      TEXT NOT NULL
);

CREATE TRIGGER memories_ad_author AFTER DELETE ON memories
BEGIN
    DELETE FROM memory_authors WHERE memory_id = OLD.id;
END;
ALTER TABLE memory_revisions ADD COLUMN tags TEXT;
ALTER TABLE memory_replace_stage ADD COLUMN tags TEXT;

-- A group of tag changes that memd makes as one change of a row: opened
-- with the row's rev, tags and the generation before the change; the tag
-- triggers then only mark it `changed`; closing it (DELETE) moves the rev
-- once — unless the group belongs to a row being created (`counts` = 0) or
-- an update of the row's columns in the same group moved the rev already.
-- Other tools never open one, so each of their tag statements is a change.
CREATE TABLE memory_tag_edit (
    memory_id  INTEGER PRIMARY KEY,
    rev        INTEGER,
    tags       TEXT,
    generation INTEGER,
    changed    INTEGER NOT NULL DEFAULT 0,
    counts     INTEGER NOT NULL DEFAULT 1
);

CREATE TRIGGER memory_tag_edit_ad AFTER DELETE ON memory_tag_edit
WHEN OLD.changed = 1 AND OLD.counts = 1
BEGIN
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation, tags)
    SELECT m.id, m.uid, 'update', m.rev, m.namespace, m.scope, m.scope_owner,
        m.content, m.subject, m.category, m.tier, m.importance, m.confidence, m.pinned,
        m.status, m.metadata, m.superseded_by, m.superseded_at, m.expires_at, m.updated_at,
        OLD.generation, OLD.tags
    FROM memories m WHERE m.id = OLD.memory_id AND m.rev IS OLD.rev;
    UPDATE memories
        SET rev = rev + 1,
            updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
            changed_generation =
                (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
        WHERE id = OLD.memory_id AND rev IS OLD.rev;
END;

DROP TRIGGER memories_ai;
CREATE TRIGGER memories_ai AFTER INSERT ON memories
BEGIN
    INSERT OR REPLACE INTO memories_fts (rowid, content, subject)
        VALUES (NEW.id, NEW.content, NEW.subject);
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
    UPDATE memories
        SET changed_generation =
            (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
        WHERE id = NEW.id;
END;

DROP TRIGGER memories_au;
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
        superseded_by, superseded_at, expires_at, updated_at, generation, tags)
    VALUES (OLD.id, OLD.uid, 'update', OLD.rev, OLD.namespace, OLD.scope, OLD.scope_owner,
        OLD.content, OLD.subject, OLD.category, OLD.tier, OLD.importance, OLD.confidence,
        OLD.pinned, OLD.status, OLD.metadata, OLD.superseded_by, OLD.superseded_at,
        OLD.expires_at, OLD.updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'),
        coalesce((SELECT tags FROM memory_tag_edit WHERE memory_id = OLD.id),
            (SELECT group_concat(tag, char(10)) FROM
                (SELECT tag FROM memory_tags WHERE memory_id = OLD.id ORDER BY tag)), ''));
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
    UPDATE memories
        SET rev = OLD.rev + 1,
            updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
            changed_generation =
                (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
        WHERE id = NEW.id;
END;

DROP TRIGGER memories_ad;
CREATE TRIGGER memories_ad AFTER DELETE ON memories
BEGIN
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation, tags)
    VALUES (OLD.id, OLD.uid, 'delete', OLD.rev, OLD.namespace, OLD.scope, OLD.scope_owner,
        OLD.content, OLD.subject, OLD.category, OLD.tier, OLD.importance, OLD.confidence,
        OLD.pinned, OLD.status, OLD.metadata, OLD.superseded_by, OLD.superseded_at,
        OLD.expires_at, OLD.updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'),
        coalesce((SELECT group_concat(tag, char(10)) FROM
            (SELECT tag FROM memory_tags WHERE memory_id = OLD.id ORDER BY tag)), ''));
    DELETE FROM memory_tags WHERE memory_id = OLD.id;
    DELETE FROM memories_fts WHERE rowid = OLD.id;
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
END;

DROP TRIGGER memory_tags_ai;
CREATE TRIGGER memory_tags_ai AFTER INSERT ON memory_tags
BEGIN
    UPDATE memory_tag_edit SET changed = 1 WHERE memory_id = NEW.memory_id;
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation, tags)
    SELECT m.id, m.uid, 'update', m.rev, m.namespace, m.scope, m.scope_owner,
        m.content, m.subject, m.category, m.tier, m.importance, m.confidence, m.pinned,
        m.status, m.metadata, m.superseded_by, m.superseded_at, m.expires_at, m.updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'),
        coalesce((SELECT group_concat(tag, char(10)) FROM
            (SELECT tag FROM memory_tags WHERE memory_id = m.id AND tag IS NOT NEW.tag
             ORDER BY tag)), '')
    FROM memories m WHERE m.id = NEW.memory_id
        AND NOT EXISTS (SELECT 1 FROM memory_tag_edit e WHERE e.memory_id = m.id)
        AND NOT EXISTS (SELECT 1 FROM memory_replace_stage s WHERE s.memory_id = m.id);
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
    UPDATE memories
        SET rev = rev + 1,
            updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
            changed_generation =
                (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
        WHERE id = NEW.memory_id
            AND NOT EXISTS (SELECT 1 FROM memory_tag_edit e WHERE e.memory_id = NEW.memory_id)
            AND NOT EXISTS
                (SELECT 1 FROM memory_replace_stage s WHERE s.memory_id = NEW.memory_id);
END;

DROP TRIGGER memory_tags_ad;
CREATE TRIGGER memory_tags_ad AFTER DELETE ON memory_tags
BEGIN
    UPDATE memory_tag_edit SET changed = 1 WHERE memory_id = OLD.memory_id;
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation, tags)
    SELECT m.id, m.uid, 'update', m.rev, m.namespace, m.scope, m.scope_owner,
        m.content, m.subject, m.category, m.tier, m.importance, m.confidence, m.pinned,
        m.status, m.metadata, m.superseded_by, m.superseded_at, m.expires_at, m.updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'),
        (SELECT group_concat(tag, char(10)) FROM
            (SELECT tag FROM memory_tags WHERE memory_id = m.id UNION SELECT OLD.tag
             ORDER BY 1))
    FROM memories m WHERE m.id = OLD.memory_id
        AND NOT EXISTS (SELECT 1 FROM memory_tag_edit e WHERE e.memory_id = m.id)
        AND NOT EXISTS (SELECT 1 FROM memory_replace_stage s WHERE s.memory_id = m.id);
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
    UPDATE memories
        SET rev = rev + 1,
            updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
            changed_generation =
                (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
        WHERE id = OLD.memory_id
            AND NOT EXISTS (SELECT 1 FROM memory_tag_edit e WHERE e.memory_id = OLD.memory_id)
            AND NOT EXISTS
                (SELECT 1 FROM memory_replace_stage s WHERE s.memory_id = OLD.memory_id);
END;

-- A tag renamed or moved in place: a change of the row it left and of the
-- row it joined (the revision of each holds the tags it had).
DROP TRIGGER memory_tags_au;
CREATE TRIGGER memory_tags_au AFTER UPDATE ON memory_tags
WHEN OLD.tag IS NOT NEW.tag OR OLD.memory_id IS NOT NEW.memory_id
BEGIN
    UPDATE memory_tag_edit SET changed = 1
        WHERE memory_id = OLD.memory_id OR memory_id = NEW.memory_id;
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation, tags)
    SELECT m.id, m.uid, 'update', m.rev, m.namespace, m.scope, m.scope_owner,
        m.content, m.subject, m.category, m.tier, m.importance, m.confidence, m.pinned,
        m.status, m.metadata, m.superseded_by, m.superseded_at, m.expires_at, m.updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'),
        coalesce((SELECT group_concat(tag, char(10)) FROM
            (SELECT tag FROM memory_tags WHERE memory_id = m.id
                AND NOT (memory_id = NEW.memory_id AND tag = NEW.tag)
             UNION SELECT OLD.tag WHERE OLD.memory_id = m.id
             ORDER BY 1)), '')
    FROM memories m WHERE m.id IN (OLD.memory_id, NEW.memory_id)
        AND NOT EXISTS (SELECT 1 FROM memory_tag_edit e WHERE e.memory_id = m.id)
        AND NOT EXISTS (SELECT 1 FROM memory_replace_stage s WHERE s.memory_id = m.id);
    UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
    UPDATE memories
        SET rev = rev + 1,
            updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
            changed_generation =
                (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
        WHERE id IN (OLD.memory_id, NEW.memory_id)
            AND NOT EXISTS (SELECT 1 FROM memory_tag_edit e WHERE e.memory_id = memories.id)
            AND NOT EXISTS
                (SELECT 1 FROM memory_replace_stage s WHERE s.memory_id = memories.id);
END;

DROP TRIGGER memories_bi_stage;
CREATE TRIGGER memories_bi_stage BEFORE INSERT ON memories
BEGIN
    DELETE FROM memory_replace_stage;
    INSERT INTO memory_replace_stage (memory_id, uid, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation, tags)
    SELECT id, uid, rev, namespace, scope, scope_owner, content, subject, category,
        tier, importance, confidence, pinned, status, metadata, superseded_by,
        superseded_at, expires_at, updated_at,
        (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'),
        coalesce((SELECT group_concat(tag, char(10)) FROM
            (SELECT tag FROM memory_tags t WHERE t.memory_id = memories.id ORDER BY tag)), '')
    FROM memories WHERE id = NEW.id OR uid = NEW.uid;
END;

DROP TRIGGER memories_ai_replaced;
CREATE TRIGGER memories_ai_replaced AFTER INSERT ON memories
WHEN EXISTS (SELECT 1 FROM memory_replace_stage)
BEGIN
    DELETE FROM memory_replace_stage WHERE memory_id IS NOT NEW.id
        AND memory_id IN (SELECT id FROM memories);
    INSERT INTO memory_revisions (memory_id, uid, op, rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation, tags)
    SELECT memory_id, uid, 'replace', rev, namespace, scope, scope_owner,
        content, subject, category, tier, importance, confidence, pinned, status, metadata,
        superseded_by, superseded_at, expires_at, updated_at, generation, tags
    FROM memory_replace_stage;
    DELETE FROM memory_tags WHERE memory_id IN (SELECT memory_id FROM memory_replace_stage);
    DELETE FROM memory_sketch WHERE memory_id IN (SELECT memory_id FROM memory_replace_stage);
    DELETE FROM memory_vectors WHERE memory_id IN (SELECT memory_id FROM memory_replace_stage);
    DELETE FROM memory_similar WHERE memory_id IN (SELECT memory_id FROM memory_replace_stage)
        OR similar_to IN (SELECT memory_id FROM memory_replace_stage WHERE memory_id IS NOT NEW.id);
    DELETE FROM memories_fts WHERE rowid IN
        (SELECT memory_id FROM memory_replace_stage WHERE memory_id IS NOT NEW.id);
    UPDATE memories
        SET rev = coalesce((SELECT max(rev) FROM memory_replace_stage), 0) + 1,
            updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
            changed_generation =
                (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation')
        WHERE id = NEW.id AND EXISTS (SELECT 1 FROM memory_replace_stage);
    DELETE FROM memory_replace_stage;
END;
