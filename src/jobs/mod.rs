//! Background jobs the daemon schedules beside the requests: the embedding
//! worker, lifecycle sweeps, the end of idle named sessions. Each runs on
//! [`Shared`](crate::state::Shared) and the store's named functions, never
//! through a request handler (see ARCHITECTURE.md "Layers").

pub mod embed;
pub mod namespaces;
pub mod sessions;
pub mod sweep;
