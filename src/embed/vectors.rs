//! Vectors: the stored form and the in-memory index.
//!
//! Stored: one little-endian f32 BLOB per memory in `memory_vectors`
//! (schema v5). In memory: each vector quantized to int8 with its own scale
//! (`x ≈ code × scale`, `scale = max |x| / 127`): a quarter of the f32
//! memory, and a dot product of integers. Each entry also knows its row's
//! namespace (a vector is dropped when its row moves to another one), so a
//! search scans only the namespaces it reads. Search is brute force — no
//! approximate index: at 100K memories the scan costs a few milliseconds.

use std::collections::HashMap;

/// Encodes a vector as little-endian f32 bytes.
pub fn to_blob(v: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 4);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// Decodes little-endian f32 bytes; `None` when the length is not `4 × dim`.
pub fn from_blob(b: &[u8], dim: usize) -> Option<Vec<f32>> {
    if b.len() != dim * 4 {
        return None;
    }
    Some(
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// Cosine of two unit vectors (their dot product).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A vector quantized to int8 and its scale.
pub fn quantize(v: &[f32]) -> (Vec<i8>, f32) {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (vec![0; v.len()], 0.0);
    }
    let scale = max / 127.0;
    let codes = v
        .iter()
        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (codes, scale)
}

fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    // Chunks of 16 keep the accumulation in registers and let the compiler
    // vectorize the widening multiply-add.
    let mut acc = [0i32; 16];
    let mut ca = a.chunks_exact(16);
    let mut cb = b.chunks_exact(16);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for i in 0..16 {
            acc[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    acc.iter().sum::<i32>() + tail
}

/// A query prepared for the index.
pub struct Probe {
    codes: Vec<i8>,
    scale: f32,
}

impl Probe {
    /// Quantizes a unit query vector.
    pub fn new(v: &[f32]) -> Probe {
        let (codes, scale) = quantize(v);
        Probe { codes, scale }
    }
}

/// Every current vector, quantized, by memory id.
#[derive(Debug, Default)]
pub struct Index {
    dim: usize,
    ids: Vec<i64>,
    pos: HashMap<i64, usize>,
    codes: Vec<i8>,
    scales: Vec<f32>,
    /// Namespace of each entry, interned.
    ns: Vec<u32>,
    names: HashMap<String, u32>,
}

impl Index {
    /// An empty index of vectors of length `dim`.
    pub fn new(dim: usize) -> Index {
        Index {
            dim,
            ..Default::default()
        }
    }

    /// Vector length.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of vectors.
    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.ids.len()
    }

    /// Whether `id` has a vector.
    #[cfg(test)]
    pub fn contains(&self, id: i64) -> bool {
        self.pos.contains_key(&id)
    }

    /// Bytes held by the vectors (codes, scales, ids, namespaces, the id
    /// map).
    pub fn bytes(&self) -> usize {
        self.codes.len() + self.ids.len() * (4 + 8 + 4) + self.pos.len() * 16
    }

    /// Adds or replaces the vector of `id` in `namespace` (ignored when its
    /// length is not the index's).
    pub fn upsert(&mut self, id: i64, namespace: &str, v: &[f32]) {
        if v.len() != self.dim {
            return;
        }
        let next = self.names.len() as u32;
        let ns = *self.names.entry(namespace.to_string()).or_insert(next);
        let (codes, scale) = quantize(v);
        match self.pos.get(&id) {
            Some(&p) => {
                self.codes[p * self.dim..(p + 1) * self.dim].copy_from_slice(&codes);
                self.scales[p] = scale;
                self.ns[p] = ns;
            }
            None => {
                self.pos.insert(id, self.ids.len());
                self.ids.push(id);
                self.codes.extend_from_slice(&codes);
                self.scales.push(scale);
                self.ns.push(ns);
            }
        }
    }

    /// Removes the vector of `id` (the last one takes its place).
    pub fn remove(&mut self, id: i64) {
        let Some(p) = self.pos.remove(&id) else {
            return;
        };
        let last = self.ids.len() - 1;
        if p != last {
            let moved = self.ids[last];
            self.ids[p] = moved;
            self.scales[p] = self.scales[last];
            self.ns[p] = self.ns[last];
            let (head, tail) = self.codes.split_at_mut(last * self.dim);
            head[p * self.dim..(p + 1) * self.dim].copy_from_slice(&tail[..self.dim]);
            self.pos.insert(moved, p);
        }
        self.ids.pop();
        self.scales.pop();
        self.ns.pop();
        self.codes.truncate(last * self.dim);
    }

    /// Ids in the index.
    pub fn ids(&self) -> &[i64] {
        &self.ids
    }

    fn score_at(&self, probe: &Probe, p: usize) -> f32 {
        let codes = &self.codes[p * self.dim..(p + 1) * self.dim];
        dot_i8(&probe.codes, codes) as f32 * probe.scale * self.scales[p]
    }

    /// Approximate cosine of `id`'s vector with the probe.
    pub fn score(&self, probe: &Probe, id: i64) -> Option<f32> {
        self.pos.get(&id).map(|&p| self.score_at(probe, p))
    }

    /// The `k` best of `candidates` (ids without a vector are skipped), best
    /// first, with their approximate cosine.
    pub fn top_among(&self, probe: &Probe, candidates: &[i64], k: usize) -> Vec<(i64, f32)> {
        let scored = candidates
            .iter()
            .filter_map(|id| self.pos.get(id).map(|&p| (*id, self.score_at(probe, p))));
        top_k(scored, k)
    }

    /// The `k` best entries of the given namespaces (`None`: all), best
    /// first.
    pub fn top(&self, probe: &Probe, namespaces: Option<&[String]>, k: usize) -> Vec<(i64, f32)> {
        self.scan(probe, namespaces, k, |_| {})
    }

    /// [`Index::top`], and the spread of every cosine scanned (the same
    /// scan): how far the best stands out from the rest.
    pub fn top_with_spread(
        &self,
        probe: &Probe,
        namespaces: Option<&[String]>,
        k: usize,
    ) -> (Vec<(i64, f32)>, Spread) {
        let mut spread = Spread::default();
        let top = self.scan(probe, namespaces, k, |c| spread.add(c));
        (top, spread)
    }

    /// The `k` best entries of the namespaces, each cosine scanned also
    /// handed to `seen` (a no-op for [`Index::top`], compiled away).
    fn scan(
        &self,
        probe: &Probe,
        namespaces: Option<&[String]>,
        k: usize,
        mut seen: impl FnMut(f32),
    ) -> Vec<(i64, f32)> {
        let wanted: Option<Vec<u32>> = namespaces.map(|list| {
            list.iter()
                .filter_map(|n| self.names.get(n).copied())
                .collect()
        });
        if wanted.as_ref().is_some_and(Vec::is_empty) {
            return Vec::new();
        }
        top_k(
            (0..self.ids.len())
                .filter(|&p| wanted.as_ref().is_none_or(|w| w.contains(&self.ns[p])))
                .map(|p| {
                    let c = self.score_at(probe, p);
                    seen(c);
                    (self.ids[p], c)
                }),
            k,
        )
    }
}

/// Running mean and standard deviation of a scan's cosines (Welford).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spread {
    /// Cosines seen.
    pub n: usize,
    mean: f64,
    m2: f64,
}

impl Spread {
    /// Counts one cosine.
    pub fn add(&mut self, x: f32) {
        let x = f64::from(x);
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    /// The mean cosine.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The standard deviation (0 below two cosines).
    pub fn sd(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            (self.m2 / self.n as f64).sqrt()
        }
    }

    /// How many standard deviations `x` lies above the mean (`None` with
    /// too few cosines to tell: fewer than 10, or no spread).
    pub fn z(&self, x: f64) -> Option<f64> {
        let sd = self.sd();
        (self.n >= 10 && sd > 0.0).then(|| (x - self.mean) / sd)
    }
}

/// The `k` highest scores, best first (ties: higher id first).
pub fn top_k(scored: impl Iterator<Item = (i64, f32)>, k: usize) -> Vec<(i64, f32)> {
    let mut all: Vec<(i64, f32)> = scored.collect();
    let order = |a: &(i64, f32), b: &(i64, f32)| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0));
    if all.len() > k && k > 0 {
        all.select_nth_unstable_by(k - 1, order);
        all.truncate(k);
    }
    all.sort_by(order);
    all.truncate(k);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        // A small deterministic generator (xorshift) for test vectors.
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        crate::embed::normalize(&mut v);
        v
    }

    #[test]
    fn blobs_round_trip_little_endian() {
        let v = vec![1.0f32, -0.5, 0.25];
        let b = to_blob(&v);
        assert_eq!(&b[..4], &1.0f32.to_le_bytes());
        assert_eq!(from_blob(&b, 3), Some(v));
        assert_eq!(from_blob(&b, 4), None);
    }

    #[test]
    fn quantized_cosine_is_close_to_exact() {
        let dim = 384;
        let q = unit(1, dim);
        let probe = Probe::new(&q);
        let mut index = Index::new(dim);
        for i in 0..200 {
            index.upsert(i, "n", &unit(i as u64 + 10, dim));
        }
        for i in 0..200 {
            let exact = dot(&q, &unit(i as u64 + 10, dim));
            let approx = index.score(&probe, i).unwrap();
            assert!((exact - approx).abs() < 0.01, "{i}: {exact} vs {approx}");
        }
        // The same vector scores ~1.
        index.upsert(999, "n", &q);
        assert!(index.score(&probe, 999).unwrap() > 0.99);
        assert_eq!(index.top_among(&probe, &[1, 999, 2, 12345], 1)[0].0, 999);
    }

    #[test]
    fn upsert_replaces_and_remove_keeps_the_rest() {
        let dim = 8;
        let mut index = Index::new(dim);
        for i in 0..5 {
            index.upsert(
                i,
                if i % 2 == 0 { "even" } else { "odd" },
                &unit(i as u64, dim),
            );
        }
        index.upsert(2, "even", &unit(100, dim));
        assert_eq!(index.count(), 5);
        let p = Probe::new(&unit(100, dim));
        assert!(index.score(&p, 2).unwrap() > 0.99);
        index.remove(0);
        index.remove(0);
        assert_eq!(index.count(), 4);
        assert!(!index.contains(0));
        // Moved rows keep their own vectors.
        for i in 1..5 {
            let want = if i == 2 { 100 } else { i as u64 };
            let p = Probe::new(&unit(want, dim));
            assert!(index.score(&p, i).unwrap() > 0.99, "{i}");
        }
        // Namespaces survive the moves.
        let p = Probe::new(&unit(100, dim));
        let even: Vec<i64> = index
            .top(&p, Some(&["even".to_string()]), 10)
            .iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(even.len(), 2);
        assert_eq!(even[0], 2);
        assert!(even.contains(&4));
        assert_eq!(index.top(&p, None, 10).len(), 4);
        assert!(index.top(&p, Some(&["none".to_string()]), 10).is_empty());
        // A vector of the wrong length is ignored.
        index.upsert(7, "odd", &[1.0; 3]);
        assert!(!index.contains(7));
    }

    #[test]
    fn the_spread_is_the_mean_and_deviation_of_the_scan() {
        let mut s = Spread::default();
        for x in [0.1f32, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0] {
            s.add(x);
        }
        assert_eq!(s.n, 10);
        assert!((s.mean() - 0.55).abs() < 1e-6);
        assert!((s.sd() - 0.287_228).abs() < 1e-5);
        assert!((s.z(s.mean() + 2.0 * s.sd()).unwrap() - 2.0).abs() < 1e-9);
        // Too few to tell.
        let mut few = Spread::default();
        few.add(0.3);
        few.add(0.9);
        assert_eq!(few.z(0.9), None);
        // The index's scan feeds it: only the namespaces asked for.
        let dim = 16;
        let mut index = Index::new(dim);
        for i in 0..30 {
            let ns = if i < 20 { "a" } else { "b" };
            index.upsert(i, ns, &unit(i as u64 + 1, dim));
        }
        let probe = Probe::new(&unit(99, dim));
        let only_a = [String::from("a")];
        let (top, spread) = index.top_with_spread(&probe, Some(&only_a), 3);
        assert_eq!(spread.n, 20);
        assert_eq!(top.len(), 3);
        let (_, all) = index.top_with_spread(&probe, None, 3);
        assert_eq!(all.n, 30);
        let none = [String::from("c")];
        assert_eq!(index.top_with_spread(&probe, Some(&none), 3).1.n, 0);
    }

    #[test]
    fn top_k_orders_and_cuts() {
        let s = vec![(1, 0.5), (2, 0.9), (3, 0.1), (4, 0.9)];
        assert_eq!(top_k(s.clone().into_iter(), 2), vec![(4, 0.9), (2, 0.9)]);
        assert_eq!(top_k(s.into_iter(), 10).len(), 4);
    }
}
