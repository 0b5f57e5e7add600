-- memd's team schema, version 4: review. A namespace can require review
-- (memd.reviewed holds its globs); there a role without the `review` right
-- writes only proposals — an add, or a change or forget of a row that is
-- team knowledge — which reviewers approve or reject. PostgreSQL enforces
-- it: a trigger refuses such a role's own change of memd.memories there
-- (psql included), and only memd.decide, run by a reviewer, turns a
-- proposal into a row.

-- Globs of the namespaces that require review (matched like grants).
CREATE TABLE memd.reviewed (
    glob   text PRIMARY KEY CHECK (length(glob) > 0),
    set_by text NOT NULL DEFAULT session_user,
    set_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE memd.reviewed OWNER TO memd_owner;
-- Not forced: memd.proposes reads it as the owner.
ALTER TABLE memd.reviewed ENABLE ROW LEVEL SECURITY;
CREATE POLICY see ON memd.reviewed FOR SELECT USING (true);
CREATE POLICY set ON memd.reviewed FOR INSERT WITH CHECK (memd.admin_of(current_user, glob));
CREATE POLICY unset ON memd.reviewed FOR DELETE USING (memd.admin_of(current_user, glob));
GRANT SELECT, INSERT, DELETE ON memd.reviewed TO PUBLIC;

-- Whether `who` may only propose in `ns`: it requires review and `who`
-- holds less than `review` there.
CREATE FUNCTION memd.proposes(who name, ns text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT NOT memd.unbound(who)
        AND EXISTS (SELECT 1 FROM memd.reviewed r WHERE ns LIKE memd.like_of(r.glob))
        AND memd.rank(memd.access_of(who, ns)) < memd.rank('review')
$$;
ALTER FUNCTION memd.proposes(name, text) OWNER TO memd_owner;

-- Proposals: the row as proposed (the columns of memd.memories), what it
-- does to the row it names, who proposed it and what became of it.
CREATE TABLE memd.proposals (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action      text NOT NULL CHECK (action IN ('add', 'update', 'forget')),
    -- The rev of the row an update or forget was proposed against.
    base_rev    bigint,
    op_id       text,
    proposed_by text NOT NULL DEFAULT session_user,
    proposed_at timestamptz NOT NULL DEFAULT now(),
    state       text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'approved', 'rejected')),
    decided_by  text,
    decided_at  timestamptz,
    reason      text,
    LIKE memd.memories INCLUDING DEFAULTS
);
CREATE INDEX proposals_open ON memd.proposals (namespace) WHERE state = 'open';
CREATE INDEX proposals_op ON memd.proposals (op_id);
ALTER TABLE memd.proposals OWNER TO memd_owner;
ALTER TABLE memd.proposals ENABLE ROW LEVEL SECURITY;
ALTER TABLE memd.proposals FORCE ROW LEVEL SECURITY;
-- Seen by the role that proposed and by reviewers of the namespace.
CREATE POLICY see ON memd.proposals FOR SELECT
    USING (proposed_by = session_user
           OR memd.rank(memd.access_of(current_user, namespace)) >= memd.rank('review'));
-- Proposed by a role that may write there, in its own name, open.
CREATE POLICY propose ON memd.proposals FOR INSERT
    WITH CHECK (proposed_by = session_user AND state = 'open' AND decided_by IS NULL
                AND namespace LIKE ANY ((SELECT memd.patterns(current_user, 'write'))::text[]));
-- Decided only through memd.decide.
CREATE POLICY decide ON memd.proposals FOR UPDATE TO memd_owner USING (true) WITH CHECK (true);
GRANT SELECT, INSERT ON memd.proposals TO PUBLIC;

-- Where review is required, a role that may only propose cannot change a
-- row itself (counts of a re-observed row excepted): the trigger runs
-- before memd's own triggers stamp the row.
CREATE FUNCTION memd.memories_ba() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    same memd.memories;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        same := OLD;
        same.observation_count := NEW.observation_count;
        same.confirmed_count := NEW.confirmed_count;
        same.last_confirmed_at := NEW.last_confirmed_at;
        same.dedupe_key := NEW.dedupe_key;
        IF same IS NOT DISTINCT FROM NEW THEN
            RETURN NEW;
        END IF;
        IF memd.proposes(session_user, OLD.namespace) THEN
            RAISE EXCEPTION 'namespace % requires review: role % may only propose changes there (memd team review)',
                OLD.namespace, session_user USING ERRCODE = 'insufficient_privilege';
        END IF;
    END IF;
    IF memd.proposes(session_user, NEW.namespace) THEN
        RAISE EXCEPTION 'namespace % requires review: role % may only propose there (memd team review)',
            NEW.namespace, session_user USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;
ALTER FUNCTION memd.memories_ba() OWNER TO memd_owner;
CREATE TRIGGER memories_ba BEFORE INSERT OR UPDATE ON memd.memories
    FOR EACH ROW EXECUTE FUNCTION memd.memories_ba();

-- Approves (`approve`) or rejects proposal `target` (needs review on its
-- namespace): an approved proposal is written as the reviewer's change,
-- authored as the proposal's machine, agent and session. The number of
-- the change, or NULL for a rejection.
CREATE FUNCTION memd.decide(target bigint, approve boolean, why text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p   memd.proposals;
    cur memd.memories;
    s   bigint;
BEGIN
    SELECT * INTO p FROM memd.proposals WHERE id = target FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no proposal %', target USING ERRCODE = 'no_data_found';
    END IF;
    IF memd.rank(memd.access_of(session_user, p.namespace)) < memd.rank('review') THEN
        RAISE EXCEPTION 'role % may not review proposals of %: that needs the review right there',
            session_user, p.namespace USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p.state <> 'open' THEN
        RAISE EXCEPTION 'proposal % was already %', target, p.state
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF approve THEN
        PERFORM set_config('memd.author', concat_ws(E'\n', 'session', coalesce(p.changed_machine, ''),
            coalesce(p.changed_agent, ''), coalesce(p.changed_session, '')), true);
        IF p.action <> 'add' THEN
            SELECT * INTO cur FROM memd.memories WHERE uid = p.uid FOR UPDATE;
            IF NOT FOUND OR cur.deleted OR cur.rev <> p.base_rev THEN
                RAISE EXCEPTION 'memory % changed since proposal % was made: reject it and propose again',
                    p.uid, target USING ERRCODE = 'invalid_parameter_value';
            END IF;
        END IF;
        IF p.action = 'add' THEN
            INSERT INTO memd.memories (uid, namespace, scope, scope_owner, content, subject,
                category, tier, importance, confidence, pinned, status, metadata, tags,
                superseded_by_uid, superseded_at, dedupe_key, observation_count,
                confirmed_count, last_confirmed_at, source, created_by, expires_at, created_at,
                thread, thread_pos, occurred_at, rev)
            VALUES (p.uid, p.namespace, p.scope, p.scope_owner, p.content, p.subject,
                p.category, p.tier, p.importance, p.confidence, p.pinned, p.status, p.metadata,
                p.tags, p.superseded_by_uid, p.superseded_at, p.dedupe_key, p.observation_count,
                p.confirmed_count, p.last_confirmed_at, p.source, p.created_by, p.expires_at,
                p.created_at, p.thread, p.thread_pos, p.occurred_at, 1)
            ON CONFLICT (namespace, scope, coalesce(scope_owner, ''), dedupe_key)
            WHERE NOT deleted AND superseded_by_uid IS NULL AND dedupe_key IS NOT NULL
              AND thread IS NULL
            DO UPDATE SET observation_count = memd.memories.observation_count
                + EXCLUDED.observation_count;
        ELSIF p.action = 'update' THEN
            UPDATE memd.memories SET namespace = p.namespace, scope = p.scope,
                scope_owner = p.scope_owner, content = p.content, subject = p.subject,
                category = p.category, tier = p.tier, importance = p.importance,
                confidence = p.confidence, pinned = p.pinned, status = p.status,
                metadata = p.metadata, tags = p.tags, superseded_by_uid = p.superseded_by_uid,
                superseded_at = p.superseded_at, dedupe_key = p.dedupe_key,
                expires_at = p.expires_at, thread = p.thread, thread_pos = p.thread_pos,
                occurred_at = p.occurred_at
            WHERE uid = p.uid;
        ELSE
            UPDATE memd.memories SET deleted = true WHERE uid = p.uid;
        END IF;
        s := memd.take_seq();
    END IF;
    UPDATE memd.proposals SET state = CASE WHEN approve THEN 'approved' ELSE 'rejected' END,
        decided_by = session_user, decided_at = now(), reason = why
    WHERE id = target;
    RETURN s;
END
$$;
ALTER FUNCTION memd.decide(bigint, boolean, text) OWNER TO memd_owner;
