//! Vectors: the stored form and the in-memory index.
//!
//! Stored: one little-endian f32 BLOB per memory in `memory_vectors`
//! (schema v5). In memory: each vector quantized to int8 with its own scale
//! (`x ≈ code × scale`, `scale = max |x| / 127`): a quarter of the f32
//! memory, and a dot product of integers. Each entry also knows its row's
//! namespace (a vector is dropped when its row moves to another one), so a
//! search scans only the namespaces it reads. Search is brute force — no
//! approximate index: at 100K memories the scan costs a few milliseconds.

use std::collections::{BTreeMap, HashMap};

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

/// How a memory of a thread is searched with its neighbours: its vector
/// plus `near` × each of the two memories next to it in the thread and `far`
/// × each of the two after those, scaled back to unit length. A turn of a
/// conversation says little alone ("Look what came out of my oven!"); its
/// neighbours say what it is about. A memory longer than `short` bytes
/// speaks for itself more: it borrows in proportion, `short / bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Mix {
    /// Weight of each of the two nearest neighbours (0: none).
    pub near: f32,
    /// Weight of each of the next two (0: none).
    pub far: f32,
    /// Memories up to this many bytes borrow fully (0: all of them).
    pub short: usize,
}

impl Mix {
    /// Whether a neighbour counts at all.
    pub fn on(&self) -> bool {
        self.near > 0.0 || self.far > 0.0
    }
}

/// Where a memory sits in its thread, for [`Index::upsert`].
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// The thread id.
    pub thread: &'a str,
    /// Its position in the thread.
    pub pos: i64,
    /// The length of its text in bytes.
    pub bytes: usize,
}

/// No entry (a link to a neighbour that is not there, no thread).
const NONE: u32 = u32::MAX;

/// An entry's place in its thread and what [`Mix`] needs of its
/// neighbours.
#[derive(Debug, Clone, Copy)]
struct Link {
    /// Interned (namespace, thread), or [`NONE`].
    thread: u32,
    /// Position in the thread.
    pos: i64,
    /// Text length in bytes.
    bytes: u32,
    /// Index positions of the nearest neighbour below and above.
    near: [u32; 2],
    /// Index positions of the next ones.
    far: [u32; 2],
    /// With `v` the entry's vector, `n` the sum of its near neighbours' and
    /// `f` of its far ones: `v·n`, `v·f`, `n·n`, `n·f`, `f·f` — the norm of
    /// any mix of them, whatever the weights.
    gram: [f32; 5],
}

impl Link {
    const ALONE: Link = Link {
        thread: NONE,
        pos: 0,
        bytes: 0,
        near: [NONE; 2],
        far: [NONE; 2],
        gram: [0.0; 5],
    };
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
    /// Each entry's thread links.
    links: Vec<Link>,
    /// Each thread's entries by position.
    threads: HashMap<u32, BTreeMap<i64, i64>>,
    /// Threads interned, by namespace and thread id.
    thread_names: HashMap<(u32, String), u32>,
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

    /// Bytes held by the vectors (codes, scales, ids, namespaces, thread
    /// links, the id map).
    pub fn bytes(&self) -> usize {
        self.codes.len()
            + self.ids.len() * (4 + 8 + 4 + std::mem::size_of::<Link>())
            + self.pos.len() * 16
    }

    /// Adds or replaces the vector of `id` in `namespace`, at its place in
    /// a thread if it has one (ignored when its length is not the
    /// index's).
    pub fn upsert(&mut self, id: i64, namespace: &str, v: &[f32], place: Option<Place<'_>>) {
        if v.len() != self.dim {
            return;
        }
        let next = self.names.len() as u32;
        let ns = *self.names.entry(namespace.to_string()).or_insert(next);
        let (codes, scale) = quantize(v);
        let p = match self.pos.get(&id) {
            Some(&p) => {
                self.codes[p * self.dim..(p + 1) * self.dim].copy_from_slice(&codes);
                self.scales[p] = scale;
                self.ns[p] = ns;
                p
            }
            None => {
                self.pos.insert(id, self.ids.len());
                self.ids.push(id);
                self.codes.extend_from_slice(&codes);
                self.scales.push(scale);
                self.ns.push(ns);
                self.links.push(Link::ALONE);
                self.ids.len() - 1
            }
        };
        self.put_in_thread(p, id, ns, place);
    }

    /// Whether `id` is where `place` says in its thread (or in none).
    pub fn is_placed(&self, id: i64, place: Option<Place<'_>>) -> bool {
        let Some(&p) = self.pos.get(&id) else {
            return true;
        };
        let l = &self.links[p];
        match place {
            None => l.thread == NONE,
            Some(place) => {
                l.thread != NONE
                    && l.pos == place.pos
                    && self
                        .thread_names
                        .get(&(self.ns[p], place.thread.to_string()))
                        == Some(&l.thread)
            }
        }
    }

    /// Moves `id` (keeping its vector) to another place in a thread, or
    /// out of any.
    pub fn set_place(&mut self, id: i64, place: Option<Place<'_>>) {
        let Some(&p) = self.pos.get(&id) else {
            return;
        };
        self.put_in_thread(p, id, self.ns[p], place);
    }

    /// Puts entry `p` at `place` in a thread of namespace `ns`, leaving the
    /// place it had, and relinks the entries around it (its vector is in
    /// its neighbours' sums).
    fn put_in_thread(&mut self, p: usize, id: i64, ns: u32, place: Option<Place<'_>>) {
        let place = place.map(|pl| {
            let next = self.thread_names.len() as u32;
            let t = *self
                .thread_names
                .entry((ns, pl.thread.to_string()))
                .or_insert(next);
            (t, pl.pos, u32::try_from(pl.bytes).unwrap_or(u32::MAX))
        });
        let old = self.links[p];
        if old.thread != NONE && place.is_none_or(|(t, at, _)| (t, at) != (old.thread, old.pos)) {
            self.leave_thread(id, old.thread, old.pos);
            self.links[p] = Link::ALONE;
        }
        if let Some((t, at, bytes)) = place {
            let slot = self.threads.entry(t).or_default();
            // A thread position holds one memory; another tool may have
            // put two there: the first keeps it, the second is alone.
            if *slot.entry(at).or_insert(id) == id {
                let l = &mut self.links[p];
                l.thread = t;
                l.pos = at;
                l.bytes = bytes;
            }
        }
        let l = self.links[p];
        if l.thread != NONE {
            self.relink_around(l.thread, l.pos);
        }
    }

    /// Removes the vector of `id` (the last one takes its place).
    pub fn remove(&mut self, id: i64) {
        let Some(p) = self.pos.remove(&id) else {
            return;
        };
        let link = self.links[p];
        if link.thread != NONE {
            self.leave_thread(id, link.thread, link.pos);
        }
        let last = self.ids.len() - 1;
        if p != last {
            let moved = self.ids[last];
            self.ids[p] = moved;
            self.scales[p] = self.scales[last];
            self.ns[p] = self.ns[last];
            self.links[p] = self.links[last];
            let (head, tail) = self.codes.split_at_mut(last * self.dim);
            head[p * self.dim..(p + 1) * self.dim].copy_from_slice(&tail[..self.dim]);
            self.pos.insert(moved, p);
            // Its neighbours point at it (links are mutual): by its new
            // position now.
            let l = self.links[p];
            for q in l.near.into_iter().chain(l.far) {
                if q == NONE {
                    continue;
                }
                let ql = &mut self.links[q as usize];
                for r in ql.near.iter_mut().chain(ql.far.iter_mut()) {
                    if *r == last as u32 {
                        *r = p as u32;
                    }
                }
            }
        }
        self.ids.pop();
        self.scales.pop();
        self.ns.pop();
        self.links.pop();
        self.codes.truncate(last * self.dim);
    }

    /// Takes `id` out of its thread's order and relinks the entries around
    /// the place it leaves.
    fn leave_thread(&mut self, id: i64, thread: u32, at: i64) {
        let Some(order) = self.threads.get_mut(&thread) else {
            return;
        };
        if order.get(&at) == Some(&id) {
            order.remove(&at);
        }
        if order.is_empty() {
            self.threads.remove(&thread);
            return;
        }
        self.relink_around(thread, at);
    }

    /// Recomputes the links of the entries whose two neighbours on either
    /// side may have changed: those up to two places from `at`.
    fn relink_around(&mut self, thread: u32, at: i64) {
        let Some(order) = self.threads.get(&thread) else {
            return;
        };
        let ids: Vec<i64> = order
            .range(..at)
            .rev()
            .take(2)
            .chain(
                order
                    .range(at..)
                    .take(if order.contains_key(&at) { 3 } else { 2 }),
            )
            .map(|(_, id)| *id)
            .collect();
        for id in ids {
            self.relink(id);
        }
    }

    /// Sets the links and sums of one threaded entry from its thread's
    /// order.
    fn relink(&mut self, id: i64) {
        let Some(&p) = self.pos.get(&id) else {
            return;
        };
        let l = self.links[p];
        let Some(order) = self.threads.get(&l.thread) else {
            return;
        };
        let at = |it: &mut dyn Iterator<Item = (&i64, &i64)>| -> [u32; 2] {
            let mut out = [NONE; 2];
            for (slot, (_, other)) in out.iter_mut().zip(it) {
                if let Some(&q) = self.pos.get(other) {
                    *slot = q as u32;
                }
            }
            out
        };
        let below = at(&mut order.range(..l.pos).rev());
        let above = at(&mut order.range(l.pos + 1..));
        let near = [below[0], above[0]];
        let far = [below[1], above[1]];
        let v = self.vector(p);
        let sum = |qs: [u32; 2]| {
            let mut s = vec![0.0f32; self.dim];
            for q in qs.into_iter().filter(|q| *q != NONE) {
                for (a, b) in s.iter_mut().zip(self.vector(q as usize)) {
                    *a += b;
                }
            }
            s
        };
        let (n, f) = (sum(near), sum(far));
        let link = &mut self.links[p];
        link.near = near;
        link.far = far;
        link.gram = [
            dot(&v, &n),
            dot(&v, &f),
            dot(&n, &n),
            dot(&n, &f),
            dot(&f, &f),
        ];
    }

    /// An entry's vector as stored (dequantized).
    fn vector(&self, p: usize) -> Vec<f32> {
        let scale = self.scales[p];
        self.codes[p * self.dim..(p + 1) * self.dim]
            .iter()
            .map(|c| f32::from(*c) * scale)
            .collect()
    }

    /// Ids in the index.
    pub fn ids(&self) -> &[i64] {
        &self.ids
    }

    fn score_at(&self, probe: &Probe, p: usize) -> f32 {
        let codes = &self.codes[p * self.dim..(p + 1) * self.dim];
        dot_i8(&probe.codes, codes) as f32 * probe.scale * self.scales[p]
    }

    /// The cosine of entry `p` mixed with its neighbours' ([`Mix`]), from
    /// the plain cosine of any entry (`plain`).
    fn mixed(&self, p: usize, mix: Mix, plain: impl Fn(usize) -> f32) -> f32 {
        let l = &self.links[p];
        let own = plain(p);
        if !mix.on() || l.thread == NONE {
            return own;
        }
        let borrow = if mix.short == 0 || l.bytes as usize <= mix.short {
            1.0
        } else {
            mix.short as f32 / l.bytes as f32
        };
        let (wn, wf) = (borrow * mix.near, borrow * mix.far);
        let sum = |qs: [u32; 2]| -> f32 {
            qs.into_iter()
                .filter(|q| *q != NONE)
                .map(|q| plain(q as usize))
                .sum()
        };
        let [vn, vf, nn, nf, ff] = l.gram;
        let norm2 =
            1.0 + 2.0 * (wn * vn + wf * vf) + wn * wn * nn + 2.0 * wn * wf * nf + wf * wf * ff;
        (own + wn * sum(l.near) + wf * sum(l.far)) / norm2.max(1e-12).sqrt()
    }

    /// Approximate cosine of `id`'s vector with the probe, its neighbours
    /// mixed in as `mix` says.
    pub fn score(&self, probe: &Probe, id: i64, mix: Mix) -> Option<f32> {
        self.pos
            .get(&id)
            .map(|&p| self.mixed(p, mix, |q| self.score_at(probe, q)))
    }

    /// The `k` best of `candidates` (ids without a vector are skipped), best
    /// first, with their approximate cosine (neighbours mixed in).
    pub fn top_among(
        &self,
        probe: &Probe,
        candidates: &[i64],
        k: usize,
        mix: Mix,
    ) -> Vec<(i64, f32)> {
        let scored = candidates.iter().filter_map(|id| {
            self.pos
                .get(id)
                .map(|&p| (*id, self.mixed(p, mix, |q| self.score_at(probe, q))))
        });
        top_k(scored, k)
    }

    /// The `k` best entries of the given namespaces (`None`: all), best
    /// first, by their own vectors.
    pub fn top(&self, probe: &Probe, namespaces: Option<&[String]>, k: usize) -> Vec<(i64, f32)> {
        self.scan(probe, namespaces, k, Mix::default(), |_| {})
    }

    /// The `k` best entries of the namespaces with their neighbours mixed
    /// in, and the spread of every cosine scanned (the same scan): how far
    /// the best stands out from the rest.
    pub fn top_with_spread(
        &self,
        probe: &Probe,
        namespaces: Option<&[String]>,
        k: usize,
        mix: Mix,
    ) -> (Vec<(i64, f32)>, Spread) {
        let mut spread = Spread::default();
        let top = self.scan(probe, namespaces, k, mix, |c| spread.add(c));
        (top, spread)
    }

    /// The `k` best entries of the namespaces, each cosine scanned also
    /// handed to `seen` (a no-op for [`Index::top`], compiled away).
    fn scan(
        &self,
        probe: &Probe,
        namespaces: Option<&[String]>,
        k: usize,
        mix: Mix,
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
        let wanted = |p: &usize| wanted.as_ref().is_none_or(|w| w.contains(&self.ns[*p]));
        if !mix.on() || self.threads.is_empty() {
            return top_k(
                (0..self.ids.len()).filter(wanted).map(|p| {
                    let c = self.score_at(probe, p);
                    seen(c);
                    (self.ids[p], c)
                }),
                k,
            );
        }
        // Every cosine of the namespaces first (a thread's entries are all
        // in one namespace), then each mixed with its neighbours'.
        let mut plain = vec![0.0f32; self.ids.len()];
        let chosen: Vec<usize> = (0..self.ids.len()).filter(wanted).collect();
        for &p in &chosen {
            plain[p] = self.score_at(probe, p);
        }
        top_k(
            chosen.into_iter().map(|p| {
                let c = self.mixed(p, mix, |q| plain[q]);
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
            index.upsert(i, "n", &unit(i as u64 + 10, dim), None);
        }
        for i in 0..200 {
            let exact = dot(&q, &unit(i as u64 + 10, dim));
            let approx = index.score(&probe, i, Mix::default()).unwrap();
            assert!((exact - approx).abs() < 0.01, "{i}: {exact} vs {approx}");
        }
        // The same vector scores ~1.
        index.upsert(999, "n", &q, None);
        assert!(index.score(&probe, 999, Mix::default()).unwrap() > 0.99);
        assert_eq!(
            index.top_among(&probe, &[1, 999, 2, 12345], 1, Mix::default())[0].0,
            999
        );
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
                None,
            );
        }
        index.upsert(2, "even", &unit(100, dim), None);
        assert_eq!(index.count(), 5);
        let p = Probe::new(&unit(100, dim));
        assert!(index.score(&p, 2, Mix::default()).unwrap() > 0.99);
        index.remove(0);
        index.remove(0);
        assert_eq!(index.count(), 4);
        assert!(!index.contains(0));
        // Moved rows keep their own vectors.
        for i in 1..5 {
            let want = if i == 2 { 100 } else { i as u64 };
            let p = Probe::new(&unit(want, dim));
            assert!(index.score(&p, i, Mix::default()).unwrap() > 0.99, "{i}");
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
        index.upsert(7, "odd", &[1.0; 3], None);
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
            index.upsert(i, ns, &unit(i as u64 + 1, dim), None);
        }
        let probe = Probe::new(&unit(99, dim));
        let only_a = [String::from("a")];
        let (top, spread) = index.top_with_spread(&probe, Some(&only_a), 3, Mix::default());
        assert_eq!(spread.n, 20);
        assert_eq!(top.len(), 3);
        let (_, all) = index.top_with_spread(&probe, None, 3, Mix::default());
        assert_eq!(all.n, 30);
        let none = [String::from("c")];
        assert_eq!(
            index
                .top_with_spread(&probe, Some(&none), 3, Mix::default())
                .1
                .n,
            0
        );
    }

    #[test]
    fn top_k_orders_and_cuts() {
        let s = vec![(1, 0.5), (2, 0.9), (3, 0.1), (4, 0.9)];
        assert_eq!(top_k(s.clone().into_iter(), 2), vec![(4, 0.9), (2, 0.9)]);
        assert_eq!(top_k(s.into_iter(), 10).len(), 4);
    }

    /// One entry of the reference model below.
    struct Entry {
        id: i64,
        ns: &'static str,
        thread: Option<(&'static str, i64)>,
        bytes: usize,
        v: Vec<f32>,
    }

    /// The cosine of each entry's mixed vector, computed the long way: its
    /// vector plus the weighted vectors of the two nearest entries of its
    /// namespace and thread on each side, normalised.
    fn reference(entries: &[Entry], q: &[f32], mix: Mix) -> HashMap<i64, f32> {
        let mut out = HashMap::new();
        for e in entries {
            let mut v = e.v.clone();
            if let (Some((t, _)), true) = (e.thread, mix.on()) {
                let mut same: Vec<&Entry> = entries
                    .iter()
                    .filter(|o| o.ns == e.ns && o.thread.is_some_and(|(ot, _)| ot == t))
                    .collect();
                same.sort_by_key(|o| o.thread.map(|(_, p)| p));
                let at = same.iter().position(|o| o.id == e.id).unwrap();
                let borrow = if mix.short == 0 || e.bytes <= mix.short {
                    1.0
                } else {
                    mix.short as f32 / e.bytes as f32
                };
                for (d, w) in [(1usize, mix.near), (2, mix.far)] {
                    let below = at.checked_sub(d).map(|i| same[i]);
                    let above = same.get(at + d).copied();
                    for o in below.into_iter().chain(above) {
                        for (a, b) in v.iter_mut().zip(&o.v) {
                            *a += borrow * w * b;
                        }
                    }
                }
            }
            crate::embed::normalize(&mut v);
            out.insert(e.id, dot(q, &v));
        }
        out
    }

    fn check(index: &Index, entries: &[Entry], q: &[f32], mix: Mix) {
        let want = reference(entries, q, mix);
        let probe = Probe::new(q);
        for e in entries {
            let got = index.score(&probe, e.id, mix).unwrap();
            assert!(
                (got - want[&e.id]).abs() < 0.02,
                "{}: index {got}, reference {}",
                e.id,
                want[&e.id]
            );
        }
        // The scan gives the same mixed cosines, for the namespace only.
        let (top, spread) = index.top_with_spread(&probe, Some(&["a".to_string()]), 100, mix);
        assert_eq!(spread.n, entries.iter().filter(|e| e.ns == "a").count());
        for (id, c) in top {
            assert!((c - want[&id]).abs() < 0.02, "scan {id}");
        }
    }

    /// A threaded memory is searched by its vector mixed with its
    /// neighbours' in the thread: the index keeps that right as vectors
    /// come, change, move and go, the entry that takes a removed one's
    /// place included.
    #[test]
    fn thread_neighbours_mix_as_the_reference_says() {
        let dim = 32;
        let mix = Mix {
            near: 0.25,
            far: 0.1,
            short: 100,
        };
        let mut entries: Vec<Entry> = Vec::new();
        // Thread "t" of namespace "a" at positions 1..=6 (added out of
        // order), an unthreaded entry, the same thread id in namespace "b",
        // and a long turn that borrows less.
        for (id, ns, thread, bytes) in [
            (3, "a", Some(("t", 3)), 50),
            (1, "a", Some(("t", 1)), 50),
            (6, "a", Some(("t", 6)), 400),
            (2, "a", Some(("t", 2)), 50),
            (10, "a", None, 50),
            (5, "a", Some(("t", 5)), 50),
            (4, "a", Some(("t", 4)), 50),
            (20, "b", Some(("t", 7)), 50),
        ] {
            entries.push(Entry {
                id,
                ns,
                thread,
                bytes,
                v: unit(id as u64 + 3, dim),
            });
        }
        let mut index = Index::new(dim);
        let put = |index: &mut Index, e: &Entry| {
            let place = e.thread.map(|(thread, pos)| Place {
                thread,
                pos,
                bytes: e.bytes,
            });
            index.upsert(e.id, e.ns, &e.v, place);
        };
        for e in &entries {
            put(&mut index, e);
        }
        let q = unit(999, dim);
        check(&index, &entries, &q, mix);
        // Off: the plain cosine.
        check(&index, &entries, &q, Mix::default());
        let probe = Probe::new(&q);
        assert_eq!(
            index.score(&probe, 3, Mix::default()),
            Some(index.score_at(&probe, index.pos[&3]))
        );
        // A new vector for a middle entry changes its neighbours' mix.
        entries[0].v = unit(77, dim);
        put(&mut index, &entries[0]);
        check(&index, &entries, &q, mix);
        // Removing the first-added entry swaps the last one (threaded)
        // into its place; its neighbours now skip position 3.
        index.remove(3);
        entries.remove(0);
        check(&index, &entries, &q, mix);
        // An entry moves to another position, and one leaves its thread.
        let four = entries.iter_mut().find(|e| e.id == 4).unwrap();
        four.thread = Some(("t", 9));
        put(
            &mut index,
            &entries.iter().find(|e| e.id == 4).unwrap().clone_entry(),
        );
        let two = entries.iter_mut().find(|e| e.id == 2).unwrap();
        two.thread = None;
        put(
            &mut index,
            &entries.iter().find(|e| e.id == 2).unwrap().clone_entry(),
        );
        check(&index, &entries, &q, mix);
        // Everything removed, one by one: nothing left behind.
        for id in [1, 6, 10, 5, 4, 20, 2] {
            index.remove(id);
            entries.retain(|e| e.id != id);
            check(&index, &entries, &q, mix);
        }
        assert!(index.threads.is_empty());
        assert_eq!(index.count(), 0);
    }

    impl Entry {
        fn clone_entry(&self) -> Entry {
            Entry {
                id: self.id,
                ns: self.ns,
                thread: self.thread,
                bytes: self.bytes,
                v: self.v.clone(),
            }
        }
    }
}
