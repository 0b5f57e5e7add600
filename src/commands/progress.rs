//! Progress of long work (`ingest`, `import`, `import-md`, `export`,
//! `backup`, `reembed`, `purge`, `team push`) on stderr, for a person
//! watching a terminal.
//!
//! A bar is drawn only when the command line turned progress on
//! ([`enable`]: a one-shot command not under `--json`) and stderr is a
//! terminal; otherwise every [`Progress`] is a no-op, so a script, a pipe,
//! the shell's answers and the MCP server (whose stdout is its protocol)
//! never see one. A bar says the rate and an estimate when the total is
//! known (turns, entries, bytes, vectors); work the daemon does in one
//! request (a purge, a push) shows a spinner with the time spent. The bar
//! is cleared when the work ends: the command's answer is the last word.

use std::io::{IsTerminal, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressState, ProgressStyle};

static ON: AtomicBool = AtomicBool::new(false);

/// Counted work: what, the bar, done of total, the rate, the estimate.
const ITEMS: &str = "{msg} [{bar:30}] {pos}/{len} · {rate} · {eta} left";
/// Bytes through the socket.
const BYTES: &str = "{msg} [{bar:30}] {bytes}/{total_bytes} · {binary_bytes_per_sec} · {eta} left";
/// One request the daemon works on.
const WAITING: &str = "{spinner} {msg} · {elapsed}";

/// Turns progress on for this process when `wanted` (the command line, for
/// a command not under `--json`) and stderr is a terminal.
pub fn enable(wanted: bool) {
    ON.store(wanted && std::io::stderr().is_terminal(), Ordering::Relaxed);
}

/// Whether bars are drawn in this process.
#[must_use]
pub fn shown() -> bool {
    ON.load(Ordering::Relaxed)
}

/// One piece of long work's progress (nothing when progress is off).
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// Counted work: `total` items (`what` names them: "ingesting turns").
    #[must_use]
    pub fn items(total: u64, what: &str) -> Self {
        Self::drawn(ProgressBar::new(total), ITEMS, what)
    }

    /// Bytes moved through the socket, `total` of them (0: not known yet;
    /// see [`Progress::set_total`]).
    #[must_use]
    pub fn bytes(total: u64, what: &str) -> Self {
        Self::drawn(ProgressBar::new(total), BYTES, what)
    }

    /// Work the daemon does in one request: a spinner and the time spent.
    #[must_use]
    pub fn waiting(what: &str) -> Self {
        let p = Self::drawn(ProgressBar::new_spinner(), WAITING, what);
        if let Some(bar) = &p.0 {
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        p
    }

    fn drawn(bar: ProgressBar, template: &str, what: &str) -> Self {
        if !shown() {
            return Self(None);
        }
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ")
            .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", s.per_sec());
            });
        let bar = bar
            .with_style(style)
            .with_message(what.to_string())
            .with_finish(ProgressFinish::AndClear);
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.tick();
        Self(Some(bar))
    }

    /// `n` more done.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.0 {
            bar.inc(n);
        }
    }

    /// `done` of the total done.
    pub fn set(&self, done: u64) {
        if let Some(bar) = &self.0 {
            bar.set_position(done);
        }
    }

    /// The total, once known.
    pub fn set_total(&self, total: u64) {
        if let Some(bar) = &self.0 {
            bar.set_length(total);
        }
    }

    /// The bar turns into a spinner: what was counted is through, the
    /// daemon works on it (`importing`).
    pub fn then_waiting(&self, what: &str) {
        if let Some(bar) = &self.0
            && let Ok(style) = ProgressStyle::with_template(WAITING)
        {
            bar.set_style(style);
            bar.set_message(what.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
        }
    }

    /// A function a download tells of its bytes (see
    /// `memd_client::Client::on_download`).
    pub fn download_hook(&self) -> impl FnMut(u64, u64) + Send + 'static {
        let bar = self.0.clone();
        move |done, total| {
            if let Some(bar) = &bar {
                bar.set_length(total);
                bar.set_position(done);
            }
        }
    }

    /// `inner`, counted in bytes on this bar as it is read; at its end the
    /// bar says the daemon is `then`.
    pub fn reader<R: Read>(&self, inner: R, then: &'static str) -> ProgressRead<'_, R> {
        ProgressRead {
            inner,
            progress: self,
            then,
        }
    }

    /// Clears the bar (as dropping it does).
    pub fn finish(self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// A reader whose bytes a [`Progress`] counts.
pub struct ProgressRead<'a, R> {
    inner: R,
    progress: &'a Progress,
    then: &'static str,
}

impl<R: Read> Read for ProgressRead<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.progress.then_waiting(self.then);
        } else {
            self.progress.inc(n as u64);
        }
        Ok(n)
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.0
            && !bar.is_finished()
        {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_drawn_unless_the_command_line_asks_on_a_terminal() {
        // Tests run with stderr captured or piped: not a terminal.
        enable(true);
        assert_eq!(shown(), std::io::stderr().is_terminal());
        enable(false);
        assert!(!shown());
        let p = Progress::items(10, "ingesting turns");
        assert!(p.0.is_none());
        p.inc(3);
        p.set(5);
        p.set_total(20);
        p.finish();
        assert!(Progress::waiting("purging").0.is_none());
        assert!(Progress::bytes(0, "exporting").0.is_none());
    }

    #[test]
    fn every_template_parses() {
        // A template indicatif cannot read falls back silently: hold them.
        for t in [ITEMS, BYTES, WAITING] {
            assert!(ProgressStyle::with_template(t).is_ok(), "{t}");
        }
    }
}
