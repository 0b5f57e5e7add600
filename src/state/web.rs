//! The viewer's loopback listener as the daemon's parts share it: whether
//! it is asked for (`[http] listen`, or `memd ui` through the `ui` request),
//! where it listens once bound, the token programs present, and the
//! browser logins ([`Logins`]). The daemon binds and serves it
//! (`daemon::web`); the `ui` handler only asks, waits and issues a login
//! code.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::sync;

/// What is asked of the listener.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ask {
    /// It should listen.
    pub open: bool,
    /// Token rotations asked for so far (each one makes a new token).
    pub rotations: u64,
}

/// The listener's state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bound {
    /// Where it listens.
    pub address: Option<SocketAddr>,
    /// Rotations done (equal to the asked ones once the new token is
    /// written).
    pub rotations: u64,
    /// Why it could not listen.
    pub error: Option<String>,
}

/// The viewer listener's shared state.
#[derive(Debug)]
pub struct Web {
    /// What is asked.
    pub ask: watch::Sender<Ask>,
    /// What is.
    pub bound: watch::Sender<Bound>,
    token: Mutex<Option<Arc<str>>>,
    logins: Mutex<Logins>,
}

impl Default for Web {
    fn default() -> Self {
        Web {
            ask: watch::channel(Ask::default()).0,
            bound: watch::channel(Bound::default()).0,
            token: Mutex::new(None),
            logins: Mutex::new(Logins::default()),
        }
    }
}

impl Web {
    /// The token programs present (`Authorization: Bearer`), once the
    /// listener has one.
    pub fn token(&self) -> Option<Arc<str>> {
        sync::lock(&self.token).clone()
    }

    /// Sets the token (the daemon, from the token file). Every browser
    /// session and login code made before ends with it.
    pub fn set_token(&self, token: &str) {
        *sync::lock(&self.token) = Some(Arc::from(token));
        sync::lock(&self.logins).end_all();
    }

    /// A new one-time login code (the `ui` request).
    ///
    /// # Errors
    /// No random bytes from the kernel.
    pub fn issue_code(&self) -> std::io::Result<String> {
        sync::lock(&self.logins).issue(Instant::now())
    }

    /// Trades a login code for a browser session, once.
    pub fn redeem(&self, code: &str) -> Option<Opened> {
        sync::lock(&self.logins).redeem(code, Instant::now())
    }

    /// Whether one of `secrets` (the cookies a browser sent) is the secret
    /// of the browser session whose path key is `key`.
    pub fn check(&self, key: &str, secrets: &[&str]) -> bool {
        sync::lock(&self.logins).check(key, secrets, Instant::now())
    }
}

/// How long a login code opens the viewer.
pub const CODE_TTL: Duration = Duration::from_secs(120);
/// Login codes outstanding at once: a new one past it ends the oldest.
pub const MAX_CODES: usize = 16;
/// Browser sessions at once: a new one past it ends the least recently
/// used.
pub const MAX_SESSIONS: usize = 32;
/// A browser session unused for this long ends.
pub const SESSION_IDLE: Duration = Duration::from_secs(12 * 3600);

/// A browser session just made: the path its pages live under
/// (`/s/<key>/`) and the secret its cookie carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The path key: 128 random bits, hex.
    pub key: String,
    /// The cookie's value: 256 random bits, hex (not the token).
    pub secret: String,
}

#[derive(Debug)]
struct Code {
    code: String,
    issued: Instant,
}

#[derive(Debug)]
struct BrowserSession {
    opened: Opened,
    last_used: Instant,
}

/// The one-time login codes outstanding and the browser sessions made
/// with them (pure: the caller gives the time). Kept in memory only: a
/// daemon that restarts forgets them, and `memd ui` logs in again.
#[derive(Debug, Default)]
pub struct Logins {
    codes: Vec<Code>,
    sessions: Vec<BrowserSession>,
}

/// `n` random bytes as lower-case hex; an error, never a weaker secret,
/// when the kernel gives none.
fn random_hex(n: usize) -> std::io::Result<String> {
    let mut out = String::with_capacity(n * 2);
    while out.len() < n * 2 {
        for b in crate::sys::random_bytes()? {
            if out.len() < n * 2 {
                out.push_str(&format!("{b:02x}"));
            }
        }
    }
    Ok(out)
}

/// Compares in time that does not depend on where the strings differ.
pub fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Logins {
    /// A new code, valid for [`CODE_TTL`] from `now`, used once.
    ///
    /// # Errors
    /// No random bytes from the kernel.
    pub fn issue(&mut self, now: Instant) -> std::io::Result<String> {
        self.codes
            .retain(|c| now.saturating_duration_since(c.issued) < CODE_TTL);
        if self.codes.len() >= MAX_CODES {
            self.codes.remove(0);
        }
        let code = random_hex(16)?;
        self.codes.push(Code {
            code: code.clone(),
            issued: now,
        });
        Ok(code)
    }

    /// Trades `code` for a new browser session; `None` when it is not an
    /// outstanding code (used, expired, ended, or never given).
    pub fn redeem(&mut self, code: &str, now: Instant) -> Option<Opened> {
        // Every code is compared (no early exit on the first match).
        let at = self.codes.iter().enumerate().fold(None, |found, (i, c)| {
            if same(&c.code, code) { Some(i) } else { found }
        })?;
        let c = self.codes.remove(at);
        if now.saturating_duration_since(c.issued) >= CODE_TTL {
            return None;
        }
        self.sessions
            .retain(|s| now.saturating_duration_since(s.last_used) < SESSION_IDLE);
        if self.sessions.len() >= MAX_SESSIONS
            && let Some(lru) = self
                .sessions
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(i, _)| i)
        {
            self.sessions.remove(lru);
        }
        let (Ok(key), Ok(secret)) = (random_hex(16), random_hex(32)) else {
            tracing::error!("no random bytes from the kernel: no browser session made");
            return None;
        };
        let opened = Opened { key, secret };
        self.sessions.push(BrowserSession {
            opened: opened.clone(),
            last_used: now,
        });
        Some(opened)
    }

    /// Whether one of `secrets` is the secret of the live session whose
    /// path key is `key`; a match counts as a use.
    pub fn check(&mut self, key: &str, secrets: &[&str], now: Instant) -> bool {
        let mut hit = None;
        for (i, s) in self.sessions.iter().enumerate() {
            let key_ok = same(&s.opened.key, key);
            let secret_ok = secrets
                .iter()
                .fold(false, |ok, given| ok | same(&s.opened.secret, given));
            if key_ok && secret_ok {
                hit = Some(i);
            }
        }
        let Some(i) = hit else {
            return false;
        };
        if now.saturating_duration_since(self.sessions[i].last_used) >= SESSION_IDLE {
            self.sessions.remove(i);
            return false;
        }
        self.sessions[i].last_used = now;
        true
    }

    /// Ends every code and session (a new token).
    pub fn end_all(&mut self) {
        self.codes.clear();
        self.sessions.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A code issued and redeemed at `at`.
    fn open(l: &mut Logins, at: Instant) -> Option<Opened> {
        let code = l.issue(at).unwrap();
        l.redeem(&code, at)
    }

    #[test]
    fn a_code_opens_one_session_once() {
        let mut l = Logins::default();
        let t = Instant::now();
        let code = l.issue(t).unwrap();
        assert_eq!(code.len(), 32, "128 bits");
        let s = l
            .redeem(&code, t + Duration::from_secs(1))
            .expect("a session");
        assert_eq!(s.key.len(), 32, "128 bits");
        assert_eq!(s.secret.len(), 64, "256 bits");
        assert_ne!(s.key, code);
        assert!(l.redeem(&code, t).is_none(), "used once");
        assert!(l.check(&s.key, &[&s.secret], t));
        assert!(
            l.check(&s.key, &["nope", &s.secret], t),
            "any of the cookies"
        );
        assert!(!l.check(&s.key, &[&s.key], t), "the key is not the secret");
        assert!(!l.check(&s.secret, &[&s.secret], t));
        assert!(!l.check(&s.key, &[], t));
        let other = open(&mut l, t).unwrap();
        assert!(
            !l.check(&s.key, &[&other.secret], t),
            "another session's secret does not open this one"
        );
    }

    #[test]
    fn codes_expire_and_are_bounded() {
        let mut l = Logins::default();
        let t = Instant::now();
        let old = l.issue(t).unwrap();
        assert!(l.redeem(&old, t + CODE_TTL).is_none(), "expired");
        let first = l.issue(t).unwrap();
        for _ in 1..MAX_CODES {
            l.issue(t).unwrap();
        }
        let last = l.issue(t).unwrap();
        assert!(l.redeem(&first, t).is_none(), "the oldest went");
        assert!(l.redeem(&last, t).is_some());
        assert!(l.redeem("", t).is_none());
        assert!(l.redeem(&"0".repeat(32), t).is_none());
    }

    #[test]
    fn sessions_end_when_idle_when_too_many_and_all_at_once() {
        let mut l = Logins::default();
        let t = Instant::now();
        let s = open(&mut l, t).unwrap();
        let later = t + SESSION_IDLE - Duration::from_secs(1);
        assert!(l.check(&s.key, &[&s.secret], later), "a use keeps it");
        assert!(
            !l.check(&s.key, &[&s.secret], later + SESSION_IDLE),
            "idle too long"
        );
        let kept = open(&mut l, t).unwrap();
        let mut rest = Vec::new();
        for i in 1..MAX_SESSIONS {
            let at = t + Duration::from_secs(i as u64);
            rest.push(open(&mut l, at).unwrap());
        }
        let now = t + Duration::from_secs(100);
        assert!(l.check(&kept.key, &[&kept.secret], now), "used last");
        let extra = open(&mut l, now).unwrap();
        assert!(
            !l.check(&rest[0].key, &[&rest[0].secret], now),
            "the least recently used went"
        );
        assert!(l.check(&kept.key, &[&kept.secret], now));
        assert!(l.check(&extra.key, &[&extra.secret], now));
        let code = l.issue(now).unwrap();
        l.end_all();
        assert!(!l.check(&kept.key, &[&kept.secret], now));
        assert!(l.redeem(&code, now).is_none());
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
    }
}
