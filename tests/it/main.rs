//! The integration tests, one binary (one link instead of one per file):
//! each module starts the real `memd` binary on temporary data dirs and
//! talks to it as a user, a client or another tool would. `common` holds
//! what they share.

mod common;

mod bad_input;
mod by_id;
mod capture;
mod citations;
mod claude_code;
mod cli;
mod codex;
mod concurrency;
mod config;
mod crash;
mod daemon;
mod docs;
mod doctor;
mod drift;
mod embed;
mod embed_http;
#[cfg(feature = "local-embed")]
mod embed_model;
mod external;
mod external_load;
mod first_run;
mod fuzz_corpus;
mod gate;
mod http;
mod import_md;
mod inject;
mod install;
mod isolation;
mod lifecycle;
mod limits;
mod mcp;
mod model_fetch;
mod named_sessions;
mod namespace_move;
mod peer;
mod personal;
mod portability;
mod progress;
mod project_namespace;
mod provenance;
mod purge;
mod python;
mod relevance;
mod search;
mod secrets;
mod service;
mod sessions;
mod setup;
mod storage;
mod structure;
mod team;
mod team_errors;
mod team_faults;
mod team_load;
mod team_replica;
mod team_rights;
mod team_tls;
mod threads;
mod viewer;
mod viewer_browser;
mod wire;
mod write_path;
