//! `GET /v1/openapi.json`: the OpenAPI document of the API, written by
//! hand beside the router (the JSON shapes come from `memd_proto::json`,
//! not from derives a generator could read) and held against
//! [`super::ROUTES`] and the router by tests.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

/// The document.
pub const DOCUMENT: &str = include_str!("openapi.json");

/// `GET /v1/openapi.json`.
pub async fn document() -> Response {
    let mut r = DOCUMENT.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn the_document_lists_exactly_the_routes() {
        let doc: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
        let mut documented = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                documented.insert((path.clone(), method.clone()));
            }
        }
        let routed: BTreeSet<(String, String)> = super::super::ROUTES
            .iter()
            .flat_map(|(path, methods)| {
                methods
                    .iter()
                    .map(move |m| ((*path).to_string(), (*m).to_string()))
            })
            .collect();
        assert_eq!(documented, routed);
    }
}
