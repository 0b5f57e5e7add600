//! The daemon's team memory: the write-through, the pull and the rows
//! between PostgreSQL and SQLite (see [`super`]).

pub mod apply;
pub mod follow;
pub mod pull;
pub mod push;
pub mod row;
pub mod write;
