-- memd's team schema, version 5: renamed namespaces. A repository's
-- derived namespace became its origin (`github.com/acme/api`, was
-- `api-6eacb40f`): the first machine that meets the new name moves the
-- shared rows in one transaction (memd.rename_namespace) and records the
-- rename, after which no writer — an older memd, psql — may put a row in
-- the old name again (it is told the new one).

CREATE TABLE memd.renamed (
    old  text PRIMARY KEY CHECK (length(old) > 0),
    new  text NOT NULL CHECK (length(new) > 0 AND new <> old),
    role text NOT NULL DEFAULT session_user,
    at   timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE memd.renamed OWNER TO memd_owner;
ALTER TABLE memd.renamed ENABLE ROW LEVEL SECURITY;
CREATE POLICY see ON memd.renamed FOR SELECT USING (true);
-- Only a role that may write both names renames.
CREATE POLICY rename ON memd.renamed FOR INSERT WITH CHECK (
    memd.rank(memd.access_of(current_user, old)) >= memd.rank('write')
    AND memd.rank(memd.access_of(current_user, new)) >= memd.rank('write'));
GRANT SELECT, INSERT ON memd.renamed TO PUBLIC;

-- A row may not go into a renamed namespace (SQLSTATE MD001, naming the
-- new one).
CREATE FUNCTION memd.refuse_renamed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    target text;
BEGIN
    SELECT r.new INTO target FROM memd.renamed r WHERE r.old = NEW.namespace;
    IF FOUND THEN
        RAISE EXCEPTION 'namespace % was renamed to %', NEW.namespace, target
            USING ERRCODE = 'MD001',
                  HINT = 'upgrade memd on this machine, or write to the new namespace';
    END IF;
    RETURN NEW;
END
$$;
ALTER FUNCTION memd.refuse_renamed() OWNER TO memd_owner;
CREATE TRIGGER memories_renamed BEFORE INSERT OR UPDATE OF namespace ON memd.memories
    FOR EACH ROW EXECUTE FUNCTION memd.refuse_renamed();
CREATE TRIGGER proposals_renamed BEFORE INSERT OR UPDATE OF namespace ON memd.proposals
    FOR EACH ROW EXECUTE FUNCTION memd.refuse_renamed();

-- Moves the rows of `old_ns` the caller may change to `new_ns` (each one
-- a meaningful change: a new rev, the earlier kept in memd.revisions,
-- applied by every machine at its next pull) and records the rename; the
-- number of rows moved. A row the caller may not change stays where it
-- is, readable as before.
CREATE FUNCTION memd.rename_namespace(old_ns text, new_ns text) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n bigint;
BEGIN
    IF old_ns = new_ns THEN
        RETURN 0;
    END IF;
    UPDATE memd.memories SET namespace = new_ns WHERE namespace = old_ns;
    GET DIAGNOSTICS n = ROW_COUNT;
    INSERT INTO memd.renamed (old, new) VALUES (old_ns, new_ns) ON CONFLICT (old) DO NOTHING;
    RETURN n;
END
$$;
ALTER FUNCTION memd.rename_namespace(text, text) OWNER TO memd_owner;
