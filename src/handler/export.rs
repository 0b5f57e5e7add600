//! `export`: every memory of the asked namespaces, as JSON or Markdown, in a download the client fetches.

use std::io::BufWriter;

use memd_proto::{ExportRequest, Response};
use serde_json::json;

use crate::session::Session;
use crate::state::Shared;
use crate::store::readers::ReadKind;
use crate::store::{Cause, StoreError};

pub(super) async fn handle(
    req: ExportRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let namespaces: Option<Vec<String>> = if req.all_namespaces {
        None
    } else if req.namespaces.is_empty() {
        Some(vec![session.namespace().to_string()])
    } else {
        Some(req.namespaces.clone())
    };
    let markdown = match req.format.as_str() {
        "" | "json" => false,
        "markdown" | "md" => true,
        other => {
            return Err(StoreError::InvalidInput(format!(
                "unknown export format `{other}`: expected json or markdown"
            )));
        }
    };
    let top = if req.top == 0 { 20 } else { req.top };
    let (path, file) = super::support::download::new_download(shared, session)?;
    let out = file.try_clone()?;
    let read = shared
        .store
        .readers
        .read(ReadKind::Client, move |conn| {
            let mut w = BufWriter::new(out);
            let n = if markdown {
                crate::store::export::write_markdown(conn, namespaces.as_deref(), top, &mut w)?
            } else {
                crate::store::export::write_json(conn, namespaces.as_deref(), &mut w)?
            };
            let file = w
                .into_inner()
                .map_err(|e| StoreError::Io(Cause::of(e.into_error())))?;
            file.sync_all()?;
            Ok(n)
        })
        .await?;
    session.saw(read.generation, []);
    let info = json!({"entries": read.value, "generation": read.generation,
                      "format": if markdown { "markdown" } else { "json" }});
    super::support::download::finish_download(session, path, file, info)
}
