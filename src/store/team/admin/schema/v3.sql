-- memd's team schema, version 3: purge. A purge erases a shared memory
-- for real — its row and every revision, no tombstone holding text — and
-- leaves a record without text that every machine applies at its next
-- pull (its number is the purge's transaction's, like a commit's).

CREATE TABLE memd.purges (
    uid       text PRIMARY KEY,
    seq       bigint NOT NULL,
    namespace text NOT NULL,
    role      text NOT NULL,
    machine   text,
    at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX purges_seq ON memd.purges (seq);
ALTER TABLE memd.purges OWNER TO memd_owner;
ALTER TABLE memd.purges ENABLE ROW LEVEL SECURITY;
ALTER TABLE memd.purges FORCE ROW LEVEL SECURITY;
CREATE POLICY see ON memd.purges FOR SELECT
    USING (namespace LIKE ANY ((SELECT memd.patterns(current_user, 'read'))::text[]));
CREATE POLICY keep ON memd.purges FOR ALL TO memd_owner USING (true) WITH CHECK (true);
GRANT SELECT ON memd.purges TO PUBLIC;
-- The purge (run as the owner) erases revisions: forced row-level
-- security needs a policy for it.
CREATE POLICY erase ON memd.revisions FOR DELETE TO memd_owner USING (true);

-- A delete is a tombstone, except the purge's own (run as the owner,
-- inside memd.purge, for the one uid it names).
CREATE OR REPLACE FUNCTION memd.memories_bd() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF current_user = 'memd_owner'
       AND current_setting('memd.purging', true) IS NOT DISTINCT FROM OLD.uid THEN
        RETURN OLD;
    END IF;
    UPDATE memd.memories SET deleted = true WHERE uid = OLD.uid AND NOT deleted;
    RETURN NULL;
END
$$;

-- Erases memory `target` (needs admin on its namespace); the number of
-- the purge, or NULL when PostgreSQL holds nothing of it.
CREATE FUNCTION memd.purge(target text, machine text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ns text;
    s  bigint;
BEGIN
    SELECT namespace INTO ns FROM memd.memories WHERE uid = target FOR UPDATE;
    IF ns IS NULL THEN
        SELECT namespace INTO ns FROM memd.revisions WHERE uid = target LIMIT 1;
    END IF;
    IF ns IS NULL THEN
        RETURN NULL;
    END IF;
    -- Inside this function current_user is the owner: the caller is the
    -- session's role.
    IF NOT memd.admin_of(session_user, ns) THEN
        RAISE EXCEPTION 'role % may not purge memories of %: that needs the admin right there',
            session_user, ns USING ERRCODE = 'insufficient_privilege';
    END IF;
    s := memd.take_seq();
    PERFORM set_config('memd.purging', target, true);
    DELETE FROM memd.memories WHERE uid = target;
    PERFORM set_config('memd.purging', '', true);
    DELETE FROM memd.revisions WHERE uid = target;
    INSERT INTO memd.purges (uid, seq, namespace, role, machine)
    VALUES (target, s, ns, session_user, machine)
    ON CONFLICT (uid) DO UPDATE SET seq = EXCLUDED.seq, role = EXCLUDED.role,
        machine = EXCLUDED.machine, at = now();
    PERFORM pg_notify('memd_changes', s::text);
    RETURN s;
END
$$;
ALTER FUNCTION memd.purge(text, text) OWNER TO memd_owner;
