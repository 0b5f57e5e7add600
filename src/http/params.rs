//! Query strings and JSON bodies, read strictly: an unknown parameter or
//! field, a repeated one that may appear once, a number that is not one, a
//! body that is not JSON or not `application/json` — each is a clear 4xx,
//! never silently ignored.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;

use super::problem::Problem;

/// A query string's pairs, in order.
#[derive(Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Parses `query` and checks every name is in `known`.
    ///
    /// # Errors
    /// 400 naming an unknown parameter.
    pub fn parse(query: Option<&str>, known: &[&str]) -> Result<Params, Problem> {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if let Some((k, _)) = pairs.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            return Err(Problem::bad(format!(
                "unknown query parameter `{k}` (known: {})",
                known.join(", ")
            )));
        }
        Ok(Params(pairs))
    }

    /// The value of `name` as given (empty when it has none), at most once.
    fn raw(&self, name: &str) -> Result<Option<String>, Problem> {
        let mut found = self.0.iter().filter(|(k, _)| k == name);
        let first = found.next().map(|(_, v)| v.clone());
        if found.next().is_some() {
            return Err(Problem::bad(format!(
                "query parameter `{name}` is given more than once"
            )));
        }
        Ok(first)
    }

    /// The value of `name`, given at most once; an empty one (a form's
    /// field left blank) is none.
    ///
    /// # Errors
    /// 400 when it is given twice.
    pub fn one(&self, name: &str) -> Result<Option<String>, Problem> {
        Ok(self.raw(name)?.filter(|v| !v.is_empty()))
    }

    /// Every value of `name` but empty ones.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// `name` as a number.
    ///
    /// # Errors
    /// 400 when it is not one.
    pub fn number<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, Problem> {
        self.one(name)?
            .map(|v| {
                v.trim()
                    .parse()
                    .map_err(|_| Problem::bad(format!("`{name}` must be a number, not `{v}`")))
            })
            .transpose()
    }

    /// `name` as a boolean (`true`/`false`/`1`/`0`; present without a value
    /// is true).
    ///
    /// # Errors
    /// 400 for another value.
    pub fn flag(&self, name: &str) -> Result<bool, Problem> {
        match self.raw(name)?.as_deref() {
            None | Some("false" | "0") => Ok(false),
            Some("" | "true" | "1") => Ok(true),
            Some(other) => Err(Problem::bad(format!(
                "`{name}` must be true or false, not `{other}`"
            ))),
        }
    }
}

/// A JSON body of type `T` (its type denies unknown fields).
///
/// # Errors
/// 415 for another content type, 413 for a body over the limit, 400 for a
/// body that is not JSON or not `T`.
pub fn json<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, Problem> {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = kind.split(';').next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err(Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_input",
            format!(
                "the body must be application/json, not `{}`",
                if kind.is_empty() { "(none)" } else { kind }
            ),
        ));
    }
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "frame_too_large",
                format!(
                    "the body is over the {}-byte limit",
                    memd_proto::MAX_FRAME_LEN
                ),
            )
        } else {
            Problem::bad(format!("cannot read the body: {e}"))
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|e| Problem::bad(format!("the body: {e}")))
}

/// A JSON body read as the wire request `T` — the binary protocol's own
/// fields, so the API spells none again: a key `T` does not have, or one
/// `except` names, is refused; a missing one takes `T`'s default; a
/// `metadata` object stands for the JSON text the wire carries.
///
/// # Errors
/// As [`json`], and 400 for an unknown field or a value of the wrong type.
pub fn json_as<T>(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    except: &[&str],
) -> Result<T, Problem>
where
    T: DeserializeOwned + serde::Serialize + Default,
{
    let given: serde_json::Map<String, serde_json::Value> = json(headers, body)?;
    let serde_json::Value::Object(mut all) =
        serde_json::to_value(T::default()).map_err(|e| Problem::bad(e.to_string()))?
    else {
        return Err(Problem::bad("the request type is not an object"));
    };
    for (k, mut v) in given {
        if !all.contains_key(&k) || except.contains(&k.as_str()) {
            let mut known: Vec<&String> = all
                .keys()
                .filter(|k| !except.contains(&k.as_str()))
                .collect();
            known.sort();
            let known: Vec<&str> = known.iter().map(|k| k.as_str()).collect();
            return Err(Problem::bad(format!(
                "unknown field `{k}` (known: {})",
                known.join(", ")
            )));
        }
        if k == "metadata" && v.is_object() {
            v = serde_json::Value::String(v.to_string());
        }
        all.insert(k, v);
    }
    serde_json::from_value(serde_json::Value::Object(all))
        .map_err(|e| Problem::bad(format!("the body: {e}")))
}

/// A path's id.
///
/// # Errors
/// 400 when it is not a number.
pub fn id(text: &str) -> Result<i64, Problem> {
    text.parse()
        .map_err(|_| Problem::bad(format!("`{text}` is not a memory id (a number)")))
}
