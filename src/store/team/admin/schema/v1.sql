-- memd's team schema, version 1: shared namespaces on PostgreSQL
-- (ARCHITECTURE.md "Team memory"). Rows by uid, their revisions, tombstones
-- for deletes; one commit-ordered number per writing transaction; triggers
-- that keep every rule for writers that are not memd (psql, scripts).

CREATE SCHEMA IF NOT EXISTS memd;

-- This database's identity (a restored dump keeps it; the numbers tell).
CREATE TABLE memd.meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO memd.meta VALUES ('db_uuid', replace(gen_random_uuid()::text, '-', ''));

-- The commit-ordered number: one row, updated once inside every writing
-- transaction (by the first row it changes). The row lock is held until
-- the commit, so the next transaction takes the next number only after
-- this one committed: numbers become visible in commit order, and a reader
-- that applied everything up to N never misses a later commit below N.
CREATE TABLE memd.generation (
    id    integer PRIMARY KEY CHECK (id = 1),
    value bigint NOT NULL
);
INSERT INTO memd.generation VALUES (1, 0);

CREATE FUNCTION memd.now_text() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- Shared rows. `rev` moves on every meaningful change (the triggers own
-- it); `changed_seq` is the number of the transaction that last changed
-- the row; the `changed_*` columns name its author: memd sets
-- `SET LOCAL memd.author` (kind, machine, agent, session); a change
-- without one is `external`. `deleted` rows are tombstones.
CREATE TABLE memd.memories (
    uid               text PRIMARY KEY DEFAULT replace(gen_random_uuid()::text, '-', ''),
    namespace         text NOT NULL CHECK (length(namespace) > 0),
    scope             text NOT NULL DEFAULT 'project' CHECK (scope IN ('project', 'agent')),
    scope_owner       text,
    content           text NOT NULL CHECK (length(content) > 0),
    subject           text,
    category          text NOT NULL DEFAULT 'note',
    tier              integer NOT NULL DEFAULT 2 CHECK (tier BETWEEN 1 AND 3),
    importance        text NOT NULL DEFAULT 'medium'
                      CHECK (importance IN ('low', 'medium', 'high')),
    confidence        double precision NOT NULL DEFAULT 1.0,
    pinned            boolean NOT NULL DEFAULT false,
    status            text NOT NULL DEFAULT 'promoted'
                      CHECK (status IN ('candidate', 'promoted', 'archived')),
    metadata          text NOT NULL DEFAULT '{}',
    tags              text[] NOT NULL DEFAULT '{}',
    superseded_by_uid text,
    superseded_at     text,
    dedupe_key        text,
    observation_count integer NOT NULL DEFAULT 1,
    confirmed_count   integer NOT NULL DEFAULT 0,
    last_confirmed_at text,
    source            text NOT NULL DEFAULT 'external',
    created_by        text,
    expires_at        text,
    created_at        text NOT NULL DEFAULT memd.now_text(),
    updated_at        text NOT NULL DEFAULT memd.now_text(),
    thread            text,
    thread_pos        bigint,
    occurred_at       text,
    rev               bigint NOT NULL DEFAULT 1,
    deleted           boolean NOT NULL DEFAULT false,
    changed_seq       bigint NOT NULL DEFAULT 0,
    changed_kind      text NOT NULL DEFAULT 'external',
    changed_machine   text,
    changed_agent     text,
    changed_session   text
);
CREATE INDEX memories_changed ON memd.memories (changed_seq);
-- Two machines adding the same memory at once merge into one row.
CREATE UNIQUE INDEX memories_dedupe
    ON memd.memories (namespace, scope, coalesce(scope_owner, ''), dedupe_key)
    WHERE NOT deleted AND superseded_by_uid IS NULL AND dedupe_key IS NOT NULL
      AND thread IS NULL;

-- Every meaningful change leaves the row as it was.
CREATE TABLE memd.revisions (
    uid               text NOT NULL,
    rev               bigint NOT NULL,
    op                text NOT NULL,
    namespace         text NOT NULL,
    scope             text NOT NULL,
    scope_owner       text,
    content           text NOT NULL,
    subject           text,
    category          text NOT NULL,
    tier              integer NOT NULL,
    importance        text NOT NULL,
    confidence        double precision NOT NULL,
    pinned            boolean NOT NULL,
    status            text NOT NULL,
    metadata          text NOT NULL,
    tags              text[] NOT NULL,
    superseded_by_uid text,
    superseded_at     text,
    expires_at        text,
    updated_at        text NOT NULL,
    changed_seq       bigint NOT NULL,
    changed_kind      text NOT NULL,
    changed_machine   text,
    changed_agent     text,
    changed_session   text,
    PRIMARY KEY (uid, rev)
);

-- The operation ids of memd's writes: a write whose COMMIT reply was lost
-- is looked up here before it is answered, so a retry never applies twice.
CREATE TABLE memd.ops (
    op_id       text PRIMARY KEY,
    changed_seq bigint NOT NULL,
    machine     text NOT NULL,
    uids        text[] NOT NULL,
    at          timestamptz NOT NULL DEFAULT now()
);

-- The number of this transaction: taken (once) by its first change.
CREATE FUNCTION memd.take_seq() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    tx text := txid_current()::text;
    s  bigint;
BEGIN
    IF current_setting('memd.tx', true) IS NOT DISTINCT FROM tx THEN
        RETURN current_setting('memd.seq')::bigint;
    END IF;
    UPDATE memd.generation SET value = value + 1 WHERE id = 1 RETURNING value INTO s;
    PERFORM set_config('memd.tx', tx, true);
    PERFORM set_config('memd.seq', s::text, true);
    RETURN s;
END
$$;

-- Who writes: `SET LOCAL memd.author` = kind, machine, agent, session
-- separated by newlines; anything else is external.
CREATE FUNCTION memd.stamp(r memd.memories) RETURNS memd.memories LANGUAGE plpgsql AS $$
DECLARE
    a text[] := string_to_array(coalesce(current_setting('memd.author', true), ''), E'\n');
BEGIN
    r.changed_seq := memd.take_seq();
    IF array_length(a, 1) = 4 AND a[1] IN ('session', 'daemon') THEN
        r.changed_kind := a[1];
        r.changed_machine := nullif(a[2], '');
        r.changed_agent := nullif(a[3], '');
        r.changed_session := nullif(a[4], '');
    ELSE
        r.changed_kind := 'external';
        r.changed_machine := NULL;
        r.changed_agent := NULL;
        r.changed_session := NULL;
    END IF;
    RETURN r;
END
$$;

CREATE FUNCTION memd.memories_bi() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW := memd.stamp(NEW);
    -- memd may carry a row's rev over (`team push`); anyone else starts at 1.
    IF NEW.changed_kind = 'external' OR NEW.rev IS NULL OR NEW.rev < 1 THEN
        NEW.rev := 1;
    END IF;
    NEW.tags := ARRAY(SELECT DISTINCT lower(t) FROM unnest(NEW.tags) t ORDER BY 1);
    RETURN NEW;
END
$$;
CREATE TRIGGER memories_bi BEFORE INSERT ON memd.memories
    FOR EACH ROW EXECUTE FUNCTION memd.memories_bi();

CREATE FUNCTION memd.memories_bu() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    meaningful boolean;
BEGIN
    NEW.tags := ARRAY(SELECT DISTINCT lower(t) FROM unnest(NEW.tags) t ORDER BY 1);
    meaningful := OLD.content IS DISTINCT FROM NEW.content
        OR OLD.category IS DISTINCT FROM NEW.category
        OR OLD.subject IS DISTINCT FROM NEW.subject
        OR OLD.tier IS DISTINCT FROM NEW.tier
        OR OLD.scope IS DISTINCT FROM NEW.scope
        OR OLD.scope_owner IS DISTINCT FROM NEW.scope_owner
        OR OLD.namespace IS DISTINCT FROM NEW.namespace
        OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD.pinned IS DISTINCT FROM NEW.pinned
        OR OLD.importance IS DISTINCT FROM NEW.importance
        OR OLD.confidence IS DISTINCT FROM NEW.confidence
        OR OLD.superseded_by_uid IS DISTINCT FROM NEW.superseded_by_uid
        OR OLD.superseded_at IS DISTINCT FROM NEW.superseded_at
        OR OLD.metadata IS DISTINCT FROM NEW.metadata
        OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
        OR OLD.tags IS DISTINCT FROM NEW.tags
        OR OLD.thread IS DISTINCT FROM NEW.thread
        OR OLD.thread_pos IS DISTINCT FROM NEW.thread_pos
        OR OLD.occurred_at IS DISTINCT FROM NEW.occurred_at
        OR OLD.deleted IS DISTINCT FROM NEW.deleted;
    IF meaningful THEN
        INSERT INTO memd.revisions (uid, rev, op, namespace, scope, scope_owner, content,
            subject, category, tier, importance, confidence, pinned, status, metadata, tags,
            superseded_by_uid, superseded_at, expires_at, updated_at, changed_seq,
            changed_kind, changed_machine, changed_agent, changed_session)
        VALUES (OLD.uid, OLD.rev,
            CASE WHEN NEW.deleted AND NOT OLD.deleted THEN 'delete' ELSE 'update' END,
            OLD.namespace, OLD.scope, OLD.scope_owner, OLD.content, OLD.subject,
            OLD.category, OLD.tier, OLD.importance, OLD.confidence, OLD.pinned, OLD.status,
            OLD.metadata, OLD.tags, OLD.superseded_by_uid, OLD.superseded_at, OLD.expires_at,
            OLD.updated_at, OLD.changed_seq, OLD.changed_kind, OLD.changed_machine,
            OLD.changed_agent, OLD.changed_session)
        ON CONFLICT (uid, rev) DO NOTHING;
        NEW := memd.stamp(NEW);
        NEW.rev := OLD.rev + 1;
        NEW.updated_at := memd.now_text();
        IF OLD.content IS DISTINCT FROM NEW.content
           AND NEW.dedupe_key IS NOT DISTINCT FROM OLD.dedupe_key THEN
            NEW.dedupe_key := NULL;
        END IF;
    ELSIF OLD.observation_count IS DISTINCT FROM NEW.observation_count
        OR OLD.confirmed_count IS DISTINCT FROM NEW.confirmed_count
        OR OLD.last_confirmed_at IS DISTINCT FROM NEW.last_confirmed_at
        OR OLD.dedupe_key IS DISTINCT FROM NEW.dedupe_key THEN
        -- Counts are shared but not edits: a new number, the same rev.
        NEW := memd.stamp(NEW);
        NEW.rev := OLD.rev;
        NEW.updated_at := OLD.updated_at;
    ELSE
        -- Nothing shared changed (or only what the triggers own): no
        -- number, no rev.
        NEW.rev := OLD.rev;
        NEW.changed_seq := OLD.changed_seq;
        NEW.changed_kind := OLD.changed_kind;
        NEW.changed_machine := OLD.changed_machine;
        NEW.changed_agent := OLD.changed_agent;
        NEW.changed_session := OLD.changed_session;
        NEW.updated_at := OLD.updated_at;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER memories_bu BEFORE UPDATE ON memd.memories
    FOR EACH ROW EXECUTE FUNCTION memd.memories_bu();

-- A delete becomes a tombstone (kept forever in this version).
CREATE FUNCTION memd.memories_bd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memd.memories SET deleted = true WHERE uid = OLD.uid AND NOT deleted;
    RETURN NULL;
END
$$;
CREATE TRIGGER memories_bd BEFORE DELETE ON memd.memories
    FOR EACH ROW EXECUTE FUNCTION memd.memories_bd();

CREATE FUNCTION memd.refuse_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'memd.memories cannot be truncated: delete rows instead (they become tombstones that every machine applies)';
END
$$;
CREATE TRIGGER memories_bt BEFORE TRUNCATE ON memd.memories
    FOR EACH STATEMENT EXECUTE FUNCTION memd.refuse_truncate();

-- Every commit is announced (one notice per transaction and number).
CREATE FUNCTION memd.announce() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('memd_changes', NEW.changed_seq::text);
    RETURN NULL;
END
$$;
CREATE TRIGGER memories_an AFTER INSERT OR UPDATE ON memd.memories
    FOR EACH ROW EXECUTE FUNCTION memd.announce();
