-- Team memory (ARCHITECTURE.md "Team memory"): a shared row keeps
-- PostgreSQL's rev in `team_rev` (NULL: never written through or pulled);
-- the author of a change pulled from PostgreSQL names its machine, or is
-- external (a writer there that is not memd); the PostgreSQL number applied
-- at each local generation translates a session's view into PostgreSQL's.
ALTER TABLE memories ADD COLUMN team_rev INTEGER;
ALTER TABLE memory_authors ADD COLUMN machine TEXT;
ALTER TABLE memory_authors ADD COLUMN external INTEGER NOT NULL DEFAULT 0;
CREATE TABLE memory_team_seq (
    generation INTEGER PRIMARY KEY,
    seq        INTEGER NOT NULL
);
