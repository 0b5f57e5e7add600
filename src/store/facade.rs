//! The store's pieces that `memd-bench` uses directly, behind the `bench`
//! feature (the crate exports this module as `memd::facade`): the
//! in-process floor of its measurements — memd's schema and SQL on a plain
//! connection, without the daemon — and the team schema its PostgreSQL
//! runs set up. The store itself is the crate's own, so rustc reports
//! what nothing calls in it; this module is all a build with the feature
//! adds to the public API.

pub use super::{open_write_connection, read_generation};

/// Rows of `memories`: the insert, the reads by id and by filter.
pub mod memories {
    pub use crate::store::memories::{get_visible, insert, list};
}

/// The schema of a new file.
pub mod schema {
    pub use crate::store::schema::migrate;
}

/// One search as the daemon runs it, and what it is made of.
pub mod search {
    pub use crate::store::search::fts5::Frequencies;
    pub use crate::store::search::fusion::Fusion;
    pub use crate::store::search::rank::RankConfig;
    pub use crate::store::search::vocab::load as load_vocab;
    pub use crate::store::search::words::{query_words, share_held, significant_words};
    pub use crate::store::search::{Query, run};
}

/// The read behind a session's memory block.
pub mod inject {
    pub use crate::store::inject::{For, build};
}

/// The team's PostgreSQL: its address, a connection, its schema.
pub mod team {
    pub use crate::store::team::admin::grants::grant;
    pub use crate::store::team::admin::schema::init;
    pub use crate::store::team::conn::config::Target;
    pub use crate::store::team::conn::pg::connect;
}
