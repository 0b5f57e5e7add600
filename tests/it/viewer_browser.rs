//! The web viewer in a real browser (headless Debian chromium through
//! chromedriver): opened with a one-time link, search as you type, keyboard-only
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

/// Opens the one-time login link in `browser`; the session's pages
/// (`http://ADDRESS/s/<key>`, no trailing `/`), once the browser is there.
pub fn log_in(browser: &Browser, address: &str, code: &str) -> String {
    browser.go(&format!("http://{address}/login?code={code}"));
    let prefix = format!("http://{address}/s/");
    browser.wait(Duration::from_secs(10), "the session's pages", |b| {
        b.current_url().starts_with(&prefix)
    });
    let url = browser.current_url();
    assert!(url.ends_with('/'), "{url}");
    assert!(
        browser.source().contains("id=\"main\""),
        "a page of the viewer, not a refusal: {}",
        browser.source()
    );
    url.trim_end_matches('/').to_string()
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
    let (address, code) = super::viewer::open(&d, false);
    let browser = Browser::start(&chromium, &driver, &[]);

    // Opened with the one-time link: the browser lands on its session's
    // own path, and the address bar has no code.
    let base = log_in(&browser, &address, &code);
    assert!(!browser.current_url().contains(&code));
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
    let (_, code) = super::viewer::open(&d, false);
    log_in(&dark, &address, &code);
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
    let (address, code) = super::viewer::open(&d, false);
    let browser = Browser::start(
        &chromium,
        &driver,
        &["--blink-settings=scriptEnabled=false"],
    );
    log_in(&browser, &address, &code);
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

/// A server another local user runs on another loopback port: it answers
/// every request with a small page and keeps each request's head.
struct Recorder {
    address: String,
    heads: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Recorder {
    fn start() -> Recorder {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut r = BufReader::new(&stream);
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                if !head.is_empty() {
                    kept.lock().unwrap().push(head);
                }
                let page = "<!doctype html><title>elsewhere</title><p>another user's server</p>";
                let _ = (&stream).write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n{page}",
                        page.len()
                    )
                    .as_bytes(),
                );
            }
        });
        Recorder { address, heads }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

#[test]
fn a_server_on_another_loopback_port_never_gets_a_credential_that_works() {
    let Some((chromium, driver)) = tools() else {
        return;
    };
    let d = Daemon::start();
    add(&d, "secret-project", &["The launch date is the 14th"]);
    let (address, code) = super::viewer::open(&d, false);
    let evil = Recorder::start();
    let browser = Browser::start(&chromium, &driver, &[]);
    let base = log_in(&browser, &address, &code);
    let key = base.rsplit('/').next().unwrap().to_string();
    assert!(browser.source().contains("The launch date is the 14th"));

    // (a) The person, logged in, opens the other server's page — at its
    // root and under a path like the viewer's.
    browser.go(&format!("http://{}/", evil.address));
    browser.go(&format!("http://{}/s/", evil.address));
    let port = evil.address.rsplit(':').next().unwrap();
    browser.go(&format!("http://localhost:{port}/"));
    // (b) The viewer's own page is navigated there.
    browser.go(&format!("{base}/"));
    browser.run(&format!(
        "location.href = 'http://{}/from-the-viewer'; return true;",
        evil.address
    ));
    browser.wait(Duration::from_secs(10), "the navigation", |_| {
        evil.heads().iter().any(|h| h.contains("/from-the-viewer"))
    });
    let heads = evil.heads();
    assert!(heads.len() >= 4, "{heads:?}");
    for head in &heads {
        assert!(
            !head.contains("memd-ui-"),
            "a viewer cookie was sent: {head}"
        );
        assert!(!head.contains(&key), "the session's path leaked: {head}");
    }

    // Whatever it received, replayed to the viewer's port — at the root,
    // at the path it was asked for, even at the session's own path: 401.
    for head in &heads {
        let path = head.split_whitespace().nth(1).unwrap().to_string();
        let headers: Vec<(&str, &str)> = head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim(), v.trim()))
            .filter(|(k, _)| {
                !k.eq_ignore_ascii_case("host") && !k.eq_ignore_ascii_case("connection")
            })
            .collect();
        for target in [path.as_str(), "/", "/v1/memories", &format!("/s/{key}/")] {
            let r = crate::common::http::tcp_request(&address, "GET", target, &headers, None);
            assert_eq!(r.status, 401, "{target} with {headers:?}");
        }
    }
    // The person's own session still works.
    browser.go(&format!("{base}/"));
    assert!(browser.source().contains("The launch date is the 14th"));
}

#[test]
fn memd_ui_opens_a_launcher_file_and_no_command_line_holds_a_secret() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    // A recording opener first on PATH.
    let bin = home.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let argv = home.path().join("opener-argv");
    let opener = bin.join("xdg-open");
    std::fs::write(
        &opener,
        format!(
            "#!/bin/sh\nfor a in \"$0\" \"$@\"; do printf '%s\\n' \"$a\"; done > {}\n",
            argv.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // `memd ui` starts the daemon itself (autostart) and opens the viewer.
    let out = crate::common::memd_command(home.path())
        .env("PATH", &path)
        .arg("--data-dir")
        .arg(&data)
        .args(["--json", "ui"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(out.status.code(), Some(0), "{v}");
    let url = v["url"].as_str().unwrap().to_string();
    let code = url.split("code=").nth(1).unwrap().to_string();
    let token = std::fs::read_to_string(data.join("ui.token"))
        .unwrap()
        .trim()
        .to_string();
    let launcher = std::path::PathBuf::from(v["launcher"].as_str().unwrap());
    assert_eq!(launcher.parent(), Some(data.as_path()), "in the data dir");
    // The opener got the launcher's path, and nothing secret.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !argv.exists() {
        assert!(std::time::Instant::now() < deadline, "the opener never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    let args = std::fs::read_to_string(&argv).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args.len(), 2, "{args:?}");
    assert_eq!(args[1], launcher.to_str().unwrap());
    for a in &args {
        assert!(!a.contains(&code) && !a.contains(&token), "{a}");
    }
    // The launcher is the user's alone, in a directory only the user
    // enters, and holds the one-time link only.
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&launcher), 0o600);
    assert_eq!(mode(&data), 0o700);
    let page = std::fs::read_to_string(&launcher).unwrap();
    assert!(page.contains(&url), "{page}");
    assert!(!page.contains(&token), "{page}");
    // No process holds the token or the code on its command line: not the
    // daemon memd started, not any other.
    let mut daemon_seen = false;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(
            !cmdline.contains(&code) && !cmdline.contains(&token),
            "{}: {cmdline}",
            entry.path().display()
        );
        daemon_seen |= cmdline.contains(data.to_str().unwrap()) && cmdline.contains("daemon");
    }
    assert!(daemon_seen, "the autostarted daemon was looked at");

    // A browser opens the launcher file: it moves on to the login, and the
    // session's cookie opens the viewer (a cookie set on a navigation begun
    // by a file is still sent on the page's own next navigation).
    if let Some((chromium, driver)) = tools() {
        let browser = Browser::start(&chromium, &driver, &[]);
        browser.go(&format!("file://{}", launcher.display()));
        let prefix = format!("http://{}/s/", v["address"].as_str().unwrap());
        browser.wait(Duration::from_secs(10), "the viewer", |b| {
            b.current_url().starts_with(&prefix) && b.source().contains("id=\"main\"")
        });
        // The code in the history is dead now.
        let r = crate::common::http::tcp_request(
            v["address"].as_str().unwrap(),
            "GET",
            &format!("/login?code={code}"),
            &[],
            None,
        );
        assert_eq!(r.status, 401);
    }
    let out = crate::common::memd_command(home.path())
        .arg("--data-dir")
        .arg(&data)
        .arg("stop")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
