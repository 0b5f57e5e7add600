//! The views handlers share.

use memd_proto::Filter;
use time::OffsetDateTime;

use crate::session::Session;
use crate::store::memories::View;
use crate::store::{StoreError, gate};

pub(crate) fn everything(session: &Session) -> Result<View, StoreError> {
    let filter = Filter {
        include_superseded: true,
        include_archived: true,
        ..Filter::default()
    };
    gate::view(&filter, &session.who, OffsetDateTime::now_utc())
}
