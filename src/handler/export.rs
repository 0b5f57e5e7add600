//! `export`: every memory of the asked namespaces, as JSON or Markdown, in a download the client fetches.

use memd_proto::{ExportRequest, Response};
use serde_json::json;

use super::{Ctx, HandlerError};
use crate::session::Session;
use crate::store::ops::read::ExportFormat;

/// An export (JSON or Markdown) of the session's namespace, the ones named,
/// or all, prepared for the client to fetch.
pub(super) async fn handle(
    req: ExportRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let namespaces: Option<Vec<String>> = if req.all_namespaces {
        None
    } else if req.namespaces.is_empty() {
        Some(vec![session.namespace().to_string()])
    } else {
        Some(req.namespaces.clone())
    };
    let top = if req.top == 0 { 20 } else { req.top };
    let format = match req.format.as_str() {
        "" | "json" => ExportFormat::Json,
        "markdown" | "md" => ExportFormat::Markdown { top },
        other => {
            return Err(HandlerError::InvalidInput(format!(
                "unknown export format `{other}`: expected json or markdown"
            )));
        }
    };
    let (path, file) = super::support::download::new_download(cx, session)?;
    let out = file.try_clone()?;
    let read = cx.store().export(namespaces, format, out).await?;
    let format = match format {
        ExportFormat::Json => "json",
        ExportFormat::Markdown { .. } => "markdown",
    };
    let info = json!({"entries": read.value, "generation": read.generation, "format": format});
    super::support::download::finish_download(session, path, file, info)
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, ExportRequest, Request, Response};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn exports_json_and_markdown_and_refuses_other_formats() {
        let kit = Kit::new();
        let mut a = kit.session("a");
        let mut b = kit.session("b");
        kit.add(&mut a, "the build uses make").await;
        let export = |format: &str| {
            Request::Export(ExportRequest {
                format: format.into(),
                ..ExportRequest::default()
            })
        };
        let Response::Download(d) = kit.ok(&mut b, export("json")).await else {
            panic!()
        };
        let info: serde_json::Value = serde_json::from_str(&d.info).unwrap();
        assert_eq!(info["entries"], 1);
        assert_eq!(
            b.seen(),
            info["generation"].as_u64().unwrap(),
            "an export is a read"
        );
        let doc: serde_json::Value = serde_json::from_slice(&kit.fetch_all(&mut b).await).unwrap();
        assert_eq!(doc["entries"][0]["content"], "the build uses make");
        kit.ok(&mut b, export("markdown")).await;
        let md = String::from_utf8(kit.fetch_all(&mut b).await).unwrap();
        assert!(md.contains("the build uses make"), "{md}");
        kit.err(&mut b, export("csv"), ErrorCode::InvalidInput)
            .await;
    }
}
