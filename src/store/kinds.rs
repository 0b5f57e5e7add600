//! What kind a memory row is, each predicate spelled once (the structure
//! test `row_kinds_are_spelled_once` fails on a second spelling anywhere in
//! `src/`): a captured turn, history (a captured or an ingested turn, not a
//! note someone wrote), a row this machine owns (not a team row applied
//! from PostgreSQL). Each is a macro that expands to a string literal, so a
//! statement built with `concat!` stays one literal; give the table's alias
//! (`captured!("m")`, `captured!("OLD")`) where the statement has one.

/// A captured turn (`memd hook`, `memd capture`).
macro_rules! captured {
    () => {
        "source = 'capture'"
    };
    ($alias:literal) => {
        concat!($alias, ".source = 'capture'")
    };
}

/// Anything but a captured turn.
macro_rules! not_captured {
    () => {
        "source <> 'capture'"
    };
    ($alias:literal) => {
        concat!($alias, ".source <> 'capture'")
    };
}

/// A note someone wrote: neither a captured nor an ingested turn (history
/// ranks among its own kind, never enters a block, never counts against a
/// scope's limit).
macro_rules! not_history {
    () => {
        "source NOT IN ('capture', 'ingest')"
    };
    ($alias:literal) => {
        concat!($alias, ".source NOT IN ('capture', 'ingest')")
    };
}

/// A row this machine owns: never synced from or to the team (a team row
/// carries the team's revision, and the team's lifecycle is the team's).
macro_rules! local_row {
    () => {
        "team_rev IS NULL"
    };
    ($alias:literal) => {
        concat!($alias, ".team_rev IS NULL")
    };
}

/// A row synced with the team (it carries the team's revision).
macro_rules! synced_row {
    () => {
        "team_rev IS NOT NULL"
    };
    ($alias:literal) => {
        concat!($alias, ".team_rev IS NOT NULL")
    };
}

pub(crate) use {captured, local_row, not_captured, not_history, synced_row};
