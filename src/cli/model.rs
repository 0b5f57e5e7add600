//! `memd model fetch`: the local embedding model's files for someone who
//! has only the binary (docs/search.md "Embeddings"). Runs in this process; no
//! daemon needed. The daemon loads the model at its next start.

use serde_json::json;

use crate::commands::args::{Global, ModelFetchArgs};
use crate::commands::{CommandError, Output, paths};
use crate::config::Config;
use crate::embed::fetch::{self, FetchError, Source};

/// Runs `memd model fetch`.
///
/// # Errors
/// A usage error for an unreadable config file; the download's, the
/// checksum's or the unpacking's error (nothing is then written).
pub fn fetch(g: &Global, a: &ModelFetchArgs) -> Result<Output, CommandError> {
    let paths = paths(g);
    let config = Config::load(&paths.config).map_err(|e| CommandError::Usage(e.to_string()))?;
    let dir = a
        .dir
        .clone()
        .unwrap_or_else(|| crate::embed::model_dir(&config.embed, |k| std::env::var_os(k)));
    let mut source = Source::default();
    if let Some(url) = &a.url {
        source.url.clone_from(url);
    }
    let done = fetch::fetch(&source, &dir, a.force).map_err(|e| match e {
        FetchError::Io(m) => CommandError::Io(m),
        other => CommandError::Io(other.to_string()),
    })?;
    let human = if done.already {
        format!(
            "the model is already in {} (--force downloads it again)",
            done.dir.display()
        )
    } else {
        let files: Vec<String> = done
            .files
            .iter()
            .map(|(n, b)| format!("{n} ({b} bytes)"))
            .collect();
        format!(
            "downloaded {} ({:.1} MB, SHA-256 {} as pinned) and wrote {} into {}; \
             restart the daemon to use it",
            source.url,
            done.downloaded as f64 / 1e6,
            source.sha256,
            files.join(", "),
            done.dir.display()
        )
    };
    Ok(Output {
        json: json!({
            "success": true,
            "dir": done.dir,
            "already": done.already,
            "url": source.url,
            "sha256": source.sha256,
            "downloaded_bytes": done.downloaded,
            "files": done.files.iter().map(|(n, b)| json!({"name": n, "bytes": b})).collect::<Vec<_>>(),
        }),
        human,
    })
}
