-- memd schema, version 3: the log of lifecycle sweeps (shown by `status`).
CREATE TABLE memory_sweeps (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at TEXT NOT NULL,
    ended_at   TEXT,
    trigger    TEXT NOT NULL,
    decayed    INTEGER NOT NULL DEFAULT 0,
    demoted    INTEGER NOT NULL DEFAULT 0,
    archived   INTEGER NOT NULL DEFAULT 0,
    promoted   INTEGER NOT NULL DEFAULT 0,
    limited    INTEGER NOT NULL DEFAULT 0,
    expired    INTEGER NOT NULL DEFAULT 0,
    sessions   INTEGER NOT NULL DEFAULT 0,
    error      TEXT
);
