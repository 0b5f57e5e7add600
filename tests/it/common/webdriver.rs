//! A real browser for the viewer's tests: Debian's `chromium`, driven
//! headless through `chromedriver` with the W3C WebDriver protocol (JSON over
//! HTTP, a few commands: no client library needed).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The key of an element reference in WebDriver's JSON.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Keys as WebDriver spells them.
pub mod keys {
    /// ↓
    pub const DOWN: &str = "\u{E015}";
    /// ↑
    pub const UP: &str = "\u{E013}";
    /// Enter
    pub const ENTER: &str = "\u{E007}";
    /// Escape
    pub const ESCAPE: &str = "\u{E00C}";
    /// Tab
    pub const TAB: &str = "\u{E004}";
}

fn find(names: &[&str]) -> Option<PathBuf> {
    names
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
}

/// The browser and its driver, or `None` (the test skips, or fails under
/// `MEMD_REQUIRE_TOOLS=1`) when they are not installed.
pub fn tools() -> Option<(PathBuf, PathBuf)> {
    let chromium = find(&["/usr/bin/chromium", "/usr/bin/chromium-browser"]);
    let driver = find(&["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]);
    let both = chromium.is_some() && driver.is_some();
    if !super::require(
        both,
        "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
    ) {
        return None;
    }
    Some((chromium?, driver?))
}

/// A browser session.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = ureq::delete(&format!("{}/session/{}", self.base, self.session)).call();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn call(method: &str, url: &str, body: Option<&Value>) -> Value {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .new_agent();
    let resp = match (method, body) {
        ("GET", _) => agent.get(url).call(),
        ("DELETE", _) => agent.delete(url).call(),
        (_, b) => agent
            .post(url)
            .header("Content-Type", "application/json")
            .send(b.unwrap_or(&json!({})).to_string()),
    };
    let mut resp = resp.unwrap_or_else(|e| panic!("WebDriver {method} {url}: {e}"));
    let text = resp.body_mut().read_to_string().unwrap();
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if let Some(err) = v["value"]["error"].as_str() {
        panic!("WebDriver {method} {url}: {err}: {}", v["value"]["message"]);
    }
    v["value"].clone()
}

/// An element on the page.
#[derive(Clone)]
pub struct Element<'a> {
    browser: &'a Browser,
    id: String,
}

impl Element<'_> {
    fn url(&self, what: &str) -> String {
        format!(
            "{}/session/{}/element/{}/{what}",
            self.browser.base, self.browser.session, self.id
        )
    }

    /// Types `text` into it (keys included, see [`keys`]).
    pub fn send(&self, text: &str) {
        call("POST", &self.url("value"), Some(&json!({"text": text})));
    }

    /// Clears it (an input or a textarea).
    pub fn clear(&self) {
        call("POST", &self.url("clear"), None);
    }

    /// Clicks it.
    pub fn click(&self) {
        call("POST", &self.url("click"), None);
    }

    /// Its visible text.
    pub fn text(&self) -> String {
        call("GET", &self.url("text"), None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// A property (`value`, `tagName`…).
    pub fn property(&self, name: &str) -> Value {
        call("GET", &self.url(&format!("property/{name}")), None)
    }

    /// Whether it is shown.
    pub fn displayed(&self) -> bool {
        call("GET", &self.url("displayed"), None) == json!(true)
    }
}

impl Browser {
    /// Starts chromedriver and a headless chromium with `extra` flags
    /// (`--force-dark-mode`, `--blink-settings=scriptEnabled=false`).
    pub fn start(chromium: &Path, driver: &Path, extra: &[&str]) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = ureq::get(&format!("{base}/status"))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_to_string().ok())
                .is_some_and(|t| t.contains("\"ready\":true"));
            if ready {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--headless=new".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--window-size=1280,900".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        args.extend(extra.iter().map(|a| (*a).to_string()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let v = call("POST", &format!("{base}/session"), Some(&caps));
        let session = v["sessionId"].as_str().unwrap().to_string();
        Browser {
            driver,
            base,
            session,
            _profile: profile,
        }
    }

    fn url(&self, what: &str) -> String {
        format!("{}/session/{}/{what}", self.base, self.session)
    }

    /// Opens `url`.
    pub fn go(&self, url: &str) {
        call("POST", &self.url("url"), Some(&json!({"url": url})));
    }

    /// The address now shown.
    pub fn current_url(&self) -> String {
        call("GET", &self.url("url"), None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The first element `css` selects.
    pub fn find(&self, css: &str) -> Element<'_> {
        let v = call(
            "POST",
            &self.url("element"),
            Some(&json!({"using": "css selector", "value": css})),
        );
        Element {
            browser: self,
            id: v[ELEMENT].as_str().unwrap().to_string(),
        }
    }

    /// Every element `css` selects.
    pub fn find_all(&self, css: &str) -> Vec<Element<'_>> {
        let v = call(
            "POST",
            &self.url("elements"),
            Some(&json!({"using": "css selector", "value": css})),
        );
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| Element {
                browser: self,
                id: e[ELEMENT].as_str().unwrap().to_string(),
            })
            .collect()
    }

    /// The element that has the focus.
    pub fn active(&self) -> Element<'_> {
        let v = call("GET", &self.url("element/active"), None);
        Element {
            browser: self,
            id: v[ELEMENT].as_str().unwrap().to_string(),
        }
    }

    /// Runs `script` in the page (its `return` value).
    pub fn run(&self, script: &str) -> Value {
        call(
            "POST",
            &self.url("execute/sync"),
            Some(&json!({"script": script, "args": []})),
        )
    }

    /// The text of every element `css` selects, read in one step (a list
    /// re-rendered meanwhile cannot go stale under it).
    pub fn texts(&self, css: &str) -> Vec<String> {
        let script = format!(
            "return Array.from(document.querySelectorAll({})).map(e => e.innerText);",
            serde_json::to_string(css).unwrap()
        );
        self.run(&script)
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The page's source.
    pub fn source(&self) -> String {
        call("GET", &self.url("source"), None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits until `f` holds (it reads the page), or panics after `limit`.
    pub fn wait(&self, limit: Duration, what: &str, mut f: impl FnMut(&Browser) -> bool) {
        let deadline = Instant::now() + limit;
        while !f(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Saves a screenshot of the page to `path` (PNG).
    pub fn screenshot(&self, path: &Path) {
        let v = call("GET", &self.url("screenshot"), None);
        let png = base64_decode(v.as_str().unwrap());
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, png).unwrap();
    }
}

/// Standard base64 (WebDriver's screenshots).
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes() {
        let Some(v) = value(c) else { continue };
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}
