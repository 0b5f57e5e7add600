-- memd's team schema, version 2: people and grants (ARCHITECTURE.md "Team
-- memory"). Each person or machine connects as its own login role; grants
-- by namespace glob live in memd.grants; row-level security on every table
-- that holds rows or their history lets a role see and change exactly what
-- memd would let it, in psql too. Deny by default.
--
-- The schema is owned by memd_owner, a role nobody logs in as, with
-- row-level security forced on the tables its triggers write; the
-- bookkeeping tables (generation, revisions, ops) are written only by its
-- SECURITY DEFINER triggers and functions, whose search_path is pinned.
-- Inside them current_user is the owner: the author is session_user.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memd_owner') THEN
        CREATE ROLE memd_owner NOLOGIN;
    END IF;
    -- Handing objects to a role needs membership in it (`memd team init`
    -- holds it for every step, see schema/mod.rs) and, for the schema,
    -- that role's CREATE on the database, taken back at the end of this
    -- migration.
    EXECUTE format('GRANT CREATE ON DATABASE %I TO memd_owner', current_database());
END
$$;

-- Who made each change, as PostgreSQL knows it (a config file cannot
-- forge it), beside the machine, agent and session memd reports.
ALTER TABLE memd.memories ADD COLUMN changed_role text;
ALTER TABLE memd.revisions ADD COLUMN changed_role text;
ALTER TABLE memd.ops ADD COLUMN role text;

-- Rights by namespace glob: read < write < review < admin (each includes
-- the ones before it). `*` and `?` are the only wildcards: `_` and `%`
-- are matched literally.
CREATE TABLE memd.grants (
    role       text NOT NULL CHECK (length(role) > 0),
    glob       text NOT NULL CHECK (length(glob) > 0),
    access     text NOT NULL CHECK (access IN ('read', 'write', 'review', 'admin')),
    granted_by text NOT NULL DEFAULT session_user,
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (role, glob)
);
-- The role running `memd team init` administers everything.
INSERT INTO memd.grants (role, glob, access) VALUES (session_user, '*', 'admin');

CREATE FUNCTION memd.rank(access text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE access WHEN 'read' THEN 1 WHEN 'write' THEN 2 WHEN 'review' THEN 3
        WHEN 'admin' THEN 4 ELSE 99 END
$$;

-- A glob as a LIKE pattern (the default escape, backslash).
CREATE FUNCTION memd.like_of(glob text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT replace(replace(replace(replace(replace(glob, E'\\', E'\\\\'), '%', E'\\%'),
        '_', E'\\_'), '*', '%'), '?', '_')
$$;

-- Whether every namespace `inner` matches is one `outer` matches: `inner`,
-- read as text, is matched by `outer` (sound while `outer`'s `?` never
-- stands for `inner`'s `*`).
CREATE FUNCTION memd.covers(outer_glob text, inner_glob text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT inner_glob LIKE memd.like_of(outer_glob)
        AND NOT (strpos(outer_glob, '?') > 0 AND strpos(inner_glob, '*') > 0)
$$;

-- Whether `who` is above row-level security (the owner, a superuser, a
-- role with BYPASSRLS): every right is moot for it.
CREATE FUNCTION memd.unbound(who name) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT who = 'memd_owner' OR coalesce((SELECT rolsuper OR rolbypassrls FROM pg_roles
        WHERE rolname = who), false)
$$;

-- The LIKE patterns of the namespaces `who` holds `need` (or more) on,
-- through its own grants and those of the roles it is a member of. Runs
-- as the owner, so the grants table's own policy does not hide the rows
-- the policies below are decided by.
CREATE FUNCTION memd.patterns(who name, need text) RETURNS text[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN memd.unbound(who) THEN ARRAY['%'] ELSE coalesce(
        (SELECT array_agg(DISTINCT memd.like_of(g.glob) ORDER BY memd.like_of(g.glob))
         FROM memd.grants g JOIN pg_roles r ON r.rolname = g.role
         WHERE memd.rank(g.access) >= memd.rank(need)
           AND pg_has_role(who, r.oid, 'MEMBER')), '{}') END
$$;

-- The highest right `who` holds on every namespace `target` matches:
-- 'none' when it holds none.
CREATE FUNCTION memd.access_of(who name, target text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN memd.unbound(who) THEN 'admin' ELSE coalesce(
        (SELECT g.access FROM memd.grants g JOIN pg_roles r ON r.rolname = g.role
         WHERE pg_has_role(who, r.oid, 'MEMBER') AND memd.covers(g.glob, target)
         ORDER BY memd.rank(g.access) DESC LIMIT 1), 'none') END
$$;

-- Whether `who` administers every namespace `target` matches.
CREATE FUNCTION memd.admin_of(who name, target text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT memd.access_of(who, target) = 'admin'
$$;

-- The number of this transaction, taken by memd's writers before they
-- lock a row: it updates the bookkeeping, so it runs as the owner.
ALTER FUNCTION memd.take_seq() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

-- The author: what memd reports (SET LOCAL memd.author), and the role.
CREATE OR REPLACE FUNCTION memd.stamp(r memd.memories) RETURNS memd.memories LANGUAGE plpgsql AS $$
DECLARE
    a text[] := string_to_array(coalesce(current_setting('memd.author', true), ''), E'\n');
BEGIN
    r.changed_seq := memd.take_seq();
    r.changed_role := session_user;
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

CREATE OR REPLACE FUNCTION memd.memories_bu() RETURNS trigger LANGUAGE plpgsql AS $$
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
            changed_kind, changed_machine, changed_agent, changed_session, changed_role)
        VALUES (OLD.uid, OLD.rev,
            CASE WHEN NEW.deleted AND NOT OLD.deleted THEN 'delete' ELSE 'update' END,
            OLD.namespace, OLD.scope, OLD.scope_owner, OLD.content, OLD.subject,
            OLD.category, OLD.tier, OLD.importance, OLD.confidence, OLD.pinned, OLD.status,
            OLD.metadata, OLD.tags, OLD.superseded_by_uid, OLD.superseded_at, OLD.expires_at,
            OLD.updated_at, OLD.changed_seq, OLD.changed_kind, OLD.changed_machine,
            OLD.changed_agent, OLD.changed_session, OLD.changed_role)
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
        NEW := memd.stamp(NEW);
        NEW.rev := OLD.rev;
        NEW.updated_at := OLD.updated_at;
    ELSE
        NEW.rev := OLD.rev;
        NEW.changed_seq := OLD.changed_seq;
        NEW.changed_kind := OLD.changed_kind;
        NEW.changed_machine := OLD.changed_machine;
        NEW.changed_agent := OLD.changed_agent;
        NEW.changed_session := OLD.changed_session;
        NEW.changed_role := OLD.changed_role;
        NEW.updated_at := OLD.updated_at;
    END IF;
    RETURN NEW;
END
$$;

-- The triggers that write the bookkeeping run as the owner. The delete
-- trigger stays the caller's: its tombstone is an update the caller's
-- policies decide.
ALTER FUNCTION memd.memories_bi() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION memd.memories_bu() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION memd.stamp(memd.memories) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION memd.now_text() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION memd.memories_bd() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION memd.announce() SET search_path = pg_catalog, pg_temp;

-- An operation id, recorded by the writer's transaction (memd.ops is
-- the owner's): its number.
CREATE FUNCTION memd.record_op(op text, machine text, uids text[]) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO memd.ops (op_id, changed_seq, machine, uids, role)
    VALUES (op, coalesce(current_setting('memd.seq', true), '0')::bigint, machine, uids,
        session_user)
    RETURNING changed_seq
$$;

-- A grant changes what daemons may see: it takes a number and is
-- announced like a commit, so they look at once. The last admin of
-- every namespace cannot be taken away (only a superuser could then
-- grant again).
CREATE FUNCTION memd.grants_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM memd.grants WHERE glob = '*' AND access = 'admin') THEN
        RAISE EXCEPTION 'memd.grants must keep an admin of every namespace (glob *, right admin): grant one before taking this one away'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM pg_notify('memd_changes', memd.take_seq()::text);
    RETURN NULL;
END
$$;
CREATE TRIGGER grants_changed AFTER INSERT OR UPDATE OR DELETE ON memd.grants
    FOR EACH STATEMENT EXECUTE FUNCTION memd.grants_changed();

-- Row-level security.
ALTER TABLE memd.memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE memd.memories FORCE ROW LEVEL SECURITY;
CREATE POLICY see ON memd.memories FOR SELECT
    USING (namespace LIKE ANY ((SELECT memd.patterns(current_user, 'read'))::text[]));
CREATE POLICY add ON memd.memories FOR INSERT
    WITH CHECK (namespace LIKE ANY ((SELECT memd.patterns(current_user, 'write'))::text[]));
CREATE POLICY change ON memd.memories FOR UPDATE
    USING (namespace LIKE ANY ((SELECT memd.patterns(current_user, 'write'))::text[]))
    WITH CHECK (namespace LIKE ANY ((SELECT memd.patterns(current_user, 'write'))::text[]));
CREATE POLICY remove ON memd.memories FOR DELETE
    USING (namespace LIKE ANY ((SELECT memd.patterns(current_user, 'write'))::text[]));

ALTER TABLE memd.revisions ENABLE ROW LEVEL SECURITY;
ALTER TABLE memd.revisions FORCE ROW LEVEL SECURITY;
CREATE POLICY see ON memd.revisions FOR SELECT
    USING (namespace LIKE ANY ((SELECT memd.patterns(current_user, 'read'))::text[]));
CREATE POLICY keep ON memd.revisions FOR INSERT TO memd_owner WITH CHECK (true);

ALTER TABLE memd.ops ENABLE ROW LEVEL SECURITY;
ALTER TABLE memd.ops FORCE ROW LEVEL SECURITY;
CREATE POLICY see ON memd.ops FOR SELECT
    USING (role = session_user OR memd.unbound(current_user));
CREATE POLICY keep ON memd.ops FOR INSERT TO memd_owner WITH CHECK (true);

-- Not forced: the policy functions read it as the owner.
ALTER TABLE memd.grants ENABLE ROW LEVEL SECURITY;
CREATE POLICY see ON memd.grants FOR SELECT
    USING (EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = role
                   AND pg_has_role(current_user, r.oid, 'MEMBER'))
           OR memd.admin_of(current_user, glob));
CREATE POLICY give ON memd.grants FOR INSERT WITH CHECK (memd.admin_of(current_user, glob));
CREATE POLICY alter ON memd.grants FOR UPDATE
    USING (memd.admin_of(current_user, glob)) WITH CHECK (memd.admin_of(current_user, glob));
CREATE POLICY take ON memd.grants FOR DELETE USING (memd.admin_of(current_user, glob));

-- What every role may do at all; the policies decide which rows.
REVOKE ALL ON ALL TABLES IN SCHEMA memd FROM PUBLIC;
GRANT USAGE ON SCHEMA memd TO PUBLIC;
GRANT SELECT ON memd.meta, memd.generation, memd.migrations, memd.memories, memd.revisions,
    memd.ops, memd.grants TO PUBLIC;
GRANT INSERT, UPDATE, DELETE ON memd.memories TO PUBLIC;
GRANT INSERT, UPDATE, DELETE ON memd.grants TO PUBLIC;

-- Everything to the owner.
DO $$
DECLARE
    o record;
BEGIN
    EXECUTE 'ALTER SCHEMA memd OWNER TO memd_owner';
    FOR o IN SELECT c.oid::regclass AS name FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'memd' AND c.relkind IN ('r', 'p', 'v', 'S') LOOP
        EXECUTE format('ALTER TABLE %s OWNER TO memd_owner', o.name);
    END LOOP;
    FOR o IN SELECT p.oid::regprocedure AS name FROM pg_proc p
             JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'memd' LOOP
        EXECUTE format('ALTER FUNCTION %s OWNER TO memd_owner', o.name);
    END LOOP;
    EXECUTE format('REVOKE CREATE ON DATABASE %I FROM memd_owner', current_database());
END
$$;
