-- memd schema, version 21: every version of a memory found by its uid.
-- A purge erases each memory's revisions by uid (`memd purge --matching`
-- of thousands of rows); without this index each one read the whole
-- history, so a purge grew with the product of the two.
CREATE INDEX memory_revisions_uid ON memory_revisions (uid) WHERE uid IS NOT NULL;
