//! The semantic side of the search (docs/search.md, "Semantic retrieval"): a static
//! token-embedding table distilled from the sentence-transformer all-MiniLM-L6-v2
//! (`scripts/distill_embeddings.py`, licence and checksum in `crates/catalog/data/`). A text is
//! split as the model splits it (BERT's lower-cased basic tokenizer, then WordPiece), its
//! token vectors are mean-pooled with a weight per token, and texts are compared by cosine.
//! Microseconds per query, no model run at all at query time: the transformer's knowledge that
//! "pods" are like containers or "slack" like notifications is in the table.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

/// The distilled table: `ARCSEMB1`, token count, dimensions, byte length of the token names,
/// the names (newline-separated), one f32 scale per token, then int8 vectors.
static TABLE: &[u8] = include_bytes!("../data/minilm-static.bin");

/// SHA-256 of [`TABLE`] as `crates/catalog/data/README.md` records it (a test checks it).
pub const TABLE_SHA256: &str = include_str!("../data/minilm-static.sha256");

/// The longest word WordPiece splits (BERT's limit); a longer one is unknown.
const MAX_WORD_CHARS: usize = 100;

/// The token-embedding table, parsed once (off the startup path: the first index build).
pub struct Embedder {
    ids: HashMap<&'static str, u32>,
    /// Table index of the first ordinary word ("the"): the table keeps the model's vocabulary
    /// order, roughly by frequency after the single characters, so a token's place says how
    /// common it is.
    first_word: u32,
    dims: usize,
    scales: &'static [u8],
    vectors: &'static [u8],
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("tokens", &self.ids.len())
            .field("dims", &self.dims)
            .finish()
    }
}

/// The embedder of the committed table.
pub fn embedder() -> &'static Embedder {
    static E: OnceLock<Embedder> = OnceLock::new();
    E.get_or_init(|| Embedder::parse(TABLE).expect("the committed embedding table parses"))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

impl Embedder {
    fn parse(b: &'static [u8]) -> Option<Embedder> {
        if b.get(..8)? != b"ARCSEMB1" {
            return None;
        }
        let n = u32_at(b, 8)? as usize;
        let dims = u32_at(b, 12)? as usize;
        let names_len = u32_at(b, 16)? as usize;
        let names = std::str::from_utf8(b.get(20..20 + names_len)?).ok()?;
        let scales_at = 20 + names_len;
        let vectors_at = scales_at + 4 * n;
        let scales = b.get(scales_at..vectors_at)?;
        let vectors = b.get(vectors_at..vectors_at + n * dims)?;
        let ids: HashMap<&'static str, u32> = names
            .split('\n')
            .enumerate()
            .map(|(i, t)| (t, i as u32))
            .collect();
        let first_word = *ids.get("the")?;
        (ids.len() == n).then_some(Embedder {
            first_word,
            ids,
            dims,
            scales,
            vectors,
        })
    }

    /// How much a token says, from its place in the frequency-ordered vocabulary (a Zipf
    /// estimate, as model2vec weighs its tables): "the" and the single characters little, a
    /// rare word fully. Depends on the token alone, so an action's vector depends on its text
    /// alone and a reload can reuse it.
    pub fn rarity(&self, id: u32) -> f32 {
        let n = (self.ids.len() as u32).saturating_sub(self.first_word) as f32 + 2.0;
        let rank = id.saturating_sub(self.first_word) as f32 + 2.0;
        (rank.ln() / n.ln()).clamp(0.05, 1.0)
    }

    /// How many tokens the table holds (every token ID is below it).
    pub fn tokens(&self) -> usize {
        self.ids.len()
    }

    /// Vector dimensions.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Adds `weight` × the token's vector to `acc`.
    fn add(&self, id: u32, weight: f32, acc: &mut [f32]) {
        let i = id as usize;
        let s = f32::from_le_bytes(
            self.scales[4 * i..4 * i + 4]
                .try_into()
                .expect("four bytes"),
        ) * weight;
        let row = &self.vectors[i * self.dims..(i + 1) * self.dims];
        for (a, &q) in acc.iter_mut().zip(row) {
            *a += s * f32::from(q as i8);
        }
    }

    /// The WordPiece tokens of one lower-cased word (greedy longest match, as BERT), or none
    /// when a piece is not in the table.
    pub fn pieces(&self, word: &str) -> Vec<u32> {
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        if chars.is_empty() || chars.len() > MAX_WORD_CHARS {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut start = 0;
        let mut buf = String::new();
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while end > start {
                let from = chars[start].0;
                let to = chars.get(end).map_or(word.len(), |c| c.0);
                buf.clear();
                if start > 0 {
                    buf.push_str("##");
                }
                buf.push_str(&word[from..to]);
                if let Some(&id) = self.ids.get(buf.as_str()) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => out.push(id),
                None => return Vec::new(),
            }
            start = end;
        }
        out
    }

    /// Whether the table knows the word as one whole token (an English word, not pieces).
    pub fn knows(&self, word: &str) -> bool {
        self.ids.contains_key(word)
    }

    /// The normalised, weighted mean of the tokens of weighted words (`(word, weight)`, words
    /// lower-cased and split as [`words`] splits). A word of several pieces spreads its weight
    /// over them. `rarity` weighs a token by how much it says (its inverse document frequency
    /// over the catalog). All-zero when no word is known.
    pub fn embed(&self, words: &[(String, f32)], rarity: &dyn Fn(u32) -> f32) -> Vec<f32> {
        let mut acc = vec![0.0_f32; self.dims];
        for (w, weight) in words {
            let pieces = self.pieces(w);
            let share = *weight / pieces.len().max(1) as f32;
            for id in pieces {
                self.add(id, share * rarity(id), &mut acc);
            }
        }
        normalise(&mut acc);
        acc
    }
}

/// Scales a vector to length 1 (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        for x in v.iter_mut() {
            *x /= n;
        }
    }
}

/// Dot product (cosine of two normalised vectors).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight running sums: a single one is a chain of dependent additions the compiler may not
    // reorder, so it does not vectorise; eight independent ones it does (about 4× faster over
    // the ~6,000 ask vectors a query is compared with, docs/search.md "Asks").
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0_f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// BERT's basic tokenization, lower-cased: runs of letters and digits are words, every other
/// visible character is a word of its own (punctuation says little and is dropped here), and
/// a camelCase word is split at its humps first (parameter names: `containerId`).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_string()));
    out
}

/// [`words`] one at a time, in one buffer: an index build reads every ask's words at each
/// start, and a string per word was most of that.
pub fn for_each_word(text: &str, mut each: impl FnMut(&str)) {
    let mut cur = String::new();
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        if run.is_empty() {
            continue;
        }
        cur.clear();
        let mut prev_lower = false;
        for c in run.chars() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                each(&cur);
                cur.clear();
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            cur.extend(c.to_lowercase());
        }
        if !cur.is_empty() {
            each(&cur);
        }
    }
}

/// A vector kept as whole numbers of one step each (`scale`): half the memory of `f32`, and
/// a dot product of two of them is whole-number arithmetic the compiler runs eight lanes wide
/// on any x86-64 (`pmaddwd`), twice the speed of `f32`'s four, which matters as every query is
/// compared with every ask (docs/search.md, "Speed"). A value moves by at most half a step,
/// 1/4,094 of the largest one; a cosine by about 1/10,000.
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    scale: f32,
    values: Box<[i16]>,
}

/// The largest step count: the products of two blocks of 256 values then sum within an `i32`
/// (256 × 2,047² < 2³¹), whatever the vectors.
const STEPS: f32 = 2047.0;

impl Packed {
    /// Packs `v` (each value rounded to the nearest step of its largest one / [`STEPS`]).
    pub fn pack(v: &[f32]) -> Packed {
        let max = v.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 && max.is_finite() {
            max / STEPS
        } else {
            0.0
        };
        let values = v
            .iter()
            .map(|x| {
                if scale > 0.0 {
                    (x / scale).round().clamp(-STEPS, STEPS) as i16
                } else {
                    0
                }
            })
            .collect();
        Packed { scale, values }
    }

    /// The zero vector (a text of no known word).
    pub fn is_zero(&self) -> bool {
        self.scale == 0.0 || self.values.iter().all(|&x| x == 0)
    }

    /// How many values the vector has.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Adds the vector's values to `sum` (as far as both go).
    pub fn add_to(&self, sum: &mut [f32]) {
        for (s, &x) in sum.iter_mut().zip(self.values.iter()) {
            *s += self.scale * f32::from(x);
        }
    }

    /// Dot product (cosine when both are normalised); 0 when the lengths differ.
    pub fn dot(&self, other: &Packed) -> f32 {
        if self.values.len() != other.values.len() {
            return 0.0;
        }
        let sum: i64 = self
            .values
            .chunks(BLOCK)
            .zip(other.values.chunks(BLOCK))
            .map(|(a, b)| i64::from(dot_block(a, b)))
            .sum();
        sum as f32 * self.scale * other.scale
    }
}

/// The most values whose products [`dot_block`] adds up without leaving an `i32`.
const BLOCK: usize = 256;

/// Σ aᵢbᵢ of at most [`BLOCK`] values of at most [`STEPS`] each, in sixteen running sums: the
/// shape of `pmaddwd`.
fn dot_block(a: &[i16], b: &[i16]) -> i32 {
    let mut acc = [0_i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    acc.iter().sum::<i32>() + tail
}

/// How many vectors an [`EmbeddingCache`] holds at most (about 300 bytes each: 128 dimensions).
const CACHE_CAPACITY: usize = 32768;

/// Action and ask vectors already computed, by a hash of the text they were computed from: a
/// reload re-embeds only the actions whose text (or the catalog-wide token weights) changed,
/// and only the asks that are new.
#[derive(Debug, Default)]
pub struct EmbeddingCache {
    map: Mutex<HashMap<u64, Arc<Packed>>>,
    computed: std::sync::atomic::AtomicUsize,
}

impl EmbeddingCache {
    /// The process-wide cache the index builds share.
    pub fn global() -> &'static EmbeddingCache {
        static C: OnceLock<EmbeddingCache> = OnceLock::new();
        C.get_or_init(EmbeddingCache::default)
    }

    /// The vector for `key`, computed by `make` only when no earlier build computed it.
    pub fn get_or(&self, key: u64, make: impl FnOnce() -> Vec<f32>) -> Arc<Packed> {
        if let Some(v) = self.map.lock().expect("cache lock").get(&key) {
            return v.clone();
        }
        let v = Arc::new(Packed::pack(&make()));
        self.computed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut m = self.map.lock().expect("cache lock");
        make_room(&mut m, 1);
        m.insert(key, v.clone());
        v
    }

    /// Vectors computed so far (not taken from the cache): what a reload cost.
    pub fn computed(&self) -> usize {
        self.computed.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Empties the cache's map when `n` more vectors would take it over [`CACHE_CAPACITY`].
/// Bounded: a long-running server reloading many times keeps at most a few catalogs (each: an
/// action vector per action and one per ask or keyword, ~11,900 for the 2.8 catalog).
fn make_room(m: &mut HashMap<u64, Arc<Packed>>, n: usize) {
    if m.len() + n > CACHE_CAPACITY {
        m.clear();
    }
}

/// What begins a stored [`EmbeddingCache`] ([`EmbeddingCache::write_to`]).
const STORED_MAGIC: &[u8; 8] = b"ARCEMBC2";

impl EmbeddingCache {
    /// Writes the vectors of `keys` the cache holds (an index's: [`crate::SearchIndex::embedding_keys`]),
    /// for a later process to read back with [`EmbeddingCache::read_from`]: the catalog cache
    /// keeps them on disk, so that a start embeds only what no earlier start embedded. Only an
    /// index's own vectors are written: the cache also holds those of catalogs a reload left
    /// behind. `stamp` names what else the vectors depend on (the server's build, the catalog's
    /// reading); the table's checksum is added here. Format: the magic, the stamp's length and
    /// bytes, dimensions, count, then per vector its key (u64), its scale (f32) and its values
    /// (i16, [`Packed`]), little-endian, in key order (the same vectors give the same
    /// bytes). Streamed: no copy of the vectors is made. Returns how many were written.
    pub fn write_to(
        &self,
        out: &mut dyn std::io::Write,
        stamp: &str,
        keys: &[u64],
    ) -> std::io::Result<usize> {
        let stamp = format!("{stamp} {}", TABLE_SHA256.trim());
        let dims = embedder().dims();
        let mut kept: Vec<(u64, Arc<Packed>)> = {
            let m = self.map.lock().expect("cache lock");
            keys.iter()
                .filter_map(|k| Some((*k, m.get(k)?.clone())))
                .filter(|(_, v)| v.values.len() == dims)
                .collect()
        };
        kept.sort_by_key(|(k, _)| *k);
        kept.dedup_by_key(|(k, _)| *k);
        out.write_all(STORED_MAGIC)?;
        out.write_all(&(stamp.len() as u32).to_le_bytes())?;
        out.write_all(stamp.as_bytes())?;
        out.write_all(&(dims as u32).to_le_bytes())?;
        out.write_all(&(kept.len() as u32).to_le_bytes())?;
        let mut row = Vec::with_capacity(ROW_HEAD + 2 * dims);
        let n = kept.len();
        for (key, v) in kept {
            row.clear();
            row.extend_from_slice(&key.to_le_bytes());
            row.extend_from_slice(&v.scale.to_le_bytes());
            for x in v.values.iter() {
                row.extend_from_slice(&x.to_le_bytes());
            }
            out.write_all(&row)?;
        }
        out.flush()?;
        Ok(n)
    }

    /// Adds the vectors [`EmbeddingCache::write_to`] wrote, `len` bytes, when they were written
    /// with the same `stamp` and table; returns how many. Refuses, adding nothing, anything
    /// else: another stamp or table, other dimensions, a length that is not exactly the
    /// count's, more vectors than the cache holds, a scale that is not a finite positive number
    /// or zero, a vector that is neither normalised nor zero.
    pub fn read_from(
        &self,
        input: &mut dyn std::io::Read,
        len: u64,
        stamp: &str,
    ) -> Result<usize, &'static str> {
        let stamp = format!("{stamp} {}", TABLE_SHA256.trim());
        let dims = embedder().dims();
        let mut exact = |n: usize| -> Result<Vec<u8>, &'static str> {
            let mut b = vec![0; n];
            input.read_exact(&mut b).map_err(|_| "cut short")?;
            Ok(b)
        };
        if exact(STORED_MAGIC.len())? != STORED_MAGIC {
            return Err("not a stored embedding cache");
        }
        let word = |b: Vec<u8>| u32::from_le_bytes(b.try_into().expect("four bytes")) as usize;
        let stamp_len = word(exact(4)?);
        if stamp_len != stamp.len() || exact(stamp_len)? != stamp.as_bytes() {
            return Err("written by another build or table, or for another catalog");
        }
        if word(exact(4)?) != dims {
            return Err("other dimensions");
        }
        let count = word(exact(4)?);
        if count > CACHE_CAPACITY {
            return Err("more vectors than the cache holds");
        }
        let each = ROW_HEAD + 2 * dims;
        let head = (STORED_MAGIC.len() + 12 + stamp_len) as u64;
        if len != head + (count * each) as u64 {
            return Err("its length is not its count's");
        }
        let mut read = Vec::with_capacity(count);
        let mut row = vec![0; each];
        for _ in 0..count {
            input.read_exact(&mut row).map_err(|_| "cut short")?;
            let key = u64::from_le_bytes(row[..8].try_into().expect("eight bytes"));
            let scale = f32::from_le_bytes(row[8..12].try_into().expect("four bytes"));
            if !scale.is_finite() || scale < 0.0 {
                return Err("a scale that is not a number");
            }
            let v = Packed {
                scale,
                values: row[ROW_HEAD..]
                    .chunks_exact(2)
                    .map(|b| i16::from_le_bytes([b[0], b[1]]))
                    .collect(),
            };
            if v.values.iter().any(|x| f32::from(x.unsigned_abs()) > STEPS) {
                return Err("a value beyond the steps");
            }
            // Every vector is normalised or zero (an ask of no known word), give or take its
            // rounding.
            let norm = v.dot(&v);
            if norm != 0.0 && (norm - 1.0).abs() > NORM_SLACK {
                return Err("a vector that is not of length one");
            }
            read.push((key, Arc::new(v)));
        }
        let mut m = self.map.lock().expect("cache lock");
        make_room(&mut m, read.len());
        let n = read.len();
        m.extend(read);
        Ok(n)
    }
}

/// A stored vector's key and scale, before its values.
const ROW_HEAD: usize = 8 + 4;

/// How far a packed normalised vector's squared length may be from one: rounding each value
/// by at most half a step of the largest one moves it by well under this.
const NORM_SLACK: f32 = 1e-2;

/// A hash of weighted words: the whole input of one action vector (the table is fixed at
/// build time, and a token's weight depends on the token alone).
pub fn key_of(words: &[(String, f32)]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (w, weight) in words {
        w.hash(&mut h);
        weight.to_bits().hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed table is the one its record names (`crates/catalog/data/README.md`).
    #[test]
    fn the_table_is_the_recorded_one() {
        use sha2::Digest;
        let got: String = sha2::Sha256::digest(TABLE)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            got,
            TABLE_SHA256.trim(),
            "minilm-static.bin changed: make it as crates/catalog/data/README.md says and record its SHA-256"
        );
    }

    #[test]
    fn the_table_parses_and_splits_words_as_wordpiece() {
        let e = embedder();
        assert!(e.dims() >= 64);
        assert_eq!(e.pieces("container").len(), 1);
        // An unknown whole word falls into known pieces.
        assert!(e.pieces("kubectl").len() > 1);
        assert!(e.pieces("").is_empty());
        assert_eq!(
            words("containerId of my-app"),
            ["container", "id", "of", "my", "app"]
        );
    }

    /// A stored cache reads back whole with the same stamp and table (only the vectors of the
    /// keys asked for are written), and nothing else is read: another stamp, bytes cut short or
    /// added, a count over the bound, a value that is not a number, a vector not of length one.
    #[test]
    fn a_stored_cache_reads_back_and_nothing_else_does() {
        let e = embedder();
        let cache = EmbeddingCache::default();
        for (i, word) in ["containers", "volumes", "networks", "left"]
            .iter()
            .enumerate()
        {
            cache.get_or(i as u64, || e.embed(&[(word.to_string(), 1.0)], &|_| 1.0));
        }
        // Key 3 is a vector of another catalog's index; 9 is in no cache; 1 is asked twice.
        let bytes = |c: &EmbeddingCache, stamp: &str| {
            let mut out = Vec::new();
            assert_eq!(c.write_to(&mut out, stamp, &[2, 0, 1, 9, 1]).unwrap(), 3);
            out
        };
        let stored = bytes(&cache, "build 1");
        assert_eq!(stored, bytes(&cache, "build 1"), "the same bytes each time");
        let load = |c: &EmbeddingCache, b: &[u8], stamp: &str| {
            c.read_from(&mut &b[..], b.len() as u64, stamp)
        };
        let read = EmbeddingCache::default();
        assert_eq!(load(&read, &stored, "build 1"), Ok(3));
        assert_eq!(read.computed(), 0);
        let v = read.get_or(1, || panic!("read back, not computed"));
        assert_eq!(&*v, &*cache.get_or(1, Vec::new));
        assert!(
            !read.map.lock().unwrap().contains_key(&3),
            "not the index's"
        );
        let other = EmbeddingCache::default();
        assert!(load(&other, &stored, "build 2").is_err());
        assert!(load(&other, &stored[..stored.len() - 1], "build 1").is_err());
        let mut longer = stored.clone();
        longer.push(0);
        assert!(load(&other, &longer, "build 1").is_err());
        assert!(load(&other, b"ARCEMBC2", "build 1").is_err());
        assert!(load(&other, b"", "build 1").is_err());
        // The count field follows the magic, the stamp and the dimensions.
        let count_at = 8 + 4 + u32_at(&stored, 8).unwrap() as usize + 4;
        let mut many = stored.clone();
        many[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(load(&other, &many, "build 1").is_err());
        // The first vector's scale follows its key.
        let mut nan = stored.clone();
        let first_value = count_at + 4 + 8;
        nan[first_value..first_value + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(load(&other, &nan, "build 1").is_err());
        let mut long = stored.clone();
        long[first_value..first_value + 4].copy_from_slice(&2.0_f32.to_le_bytes());
        assert!(load(&other, &long, "build 1").is_err());
        assert_eq!(other.computed(), 0);
        assert!(
            other.map.lock().unwrap().is_empty(),
            "nothing read from a refused file"
        );
    }

    #[test]
    fn related_words_are_closer_than_unrelated_ones() {
        let e = embedder();
        let v = |s: &str| e.embed(&[(s.to_string(), 1.0)], &|_| 1.0);
        let pods = v("pods");
        assert!(dot(&pods, &v("containers")) > dot(&pods, &v("password")));
        let slack = v("slack");
        assert!(dot(&slack, &v("notification")) > dot(&slack, &v("volume")));
    }
}
