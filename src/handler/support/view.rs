//! The views handlers share.

use memd_proto::Filter;
use time::OffsetDateTime;

use crate::gate::{self, View};
use crate::session::Session;
use crate::store::StoreError;

/// What a session may see, superseded and archived rows included (for
/// reads by id: `history`, `supersede`).
pub(crate) fn everything(session: &Session) -> Result<View, StoreError> {
    let filter = Filter {
        include_superseded: true,
        include_archived: true,
        ..Filter::default()
    };
    Ok(gate::view(
        &filter,
        &session.who,
        OffsetDateTime::now_utc(),
    )?)
}
