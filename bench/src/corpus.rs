//! A deterministic synthetic corpus: pseudo-words with a Zipf-like
//! frequency, memories of 10–60 words, queries of 1–4 words.

/// A small deterministic generator (SplitMix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `0.0..1.0`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "pa", "ri", "no", "ba", "ge", "lu", "mo",
    "fi", "ta", "po", "se", "ki", "da", "ve", "zo", "chi", "re", "su", "na", "li", "ko",
];

/// The vocabulary: `size` distinct pseudo-words, most frequent first.
pub fn vocabulary(size: usize) -> Vec<String> {
    let mut words = Vec::with_capacity(size);
    let mut n = 0usize;
    while words.len() < size {
        let mut w = String::new();
        let mut k = n;
        loop {
            w.push_str(SYLLABLES[k % SYLLABLES.len()]);
            k /= SYLLABLES.len();
            if k == 0 {
                break;
            }
        }
        if w.len() >= 3 {
            words.push(w);
        }
        n += 1;
    }
    words
}

/// Samples word ranks with probability ∝ 1/(rank+1) (Zipf, s = 1).
pub struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    pub fn new(n: usize) -> Zipf {
        let mut total = 0.0;
        let cumulative = (0..n)
            .map(|r| {
                total += 1.0 / (r as f64 + 1.0);
                total
            })
            .collect::<Vec<_>>();
        Zipf { cumulative }
    }

    pub fn sample(&self, rng: &mut Rng) -> usize {
        let total = *self.cumulative.last().unwrap_or(&1.0);
        let x = rng.unit() * total;
        self.cumulative
            .partition_point(|&c| c < x)
            .min(self.cumulative.len() - 1)
    }
}

/// The categories memories are spread over.
pub const CATEGORIES: &[&str] = &[
    "fact",
    "preference",
    "convention",
    "decision",
    "gotcha",
    "pattern",
    "procedure",
    "note",
];

/// One generated memory.
pub struct Item {
    pub content: String,
    pub category: &'static str,
    pub tags: Vec<String>,
}

/// `n` memories from a fixed seed.
pub fn memories(n: usize, vocab: &[String], seed: u64) -> Vec<Item> {
    let mut rng = Rng::new(seed);
    let zipf = Zipf::new(vocab.len());
    (0..n)
        .map(|i| {
            let len = 10 + rng.below(51);
            let mut words: Vec<&str> = (0..len)
                .map(|_| vocab[zipf.sample(&mut rng)].as_str())
                .collect();
            // A unique marker keeps every memory distinct.
            let marker = format!("m{i}");
            words.push(&marker);
            Item {
                content: words.join(" "),
                category: CATEGORIES[rng.below(CATEGORIES.len())],
                tags: vec![format!("t{}", rng.below(50))],
            }
        })
        .collect()
}

/// `n` queries of 1–4 words from vocabulary ranks 100..5000; a fifth of them
/// with one typo (one edit).
pub fn queries(n: usize, vocab: &[String], seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let hi = vocab.len().min(5_000);
    let lo = 100.min(hi.saturating_sub(1));
    (0..n)
        .map(|_| {
            let k = 1 + rng.below(4);
            let mut words: Vec<String> = (0..k)
                .map(|_| vocab[lo + rng.below(hi - lo)].clone())
                .collect();
            if rng.below(5) == 0 {
                let w = &mut words[0];
                let pos = rng.below(w.len());
                let c = (b'a' + rng.below(26) as u8) as char;
                w.replace_range(pos..=pos, &c.to_string());
            }
            words.join(" ")
        })
        .collect()
}

/// The export document of `items[from..to]` (what `memd import` reads).
pub fn export_doc(items: &[Item], from: usize) -> Vec<u8> {
    let entries: Vec<serde_json::Value> = items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            serde_json::json!({
                "uid": format!("{:032x}", from + i),
                "content": it.content,
                "category": it.category,
                "tags": it.tags,
                "namespace": "default",
                "source": "agent",
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({"entries": entries})).unwrap_or_default()
}
