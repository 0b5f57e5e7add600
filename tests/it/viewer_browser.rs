//! The web viewer in a real browser (headless Debian chromium through
//! chromedriver): opened with the token, search as you type, keyboard-only
//! navigation through the results, a memory's page, an edit, a stale edit
//! refused with the current text shown and the typed text kept, forget, a
//! session's block byte for byte what `memd inject` gave, and a change made
//! with the CLI appearing without a reload. Screenshots of the main views
//! go to `target/viewer-screenshots/`.

use std::path::PathBuf;
use std::time::Duration;

use crate::common::Daemon;
use crate::common::webdriver::{Browser, keys, tools};

fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/viewer-screenshots")
}

fn add(d: &Daemon, ns: &str, args: &[&str]) -> i64 {
    let mut all = vec!["--namespace", ns, "--agent", "claude-code", "add"];
    all.extend_from_slice(args);
    let (v, code) = d.json(&all);
    assert_eq!(code, 0, "{v}");
    v["id"].as_i64().unwrap()
}

#[test]
fn a_person_finds_reads_corrects_and_forgets_memories_in_a_browser() {
    let Some((chromium, driver)) = tools() else {
        return;
    };
    let d = Daemon::start();
    let cache = add(
        &d,
        "github.com/acme/shop",
        &[
            "The cache runs on port 6379",
            "--tag",
            "ops",
            "--category",
            "fact",
        ],
    );
    add(
        &d,
        "github.com/acme/shop",
        &[
            "Deploys go through the staging cluster first",
            "--category",
            "procedure",
            "--tag",
            "deploy",
        ],
    );
    add(
        &d,
        "github.com/acme/shop",
        &[
            "The user prefers tabs over spaces",
            "--category",
            "preference",
        ],
    );
    add(
        &d,
        "github.com/acme/api",
        &[
            "The API's rate limit is 100 requests per minute per key",
            "--category",
            "fact",
        ],
    );
    add(
        &d,
        "github.com/acme/api",
        &[
            "Use cargo nextest for the test suite",
            "--category",
            "convention",
            "--tag",
            "ci",
        ],
    );
    add(
        &d,
        "github.com/acme/api",
        &[
            "The cache of the API is warmed at deploy time",
            "--tag",
            "ops",
        ],
    );
    let (address, token) = super::viewer::open(&d, false);
    let browser = Browser::start(&chromium, &driver, &[]);
    let base = format!("http://{address}");

    // Opened with the token: the link is traded for a cookie and the
    // address bar loses the token.
    browser.go(&format!("{base}/?token={token}"));
    assert_eq!(browser.current_url(), format!("{base}/"));
    let items = browser.find_all("a.memory");
    assert_eq!(items.len(), 6, "every memory, newest first");
    assert!(items[0].text().contains("warmed at deploy time"));
    browser.screenshot(&shots().join("start.png"));

    // Search as you type: no Enter, the list follows the keys.
    let q = browser.find("#q");
    q.click();
    q.send("cache");
    browser.wait(Duration::from_secs(10), "search results", |b| {
        let items = b.texts("a.memory");
        items.len() == 2 && items.iter().all(|t| t.to_lowercase().contains("cache"))
    });
    assert!(
        browser.current_url().contains("q=cache"),
        "the address keeps the search"
    );
    browser.screenshot(&shots().join("search.png"));

    // Keyboard only: down into the results, down again, up, Enter.
    q.send(keys::DOWN);
    let first = browser.active();
    assert_eq!(first.property("className"), "memory");
    first.send(keys::DOWN);
    let second = browser.active();
    let second_id = second
        .property("dataset")
        .get("id")
        .and_then(|v| v.as_str())
        .map(str::to_string);
    assert_ne!(
        second_id,
        first
            .property("dataset")
            .get("id")
            .and_then(|v| v.as_str())
            .map(str::to_string)
    );
    second.send(keys::UP);
    assert_eq!(
        browser.active().property("dataset"),
        first.property("dataset")
    );
    let target = first.property("dataset")["id"]
        .as_str()
        .unwrap()
        .to_string();
    browser.active().send(keys::ENTER);
    browser.wait(Duration::from_secs(10), "the memory's page", |b| {
        b.current_url().ends_with(&format!("/m/{target}"))
    });
    browser.go(&format!("{base}/m/{cache}"));
    assert!(browser.find("#content").text().contains("port 6379"));
    browser.screenshot(&shots().join("memory.png"));

    // An edit through the drift guard.
    let content = browser.find("#edit textarea[name=content]");
    content.clear();
    content.send("The cache runs on port 6380");
    browser.find("#save").click();
    browser.wait(Duration::from_secs(10), "the saved version", |b| {
        b.texts("#content").iter().any(|t| t.contains("6380"))
    });
    let (v, _) = d.json(&[
        "--namespace",
        "github.com/acme/shop",
        "get",
        &cache.to_string(),
    ]);
    assert_eq!(v["memory"]["content"], "The cache runs on port 6380");
    assert_eq!(v["memory"]["rev"], 2);
    assert!(
        browser.find(".versions").text().contains("6379"),
        "the history keeps the old text"
    );

    // A stale edit: the CLI changes it while the page shows rev 2.
    let (v, code) = d.json(&[
        "--namespace",
        "github.com/acme/shop",
        "--agent",
        "deployer",
        "update",
        &cache.to_string(),
        "--content",
        "The cache runs on port 7000 since the migration",
        "--expect-rev",
        "2",
    ]);
    assert_eq!(code, 0, "{v}");
    let content = browser.find("#edit textarea[name=content]");
    content.clear();
    content.send("My correction: port 6381");
    browser.find("#save").click();
    browser.wait(Duration::from_secs(10), "the refusal", |b| {
        b.texts("#refusal").iter().any(|t| !t.is_empty())
    });
    let refusal = browser.find("#refusal").text();
    assert!(refusal.contains("deployer"), "who changed it: {refusal}");
    assert_eq!(
        browser.find("#current").text(),
        "The cache runs on port 7000 since the migration",
        "the current version is shown"
    );
    assert_eq!(
        browser
            .find("#edit textarea[name=content]")
            .property("value"),
        "My correction: port 6381",
        "what the person typed is kept"
    );
    let (v, _) = d.json(&[
        "--namespace",
        "github.com/acme/shop",
        "get",
        &cache.to_string(),
    ]);
    assert_eq!(
        v["memory"]["content"], "The cache runs on port 7000 since the migration",
        "nothing was written"
    );
    browser.screenshot(&shots().join("refusal.png"));

    // Forget (the confirmation answered yes).
    browser.run("window.confirm = () => true; return true;");
    browser.find("#forget").click();
    browser.wait(Duration::from_secs(10), "the start page", |b| {
        b.current_url() == format!("{base}/")
    });
    let (_, code) = d.json(&[
        "--namespace",
        "github.com/acme/shop",
        "get",
        &cache.to_string(),
    ]);
    assert_eq!(code, 1, "forgotten");

    // Purge (the confirmation answered yes): gone with its history.
    let (v, _) = d.json(&["--namespace", "github.com/acme/shop", "list"]);
    let tabs = v["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"].as_str().unwrap().contains("tabs"))
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    browser.go(&format!("{base}/m/{tabs}"));
    browser.run("window.confirm = () => true; return true;");
    browser.find("#purge").click();
    browser.wait(Duration::from_secs(10), "the start page", |b| {
        b.current_url() == format!("{base}/")
    });
    let (v, code) = d.json(&[
        "--namespace",
        "github.com/acme/shop",
        "history",
        &tabs.to_string(),
    ]);
    assert_eq!(code, 1, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("erased by memd purge"),
        "{v}"
    );

    // A session's block, byte for byte what inject gave.
    let (inject, _) = d.json(&[
        "--namespace",
        "github.com/acme/shop",
        "--agent",
        "claude-code",
        "--session",
        "claude-code:4f1c",
        "inject",
    ]);
    browser.go(&format!("{base}/sessions"));
    assert!(browser.find("table").text().contains("claude-code:4f1c"));
    browser.go(&format!(
        "{base}/sessions/github.com%2Facme%2Fshop/claude-code:4f1c"
    ));
    let shown = browser.run("return document.getElementById('block').textContent;");
    assert_eq!(shown, inject["block"], "the exact block");
    browser.screenshot(&shots().join("session.png"));

    // A change made with the CLI appears without a reload.
    browser.go(&format!("{base}/"));
    browser.wait(Duration::from_secs(10), "the live indicator", |b| {
        b.run("return !document.getElementById('live').hidden;") == true
    });
    browser.run("window.__sameDocument = true; return true;");
    add(
        &d,
        "github.com/acme/api",
        &["Appeared while the page was open"],
    );
    browser.wait(Duration::from_secs(10), "the live update", |b| {
        b.texts("#results")
            .iter()
            .any(|t| t.contains("Appeared while the page was open"))
    });
    assert_eq!(
        browser.run("return window.__sameDocument === true;"),
        true,
        "no reload"
    );

    browser.go(&format!("{base}/drift"));
    browser.screenshot(&shots().join("drift.png"));
    drop(browser);

    // The dark scheme follows the system.
    let dark = Browser::start(
        &chromium,
        &driver,
        &[
            "--force-dark-mode",
            "--blink-settings=preferredColorScheme=0",
        ],
    );
    dark.go(&format!("{base}/?token={token}"));
    let bg = dark.run("return getComputedStyle(document.body).backgroundColor;");
    assert_eq!(bg, "rgb(22, 23, 26)", "the dark background");
    dark.screenshot(&shots().join("start-dark.png"));
}

#[test]
fn reading_works_with_javascript_off() {
    let Some((chromium, driver)) = tools() else {
        return;
    };
    let d = Daemon::start();
    add(&d, "notes", &["Readable without any script at all"]);
    let (address, token) = super::viewer::open(&d, false);
    let browser = Browser::start(
        &chromium,
        &driver,
        &["--blink-settings=scriptEnabled=false"],
    );
    let base = format!("http://{address}");
    browser.go(&format!("{base}/?token={token}"));
    let page = browser.source();
    assert!(page.contains("Readable without any script"), "{page}");
    // Search and filters are a plain form: Enter submits it.
    let q = browser.find("#q");
    q.send("readable");
    q.send(keys::ENTER);
    browser.wait(Duration::from_secs(10), "the search page", |b| {
        b.current_url().contains("q=readable") && b.source().contains("Matches 1")
    });
    assert!(browser.source().contains("Readable without any script"));
    browser.find("a.memory").click();
    browser.wait(Duration::from_secs(10), "the memory's page", |b| {
        b.current_url().contains("/m/") && b.source().contains("id=\"content\"")
    });
    assert!(
        browser
            .find("#content")
            .text()
            .contains("Readable without any script")
    );
    browser.screenshot(&shots().join("memory-no-js.png"));
}
