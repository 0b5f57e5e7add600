//! The views handlers share.

use memd_proto::Filter;
use time::OffsetDateTime;

use crate::gate::{self, GateError, View};
use crate::session::Session;

/// `text` as a display shows it: on one line, secrets redacted, at most
/// `max` characters (cut with `…`). The one shortening every surface (CLI,
/// viewer, errors) uses, so a cut never keeps a secret almost whole.
pub(crate) fn preview(text: &str, max: usize) -> String {
    gate::secrets::shorten(text, max)
}

/// What a session may see, superseded and archived rows included (for
/// reads by id: `history`, `supersede`).
pub(crate) fn everything(session: &Session) -> Result<View, GateError> {
    let filter = Filter {
        include_superseded: true,
        include_archived: true,
        ..Filter::default()
    };
    gate::view(&filter, &session.who, OffsetDateTime::now_utc())
}
