-- memd's team schema, version 6: cleanup. Tombstones (with the revisions
-- of their rows), memd.ops and decided proposals older than a retention
-- are removed by memd.cleanup, run by an admin of every namespace. The
-- number through which tombstones went is kept (memd.meta
-- 'cleaned_through'): a machine that applied less may have missed a
-- delete whose tombstone is gone, so it resyncs instead of resurrecting
-- the row (its local-only rows are kept).

-- A delete is a tombstone, except the purge's own and the cleanup's of a
-- tombstone (both run as the owner).
CREATE OR REPLACE FUNCTION memd.memories_bd() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF current_user = 'memd_owner'
       AND (current_setting('memd.purging', true) IS NOT DISTINCT FROM OLD.uid
            OR (OLD.deleted AND current_setting('memd.cleaning', true) = 'on')) THEN
        RETURN OLD;
    END IF;
    UPDATE memd.memories SET deleted = true WHERE uid = OLD.uid AND NOT deleted;
    RETURN NULL;
END
$$;

CREATE POLICY clean ON memd.ops FOR DELETE TO memd_owner USING (true);
CREATE POLICY clean ON memd.proposals FOR DELETE TO memd_owner USING (true);

INSERT INTO memd.meta VALUES ('cleaned_through', '0') ON CONFLICT (key) DO NOTHING;

-- Removes what is older than `older_than`: tombstones last changed before
-- then (and their rows' revisions), operation ids recorded before then,
-- proposals decided before then. Needs admin on every namespace (`*`).
CREATE FUNCTION memd.cleanup(older_than interval)
RETURNS TABLE (tombstones bigint, revisions bigint, ops bigint, proposals bigint,
               cleaned_through bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    cutoff  text := to_char((now() - older_than) AT TIME ZONE 'UTC',
                            'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
    horizon bigint;
BEGIN
    IF NOT memd.admin_of(session_user, '*') THEN
        RAISE EXCEPTION 'role % may not clean up team memory: that needs the admin right on *',
            session_user USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF older_than < interval '0' THEN
        RAISE EXCEPTION 'a retention cannot be negative' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- One cleanup at a time; writers go on.
    PERFORM pg_advisory_xact_lock(7274031602);
    SELECT max(m.changed_seq) INTO horizon FROM memd.memories m
        WHERE m.deleted AND m.updated_at < cutoff;
    DELETE FROM memd.revisions r USING memd.memories m
        WHERE r.uid = m.uid AND m.deleted AND m.updated_at < cutoff;
    GET DIAGNOSTICS revisions = ROW_COUNT;
    PERFORM set_config('memd.cleaning', 'on', true);
    DELETE FROM memd.memories m WHERE m.deleted AND m.updated_at < cutoff;
    GET DIAGNOSTICS tombstones = ROW_COUNT;
    PERFORM set_config('memd.cleaning', '', true);
    DELETE FROM memd.ops o WHERE o.at < now() - older_than;
    GET DIAGNOSTICS ops = ROW_COUNT;
    DELETE FROM memd.proposals p WHERE p.state <> 'open' AND p.decided_at < now() - older_than;
    GET DIAGNOSTICS proposals = ROW_COUNT;
    UPDATE memd.meta SET value = greatest(value::bigint, coalesce(horizon, 0))::text
        WHERE key = 'cleaned_through'
        RETURNING value::bigint INTO cleaned_through;
    RETURN NEXT;
END
$$;
ALTER FUNCTION memd.cleanup(interval) OWNER TO memd_owner;
