//! Percentiles over latency samples.

use std::time::Duration;

/// Summary of a set of samples.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub n: usize,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub per_sec: f64,
}

/// Percentiles of `samples`; `per_sec` from the wall time they took.
pub fn summarize(samples: &mut [Duration], wall: Duration) -> Summary {
    samples.sort();
    let pick = |q: f64| {
        if samples.is_empty() {
            return 0.0;
        }
        let idx = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[idx].as_secs_f64() * 1e6
    };
    Summary {
        n: samples.len(),
        p50_us: pick(0.50),
        p95_us: pick(0.95),
        p99_us: pick(0.99),
        per_sec: if wall.is_zero() {
            0.0
        } else {
            samples.len() as f64 / wall.as_secs_f64()
        },
    }
}

/// Cores and load average, recorded with every run.
pub fn machine_facts() -> String {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "?".into());
    format!("{cores} cores ({cpu}), load {load}")
}
