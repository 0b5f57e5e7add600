-- memd schema, version 16: the purge log. A purge erases a memory and every
-- trace of its text; what stays is that it happened: which uid, from which
-- namespace, when, by whom, how many versions went — never the text.
CREATE TABLE memory_purges (
    uid        TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    memory_id  INTEGER,
    revisions  INTEGER NOT NULL,
    purged_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    purged_by  TEXT NOT NULL
);
CREATE INDEX memory_purges_uid ON memory_purges (uid);
