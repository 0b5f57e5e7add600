//! Code citations: the cited memories a client checks, the verdicts it
//! reports, and the last ones this machine knows (see `store::citations`).

use memd_proto::cite::{Checked, Cited};

use crate::gate::View;
use crate::session::ident::Author;
use crate::store::citations;
use crate::store::readers::{Read, ReadKind};
use crate::store::{Store, StoreError};

impl Store {
    /// The live memories `view` sees that cite code (`only` one of them),
    /// oldest first, with the last verdicts on their citations.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn cited(
        &self,
        view: View,
        only: Option<i64>,
    ) -> Result<Read<Vec<Cited>>, StoreError> {
        self.readers
            .read(ReadKind::Client, move |conn| {
                let mut cited = citations::cited(conn, &view, only)?;
                let ids: Vec<i64> = cited.iter().map(|m| m.id).collect();
                let mut last = citations::last(conn, &ids)?;
                for m in &mut cited {
                    m.last = last.remove(&m.id).unwrap_or_default();
                }
                Ok(cited)
            })
            .await
    }

    /// Records verdicts a client computed as the last ones on their
    /// citations (not an edit of a memory: no generation, no revision).
    /// Returns how many were recorded.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn record_verdicts(
        &self,
        author: Author,
        checked: Vec<Checked>,
    ) -> Result<u32, StoreError> {
        self.writer
            .call(author, move |ctx| {
                citations::record(ctx.conn, &checked, &crate::clock::now())
            })
            .await
    }
}
