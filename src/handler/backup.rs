//! `backup`: a consistent copy of the database, in a download the client fetches.

use memd_proto::{BackupRequest, Response};
use serde_json::json;

use super::{Ctx, HandlerError};
use crate::session::Session;

fn restrict(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

/// A consistent online copy of the database, prepared for the client to
/// fetch.
pub(super) async fn handle(
    _req: BackupRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let (path, file) = super::support::download::new_download(cx, session)?;
    drop(file);
    // The backup API, all pages in one step: one consistent read of the
    // database while writes go on.
    let generation = cx.store().backup_to(path.clone()).await?;
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

#[cfg(test)]
mod tests {
    use memd_proto::{BackupRequest, Request, Response};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_consistent_copy_another_sqlite_opens() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        kit.add(&mut s, "the build uses make").await;
        let Response::Download(d) = kit.ok(&mut s, Request::Backup(BackupRequest {})).await else {
            panic!()
        };
        let info: serde_json::Value = serde_json::from_str(&d.info).unwrap();
        assert_eq!(
            info["generation"].as_u64(),
            Some(kit.shared.store.generations.current())
        );
        let bytes = kit.fetch_all(&mut s).await;
        assert_eq!(bytes.len() as u64, d.size);
        let copy = kit.dir.path().join("copy.db");
        std::fs::write(&copy, &bytes).unwrap();
        if let Some(out) = crate::store::testing::contents(&copy) {
            assert_eq!(out, ["the build uses make"]);
        }
    }
}
