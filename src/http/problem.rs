//! Errors as HTTP answers: `application/problem+json` (RFC 9457) carrying
//! the CLI's `code` and the fields of its `--json` error (`current` and
//! `changed_by` of a drift refusal, `operation_id`, the gate's `reason`…),
//! and the one table of which code gets which status ([`status_of`]).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use memd_proto::{ErrorBody, ErrorCode};
use serde_json::{Map, Value, json};

/// The status of an error code: the one place it is decided.
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        // A stale write: the row changed after the version this request
        // read (If-Match, or the session's read), or another tool changed
        // the database after the session's view.
        ErrorCode::Drift => StatusCode::PRECONDITION_FAILED,
        ErrorCode::Rejected => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::Conflict | ErrorCode::TeamUnpushed => StatusCode::CONFLICT,
        ErrorCode::PermissionDenied | ErrorCode::Forbidden => StatusCode::FORBIDDEN,
        ErrorCode::FrameTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::InvalidInput
        | ErrorCode::MalformedFrame
        | ErrorCode::UnknownRequest
        | ErrorCode::HandshakeRequired
        | ErrorCode::ProtocolMismatch
        | ErrorCode::NotConfigured => StatusCode::BAD_REQUEST,
        ErrorCode::StorageFull => StatusCode::INSUFFICIENT_STORAGE,
        ErrorCode::TeamUnavailable
        | ErrorCode::TeamOutcomeUnknown
        | ErrorCode::ReadOnly
        | ErrorCode::Busy
        | ErrorCode::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A failed request, as HTTP answers it.
#[derive(Debug)]
pub struct Problem {
    status: StatusCode,
    body: Map<String, Value>,
}

impl Problem {
    /// The daemon's error, with the status its code gets.
    pub fn from_body(e: &ErrorBody) -> Problem {
        let mut body = match memd_proto::json::error(e) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        body.remove("success");
        let detail = body.remove("error").unwrap_or(Value::Null);
        let status = status_of(e.code);
        body.insert("detail".into(), detail);
        Problem::with(status, body)
    }

    /// An error found by the HTTP layer itself (a header, a body, a path),
    /// with its status, code and message.
    pub fn new(status: StatusCode, code: &str, detail: impl Into<String>) -> Problem {
        let mut body = Map::new();
        body.insert("code".into(), json!(code));
        body.insert("detail".into(), json!(detail.into()));
        Problem::with(status, body)
    }

    /// The same problem with one more member (`current`, `rev_now`…).
    pub fn with_field(mut self, key: &str, value: Value) -> Problem {
        self.body.insert(key.into(), value);
        self
    }

    /// Bad input: 400 with `invalid_input`.
    pub fn bad(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, "invalid_input", detail)
    }

    fn with(status: StatusCode, mut body: Map<String, Value>) -> Problem {
        body.insert("type".into(), json!("about:blank"));
        body.insert(
            "title".into(),
            json!(status.canonical_reason().unwrap_or("Error")),
        );
        body.insert("status".into(), json!(status.as_u16()));
        Problem { status, body }
    }

    /// Its status.
    #[cfg(test)]
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Its body.
    pub fn body(&self) -> &Map<String, Value> {
        &self.body
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let text = serde_json::to_vec(&Value::Object(self.body)).unwrap_or_default();
        let mut r = (self.status, text).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_has_the_status_the_contract_names() {
        let table = [
            (ErrorCode::Drift, 412),
            (ErrorCode::Rejected, 422),
            (ErrorCode::NotFound, 404),
            (ErrorCode::TeamUnavailable, 503),
            (ErrorCode::TeamOutcomeUnknown, 503),
            (ErrorCode::PermissionDenied, 403),
            (ErrorCode::Forbidden, 403),
            (ErrorCode::InvalidInput, 400),
            (ErrorCode::FrameTooLarge, 413),
            (ErrorCode::Conflict, 409),
            (ErrorCode::Internal, 500),
        ];
        for (code, status) in table {
            assert_eq!(status_of(code).as_u16(), status, "{}", code.as_str());
        }
    }

    #[test]
    fn a_problem_carries_the_code_and_the_cli_fields() {
        let mut e = ErrorBody::new(ErrorCode::TeamOutcomeUnknown, "may have been applied");
        e.operation_id = Some("op-1".into());
        let p = Problem::from_body(&e);
        assert_eq!(p.status(), StatusCode::SERVICE_UNAVAILABLE);
        let b = p.body();
        assert_eq!(b["code"], "team_outcome_unknown");
        assert_eq!(b["operation_id"], "op-1");
        assert_eq!(b["detail"], "may have been applied");
        assert_eq!(b["status"], 503);
        assert!(!b.contains_key("success"));
    }
}
