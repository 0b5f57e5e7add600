//! Reaching the team's PostgreSQL: `[team]`, URLs, passwords, TLS and
//! connections (see [`super`]).

pub mod config;
pub(in crate::store) mod pg;
