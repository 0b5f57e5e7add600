//! The HTTP embedding backends against a real HTTP server on loopback
//! speaking each protocol: batches, order, normalization, retries with
//! backoff, timeouts and clear errors.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common::provider::{Fault, Provider, bag};
use memd::embed::http::{HttpEmbedder, HttpSettings, Protocol};
use memd::embed::{EmbedError, Embedder, normalize};

fn settings(p: &Provider, protocol: Protocol, model: &str) -> HttpSettings {
    HttpSettings {
        protocol,
        url: p.url.clone(),
        model: model.into(),
        api_key: None,
        timeout: Duration::from_millis(500),
        retries: 2,
        backoff: Duration::from_millis(20),
    }
}

fn unit(text: &str, dim: usize) -> Vec<f32> {
    let mut v = bag(text, dim);
    normalize(&mut v);
    v
}

#[test]
fn both_protocols_embed_batches_in_order() {
    let p = Provider::start();
    for (protocol, prefix) in [(Protocol::Ollama, "ollama"), (Protocol::Openai, "openai")] {
        let mut s = settings(&p, protocol, "bag-8");
        s.api_key = Some("sk-test".into());
        let e = HttpEmbedder::connect(s).unwrap();
        assert_eq!(e.dim(), 8, "{prefix}");
        assert_eq!(e.model_id(), format!("{prefix}:bag-8"));
        let texts = ["alpha beta", "gamma", "beta alpha delta"];
        let before = p.requests.load(Ordering::SeqCst);
        let got = e.embed(&texts).unwrap();
        assert_eq!(
            p.requests.load(Ordering::SeqCst),
            before + 1,
            "one request per batch"
        );
        for (t, v) in texts.iter().zip(&got) {
            assert_eq!(v, &unit(t, 8), "{prefix}: {t}");
        }
    }
    assert!(
        p.tokens
            .lock()
            .unwrap()
            .iter()
            .any(|t| t == "Bearer sk-test")
    );
}

#[test]
fn server_errors_are_retried_with_backoff() {
    let p = Provider::start();
    let e = HttpEmbedder::connect(settings(&p, Protocol::Ollama, "bag-8")).unwrap();
    p.fail_next(&[
        Fault::Status(503, "loading"),
        Fault::Status(429, "slow down"),
    ]);
    let before = p.requests.load(Ordering::SeqCst);
    let v = e.embed(&["x y"]).unwrap();
    assert_eq!(v[0], unit("x y", 8));
    assert_eq!(p.requests.load(Ordering::SeqCst), before + 3);
    // Three failures in a row exhaust the two retries.
    p.fail_next(&[
        Fault::Status(500, "boom"),
        Fault::Status(500, "boom"),
        Fault::Status(500, "boom"),
    ]);
    let err = e.embed(&["x"]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, EmbedError::Provider(_)), "{err:?}");
    assert!(
        msg.contains("500") && msg.contains("boom") && msg.contains("3 attempts"),
        "{msg}"
    );
}

#[test]
fn client_errors_fail_at_once_with_the_providers_message() {
    let p = Provider::start();
    let err = HttpEmbedder::connect(settings(&p, Protocol::Openai, "no-such-model"))
        .err()
        .unwrap();
    let msg = err.to_string();
    assert!(
        msg.contains("404") && msg.contains("no-such-model") && msg.contains(&p.url),
        "{msg}"
    );
    assert_eq!(p.requests.load(Ordering::SeqCst), 1, "a 404 is not retried");
    let e = HttpEmbedder::connect(settings(&p, Protocol::Openai, "bag-4")).unwrap();
    p.fail_next(&[Fault::Status(400, "input too long")]);
    let err = e.embed(&["x"]).unwrap_err();
    assert!(err.to_string().contains("input too long"), "{err}");
}

#[test]
fn a_stalled_provider_times_out_and_is_retried() {
    let p = Provider::start();
    let e = HttpEmbedder::connect(settings(&p, Protocol::Ollama, "bag-8")).unwrap();
    // One stall, then an answer: the retry succeeds.
    p.fail_next(&[Fault::Stall(Duration::from_secs(2))]);
    let t = Instant::now();
    assert_eq!(e.embed(&["a"]).unwrap()[0], unit("a", 8));
    assert!(
        t.elapsed() >= Duration::from_millis(500),
        "the first attempt waited for the timeout"
    );
    // Stalls on every attempt: an unreachable error after the retries.
    p.fail_next(&[Fault::Stall(Duration::from_secs(3)); 3]);
    let t = Instant::now();
    let err = e.embed(&["a"]).unwrap_err();
    assert!(matches!(err, EmbedError::Unreachable(_)), "{err:?}");
    assert!(err.to_string().contains("3 attempts"), "{err}");
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "timeouts bound the wait: {:?}",
        t.elapsed()
    );
}

#[test]
fn nobody_listening_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let s = HttpSettings {
        protocol: Protocol::Ollama,
        url: format!("http://127.0.0.1:{port}"),
        model: "bag-8".into(),
        api_key: None,
        timeout: Duration::from_millis(300),
        retries: 1,
        backoff: Duration::from_millis(10),
    };
    let err = HttpEmbedder::connect(s).err().unwrap();
    assert!(matches!(err, EmbedError::Unreachable(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("cannot reach") && msg.contains(&port.to_string()),
        "{msg}"
    );
}
