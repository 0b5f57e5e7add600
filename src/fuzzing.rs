//! The bodies of memd's fuzz targets, shared by the `cargo fuzz` targets in
//! `fuzz/` and the stable test that replays their corpora
//! (`tests/it/fuzz_corpus.rs`). Each takes arbitrary bytes, must never panic,
//! and asserts the property its input surface promises.

use memd_proto::{Frame, Request, Response};

/// Frame decoding: bytes as a peer could send them, fed to the codec's
/// [`memd_proto::FrameBuffer`] in two reads, after a preamble. A body that
/// decodes as a request or a response re-encodes to bytes that decode to the
/// same message; nothing panics or allocates past the frame limit.
pub fn frame(data: &[u8]) {
    let mut buf = memd_proto::FrameBuffer::new();
    let (first, second) = data.split_at(data.len() / 2);
    buf.extend(first);
    if let Some(pre) = buf.take_preamble() {
        let _ = memd_proto::parse_preamble(&pre);
    }
    buf.extend(second);
    while let Ok(Some(body)) = buf.next_body() {
        if let Ok(f) = memd_proto::decode::<Request>(&body) {
            round_trip(f);
        }
    }
    request(data);
    if let Ok(f) = memd_proto::decode::<Response>(data) {
        round_trip(f);
    }
}

/// A decoded message, encoded and decoded again, encodes to the same bytes.
/// (Bytes are compared, not values: a NaN is not equal to itself.)
fn round_trip<B>(f: Frame<B>)
where
    B: serde::Serialize + serde::de::DeserializeOwned,
{
    let once = memd_proto::encode(&f).expect("a decoded message encodes");
    let back: Frame<B> =
        memd_proto::decode(&once[memd_proto::HEADER_LEN..]).expect("an encoded message decodes");
    let twice = memd_proto::encode(&back).expect("a decoded message encodes");
    assert_eq!(once, twice, "round trip");
}

/// Request decoding: a frame body. A request that decodes survives a round
/// trip, and `peek_id` agrees with the decoded id.
pub fn request(data: &[u8]) {
    let _ = memd_proto::peek_id(data);
    if let Ok(f) = memd_proto::decode::<Request>(data) {
        assert_eq!(memd_proto::peek_id(data), Some(f.id));
        round_trip(f);
    }
}

/// The search query builder: whatever a user types, the plain-syntax query
/// is valid FTS5 (no character of the input acts as an operator), and the
/// fuzzy edit distances agree with each other.
pub fn query(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some(q) = crate::store::search::words::plain_query(&text)
        && let Err(e) = crate::store::search::words::check_match_syntax(&q)
    {
        panic!("plain query {q:?} from {text:?} is not valid FTS5: {e}");
    }
    let words = crate::store::search::words::query_words(&text);
    if let [a, b, ..] = words.as_slice() {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let full = crate::store::search::fuzzy::osa(&a, &b);
        for limit in 0..3 {
            let bounded = crate::store::search::fuzzy::osa_within(&a, &b, limit);
            assert_eq!(
                bounded.min(limit + 1),
                full.min(limit + 1),
                "{a:?} {b:?} {limit}"
            );
        }
        let s = crate::store::search::fuzzy::similarity(&words[0], &words[1]);
        assert!((0.0..=1.0).contains(&s), "similarity {s}");
    }
    let _ = crate::store::search::fuzzy::match_quality(&words, &text);
}

/// The write gate's detectors on arbitrary text: code-derivable and secret
/// detection never panic, redacted text holds no secret the detector finds
/// (other than around the `[REDACTED]` marker itself), and near-duplicate
/// profiles compare a text as identical to itself.
pub fn gate(data: &[u8]) {
    use crate::gate::{code, dedupe_key, secrets, similar};
    let text = String::from_utf8_lossy(data);
    let _ = code::detect(&text);
    let found = secrets::find(&text);
    let redacted = secrets::redact(&text, &found);
    for f in secrets::find(&redacted) {
        let left = &redacted[f.span.clone()];
        assert!(
            left.contains("[REDACTED]") || left.contains("REDACTED"),
            "{left:?} is still a secret after redaction of {text:?}"
        );
    }
    let _ = dedupe_key(&text);
    let p = similar::profile(&text);
    let j = similar::jaccard(&p, &p);
    assert!(
        j == 1.0 || similar::words(&text).len() < 3,
        "self-similarity {j}"
    );
    let _ = similar::sketch(&p);
    let config = crate::config::Config::default();
    let who = crate::gate::Who {
        namespace: "default".into(),
        agent: "fuzz".into(),
        session: "fuzz".into(),
        reach: crate::session::ident::Reach::default(),
    };
    let req = memd_proto::AddRequest {
        content: text.into_owned(),
        ..Default::default()
    };
    let _ = crate::gate::check_add(
        &req,
        &who,
        &config.gate_rules(),
        time::OffsetDateTime::UNIX_EPOCH,
    );
}

/// The HTTP API's own parsing: a request as a client could send it — its
/// head parsed as hyper parses it, then memd's readers of the query string,
/// the `Memd-*` headers, `If-Match`, a path's id and a JSON body. Nothing
/// panics, and every refusal is a problem with a 4xx status, a `code` and
/// a `detail`.
pub fn http(data: &[u8]) {
    let split = data
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or((data, &[][..]), |at| (&data[..at + 4], &data[at + 4..]));
    let (head, body) = split;
    let mut slots = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut slots);
    let Ok(httparse::Status::Complete(_)) = req.parse(head) else {
        return;
    };
    let mut headers = axum::http::HeaderMap::new();
    for h in req.headers.iter() {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(h.name.as_bytes()),
            axum::http::HeaderValue::from_bytes(h.value),
        ) {
            headers.append(name, value);
        }
    }
    let path = req.path.unwrap_or("/");
    let (path, query) = path
        .split_once('?')
        .map_or((path, None), |(p, q)| (p, Some(q)));
    crate::http::fuzz_one(&headers, path, query, body);
}
