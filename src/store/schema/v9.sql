-- memd schema, version 9: when sessions that kept session-scope memories
-- ended. A sweep archives such memories once their session ended longer ago
-- than `[lifecycle] session_rows_days`; a session with no recorded end (the
-- daemon was killed, or the rows came from another tool) counts as ended at
-- its newest row's creation or last use.
CREATE TABLE memory_session_ends (
    session  TEXT PRIMARY KEY,
    ended_at TEXT NOT NULL
) WITHOUT ROWID;
