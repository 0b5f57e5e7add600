//! `backup`: a consistent copy of the database, in a download the client fetches.

use memd_proto::{BackupRequest, Response};
use serde_json::json;

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

fn restrict(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

pub(super) async fn handle(
    _req: BackupRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let (path, file) = super::support::download::new_download(shared, session)?;
    drop(file);
    let target = path.clone();
    // The backup API, all pages in one step: one consistent read of the
    // database while writes go on.
    let generation = shared
        .store
        .readers
        .with_connection(move |src| {
            std::fs::remove_file(&target)?;
            crate::store::health::copy_to(src, &target)
        })
        .await?;
    restrict(&path);
    let file = std::fs::OpenOptions::new().read(true).open(&path)?;
    file.sync_all()?;
    super::support::download::finish_download(
        session,
        path,
        file,
        json!({"generation": generation}),
    )
}
