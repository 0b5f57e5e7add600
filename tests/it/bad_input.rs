//! A corpus of bad and unusual input through the real socket and CLI: each
//! input gets a clear error or is stored and found exactly, and the daemon
//! keeps serving. (Malformed frames are in `wire.rs`.)

use crate::common::Daemon;
use crate::common::wire::witness_works;
use memd_client::error::Error;
use memd_client::proto::{Filter, SearchRequest};
use memd_client::{AddRequest, Client, UpdateRequest};

fn add(content: &str) -> AddRequest {
    AddRequest {
        content: content.into(),
        ..Default::default()
    }
}

/// The ids of a search for `query`.
async fn found(c: &mut Client, query: &str) -> Vec<i64> {
    c.search(SearchRequest {
        query: query.into(),
        filter: Filter::default(),
        limit: 20,
        mode: Default::default(),
        syntax: Default::default(),
        explain: false,
        offset: 0,
    })
    .await
    .unwrap_or_else(|e| panic!("search {query:?}: {e}"))
    .hits
    .iter()
    .map(|h| h.memory.id)
    .collect()
}

/// An invalid-input error whose message contains `needle`.
fn invalid(result: Result<impl std::fmt::Debug, Error>, needle: &str) {
    match result {
        Err(Error::InvalidInput(body)) => {
            assert!(
                body.message.contains(needle),
                "{needle:?} not in {:?}",
                body.message
            );
        }
        other => panic!("expected invalid input ({needle}), got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_and_malformed_fields_get_clear_errors() {
    let d = Daemon::start();
    let mut c = d.client().await;

    // 10 MB of content is over the frame limit: refused before it is sent.
    let big = "a".repeat(10_000_000);
    match c.add(add(&big)).await {
        Err(e) => assert!(e.to_string().contains("frame limit"), "{e}"),
        Ok(r) => panic!("10 MB accepted: {r:?}"),
    }
    // Just over the content limit is the gate's `too_large`.
    match c.add(add(&"b".repeat(10 * 1024 + 1))).await {
        Err(Error::Rejected(body)) => assert_eq!(body.reason.as_deref(), Some("too_large")),
        other => panic!("{other:?}"),
    }
    // A NUL byte.
    invalid(c.add(add("before\0after")).await, "NUL");
    // Metadata: not an object, nested too deep, too large.
    let mut req = add("metadata that is a list");
    req.metadata = Some("[1, 2]".into());
    invalid(c.add(req).await, "object");
    let deep = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
    let mut req = add("metadata nested 20 deep");
    req.metadata = Some(deep(20));
    invalid(c.add(req).await, "nested deeper");
    let mut req = add("metadata nested 2000 deep");
    req.metadata = Some(deep(2_000));
    invalid(c.add(req).await, "recursion limit");
    let mut req = add("metadata of a megabyte");
    req.metadata = Some(format!("{{\"k\": \"{}\"}}", "m".repeat(1 << 20)));
    invalid(c.add(req).await, "max_metadata_bytes");
    let mut req = add("metadata that is not JSON");
    req.metadata = Some("{nope".into());
    invalid(c.add(req).await, "JSON");
    // 10,000 tags, and one tag of 10,000 characters.
    let mut req = add("ten thousand tags");
    req.tags = (0..10_000).map(|i| format!("t{i}")).collect();
    invalid(c.add(req).await, "max_tags");
    let mut req = add("one enormous tag");
    req.tags = vec!["x".repeat(10_000)];
    invalid(c.add(req).await, "max_tag_chars");
    // Out-of-range numbers.
    let mut req = add("tier nine");
    req.tier = Some(9);
    invalid(c.add(req).await, "tier");
    let mut req = add("confidence beyond one");
    req.confidence = Some(f64::NAN);
    invalid(c.add(req).await, "confidence");

    witness_works(&mut c, 0).await;
    let status = c.status().await.unwrap();
    assert_eq!(
        status["counts"]["memories"], 1,
        "only the witness: {status}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn any_id_is_found_or_not_found() {
    let d = Daemon::start();
    let mut c = d.client().await;
    let real = c.add(add("the only memory")).await.unwrap().id.unwrap();
    for id in [-1, 0, i64::MIN, i64::MAX, real + 1_000_000] {
        assert!(
            matches!(c.get(id).await, Err(Error::NotFound(_))),
            "get {id}"
        );
        let upd = c
            .update(UpdateRequest {
                id,
                content: Some("x".into()),
                ..Default::default()
            })
            .await;
        assert!(
            matches!(upd, Err(Error::NotFound(_))),
            "update {id}: {upd:?}"
        );
        assert!(
            matches!(c.forget(id, None).await, Err(Error::NotFound(_))),
            "forget {id}"
        );
        assert!(c.history(id).await.is_err(), "history {id}");
        assert!(c.supersede(id, real).await.is_err(), "supersede {id}");
        assert!(c.supersede(real, id).await.is_err(), "supersede by {id}");
    }
    assert_eq!(c.get(real).await.unwrap().content, "the only memory");
    // The CLI: a number too large for an id is a usage error.
    let (v, code) = d.json(&["get", "99999999999999999999"]);
    assert_eq!(code, 2, "{v}");
    let (v, code) = d.json(&["forget", "-7"]);
    assert_eq!((code, v["code"].as_str()), (1, Some("not_found")), "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn unusual_text_is_stored_byte_for_byte_and_found() {
    let d = Daemon::start();
    let mut c = d.client().await;
    let cases = [
        // Composed and decomposed forms of the same word.
        ("composed", "Le café ouvre à sept heures", "ouvre"),
        ("decomposed", "Le cafe\u{301} du matin est fort", "matin"),
        ("right to left", "שלום עולם and مرحبا بالعالم mixed", "שלום"),
        ("arabic", "مرحبا بالعالم greeting test", "بالعالم"),
        ("emoji", "rocket launch 🚀 went fine 👍🏽", "rocket"),
        ("zero width", "zero\u{200b}width joiner text", "joiner"),
        ("quotes", "she said \"hello\" and 'bye' `tick`", "hello"),
        ("sql", "x'); DROP TABLE memories; --", "DROP"),
        ("sql or", "' OR '1'='1' --", "OR"),
        (
            "fts operators",
            "col:value NEAR(a b) \"phrase\" -neg *star",
            "NEAR(a",
        ),
        ("control chars", "tab\there\rcarriage\u{7}bell", "carriage"),
        ("long word", &format!("{} end", "z".repeat(2_000)), "end"),
    ];
    let mut ids = Vec::new();
    for (what, text, _) in &cases {
        let r = c
            .add(add(text))
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(r.accepted && r.merged_into.is_none(), "{what}: {r:?}");
        ids.push(r.id.unwrap());
    }
    for ((what, text, word), id) in cases.iter().zip(&ids) {
        let m = c.get(*id).await.unwrap();
        assert_eq!(m.content.as_bytes(), text.as_bytes(), "{what} changed");
        assert!(
            found(&mut c, word).await.contains(id),
            "{what}: searching {word:?} does not find it"
        );
    }
    // Diacritics fold: both forms of "café" are found without the accent.
    let cafe = found(&mut c, "cafe").await;
    assert!(cafe.contains(&ids[0]) && cafe.contains(&ids[1]), "{cafe:?}");
    // An emoji alone is no word: no hits, no error.
    assert!(found(&mut c, "🚀").await.is_empty());

    // SQL in tags, metadata keys and values, filters and namespaces is data.
    let evil = "x' OR '1'='1";
    let mut req = add("tagged with an injection attempt");
    req.tags = vec![evil.into(), "ok".into()];
    req.metadata = Some(r#"{"a'; DROP TABLE memory_meta; --": "1' OR 1=1 --"}"#.into());
    let id = c.add(req).await.unwrap().id.unwrap();
    let m = c.get(id).await.unwrap();
    // Tags are lower-cased, nothing else.
    assert_eq!(m.tags, vec!["ok".to_string(), evil.to_lowercase()]);
    let by_tag = c
        .list(memd_client::ListRequest {
            filter: Filter {
                tags: vec![evil.into()],
                ..Default::default()
            },
            limit: 10,
            offset: 0,
        })
        .await
        .unwrap();
    assert_eq!(by_tag.memories.len(), 1);
    let by_meta = c
        .list(memd_client::ListRequest {
            filter: Filter {
                meta: vec![(
                    "a'; DROP TABLE memory_meta; --".into(),
                    "\"1' OR 1=1 --\"".into(),
                )],
                ..Default::default()
            },
            limit: 10,
            offset: 0,
        })
        .await
        .unwrap();
    assert_eq!(by_meta.memories.len(), 1);
    let mut opts = d.opts();
    opts.namespace = "ns'; DROP TABLE memories; --".into();
    let mut other = Client::connect(opts).await.unwrap();
    other
        .add(add("in a strangely named namespace"))
        .await
        .unwrap();
    assert_eq!(found(&mut other, "strangely").await.len(), 1);
    assert!(
        found(&mut c, "strangely").await.is_empty(),
        "namespaces stay apart"
    );

    let check = c.check().await.unwrap();
    assert!(check.ok, "{check:?}");
    assert_eq!(check.memories, cases.len() as u64 + 2, "{check:?}");
}

#[test]
fn the_cli_refuses_bad_bytes_with_usage_errors() {
    use std::os::unix::ffi::OsStrExt;
    let d = Daemon::start();
    // Invalid UTF-8 as an argument and on stdin.
    let mut cmd = crate::common::memd_command(d.dir.path());
    let out = cmd
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["--no-autostart", "--json", "add"])
        .arg(std::ffi::OsStr::from_bytes(b"bad \xff bytes"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("UTF-8"));
    let out = d.cli_stdin(&["--json", "add", "-"], Some(b"bad \xff bytes"));
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stdout.contains("not valid UTF-8"), "{}", out.stdout);
    // A NUL byte on stdin, and 10 MB on stdin.
    let out = d.cli_stdin(&["--json", "add", "-"], Some(b"nul \0 inside"));
    assert_eq!(out.code, 2, "{}", out.stdout);
    let big = vec![b'a'; 10_000_000];
    let out = d.cli_stdin(&["--json", "add", "-"], Some(&big));
    assert_ne!(out.code, 0);
    assert_eq!(out.json()["success"], false);
    // The shell: a broken JSON line and a deeply nested one are answered and
    // the shell goes on.
    let deep = format!("{}{}", "[".repeat(5_000), "]".repeat(5_000));
    let input = format!(
        "{{not json\n{{\"command\": \"add\", \"content\": \"x\", \"metadata\": {{\"k\": {deep}}}}}\nadd 'after the bad lines'\n"
    );
    let out = d.cli_stdin(&["--json", "shell"], Some(input.as_bytes()));
    assert_eq!(out.code, 0);
    let lines: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert_eq!(lines[0]["success"], false);
    assert_eq!(lines[1]["success"], false);
    assert_eq!(lines[2]["accepted"], true);
    let (v, _) = d.json(&["list"]);
    assert_eq!(v["count"], 1, "only the good line was stored: {v}");
}
