//! Content-addressed keys: one scheme for every cache key cuda-embed computes (the nvcc build key,
//! the NVRTC module key of `cuda_kernel!`'s run-time path and of run-time `Program`s).
//!
//! A [`Key`] is a SHA-256 over a scheme name followed by labelled fields, in the order they are
//! added. Every label and every value is length-prefixed and every list is counted, so no two
//! different inputs hash alike by moving bytes across a field boundary (`["ab"]` vs `["a", "b"]`),
//! and renaming a field changes every key of the scheme.

use sha2::{Digest as _, Sha256};

/// A SHA-256 digest.
pub type Digest = [u8; 32];

/// The SHA-256 of `bytes`.
///
/// ```
/// let d = cuda_embed_source::key::sha256(b"abc");
/// assert_eq!(cuda_embed_source::key::hex(&d)[..8], *"ba7816bf");
/// ```
pub fn sha256(bytes: &[u8]) -> Digest {
    Sha256::digest(bytes).into()
}

/// Lower-case hexadecimal of `bytes`.
///
/// ```
/// assert_eq!(cuda_embed_source::key::hex(&[0x0f, 0xa0]), "0fa0");
/// ```
pub fn hex(bytes: &[u8]) -> String {
    // A digit table rather than `write!("{b:02x}")`: a cache hit formats two digests, and the
    // formatting machinery cost more than the hashing of a small key.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

/// A key being built: labelled fields hashed in order.
///
/// ```
/// use cuda_embed_source::key::Key;
/// let key = |arch: u32| {
///     let mut k = Key::new("example v1");
///     k.field("arch", arch.to_le_bytes()).list("options", ["-O3", "-DN=4"]).field("source", "...");
///     k.finish()
/// };
/// assert_eq!(key(90).len(), 64);
/// assert_eq!(key(90), key(90));
/// assert_ne!(key(90), key(80));
/// ```
#[derive(Clone)]
pub struct Key {
    hasher: Sha256,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key").finish_non_exhaustive()
    }
}

impl Key {
    /// A key of the given scheme (e.g. `"cuda-embed nvcc build v2"`): keys of different schemes
    /// never collide, and changing what a scheme hashes means changing its name.
    pub fn new(scheme: &str) -> Key {
        let mut k = Key { hasher: Sha256::new() };
        k.field("scheme", scheme);
        k
    }

    fn raw(&mut self, bytes: &[u8]) {
        self.hasher.update((bytes.len() as u64).to_le_bytes());
        self.hasher.update(bytes);
    }

    /// Adds one field: its label, then its value's bytes.
    pub fn field(&mut self, label: &str, value: impl AsRef<[u8]>) -> &mut Self {
        self.raw(label.as_bytes());
        self.raw(value.as_ref());
        self
    }

    /// Adds a list: its label and item count, then each item.
    pub fn list<I>(&mut self, label: &str, items: I) -> &mut Self
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let items: Vec<I::Item> = items.into_iter().collect();
        self.field(label, (items.len() as u64).to_le_bytes());
        for item in &items {
            self.raw(item.as_ref());
        }
        self
    }

    /// The key: the hex SHA-256 of everything added (64 characters, safe as a file name).
    pub fn finish(&self) -> String {
        hex(&self.hasher.clone().finalize())
    }
}

/// The program name NVRTC compiles the source of a `cuda_kernel!` under when no compiler ran at
/// build time (its diagnostics name the Rust file through the source's `#line` directive).
pub const NVRTC_KERNEL_NAME: &str = "cuda_embed_kernel.cu";

/// The digest (hex SHA-256) of the inputs of an NVRTC compile that the program fixes: its name,
/// options, name expressions, source and in-memory headers (names and texts). The NVRTC module
/// key hashes it with what is only known at run time (the NVRTC, the architecture, the headers
/// found on disk), so `cuda_kernel!` computes it at build time and a cache hit does not hash the
/// source again.
///
/// ```
/// use cuda_embed_source::key::nvrtc_unit_digest;
/// let d = nvrtc_unit_digest("k.cu", "__global__ void k() {}", &["-O3"], &[("h.cuh", "")], &["k"]);
/// assert_eq!(d.len(), 64);
/// assert_ne!(d, nvrtc_unit_digest("k.cu", "__global__ void k() {}", &["-O2"], &[("h.cuh", "")], &["k"]));
/// ```
pub fn nvrtc_unit_digest<S: AsRef<str>>(
    name: &str,
    source: &str,
    options: &[S],
    headers: &[(S, S)],
    name_expressions: &[S],
) -> String {
    let mut k = Key::new("cuda-embed nvrtc unit v1");
    k.field("name", name)
        .list("options", options.iter().map(|s| s.as_ref()))
        .list("name expressions", name_expressions.iter().map(|s| s.as_ref()))
        .field("source", source)
        .list("header names", headers.iter().map(|(n, _)| n.as_ref()))
        .list("header texts", headers.iter().map(|(_, t)| t.as_ref()));
    k.finish()
}

/// What a passed load check of a `cuda_kernel!` module compiled by NVRTC at run time is recorded
/// under in its cubin's cache entry: `checked <hash of the module's source and type probe>` (the
/// cubin itself is what the entry holds). A pure function of text the macro embeds, so the macro
/// computes it at build time and a cache hit does not hash the source and the probe again.
///
/// ```
/// let mark = cuda_embed_source::key::checks_mark("__global__ void k() {}", "probe");
/// assert!(mark.starts_with("checked ") && mark.len() == 8 + 64);
/// assert_ne!(mark, cuda_embed_source::key::checks_mark("__global__ void k() {}", "other probe"));
/// ```
pub fn checks_mark(source: &str, probe: &str) -> String {
    let mut k = Key::new("cuda-embed load checks v1");
    k.field("source", source).field("probe", probe);
    format!("checked {}", k.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(scheme: &str, fields: &[(&str, &str)], list: &[&str]) -> String {
        let mut k = Key::new(scheme);
        for (l, v) in fields {
            k.field(l, v);
        }
        k.list("list", list);
        k.finish()
    }

    #[test]
    fn every_field_changes_the_key() {
        let base = key("s", &[("a", "1"), ("b", "2")], &["x", "y"]);
        assert_eq!(base, key("s", &[("a", "1"), ("b", "2")], &["x", "y"]), "deterministic");
        let variants = [
            ("scheme", key("t", &[("a", "1"), ("b", "2")], &["x", "y"])),
            ("value", key("s", &[("a", "1"), ("b", "3")], &["x", "y"])),
            ("label", key("s", &[("a", "1"), ("c", "2")], &["x", "y"])),
            ("order", key("s", &[("b", "2"), ("a", "1")], &["x", "y"])),
            ("list item", key("s", &[("a", "1"), ("b", "2")], &["x", "z"])),
            ("list length", key("s", &[("a", "1"), ("b", "2")], &["x"])),
            ("missing field", key("s", &[("a", "1")], &["x", "y"])),
        ];
        for (what, other) in &variants {
            assert_ne!(&base, other, "changing the {what} must change the key");
        }
    }

    #[test]
    fn boundaries_are_not_ambiguous() {
        assert_ne!(key("s", &[], &["ab"]), key("s", &[], &["a", "b"]));
        assert_ne!(key("s", &[("ab", "")], &[]), key("s", &[("a", "b")], &[]));
        assert_ne!(key("s", &[("a", "")], &["b"]), key("s", &[("a", "b")], &[]));
        // An empty list differs from no list.
        let mut with_list = Key::new("s");
        with_list.list("l", Vec::<&str>::new());
        assert_ne!(with_list.finish(), Key::new("s").finish());
    }

    #[test]
    fn every_input_of_a_unit_changes_its_digest() {
        let d = |name, source, options: &[&str], headers: &[(&str, &str)], exprs: &[&str]| {
            nvrtc_unit_digest(name, source, options, headers, exprs)
        };
        let base = d("n", "s", &["-O3"], &[("h", "t")], &["k"]);
        assert_eq!(base, d("n", "s", &["-O3"], &[("h", "t")], &["k"]));
        for other in [
            d("m", "s", &["-O3"], &[("h", "t")], &["k"]),
            d("n", "r", &["-O3"], &[("h", "t")], &["k"]),
            d("n", "s", &["-O2"], &[("h", "t")], &["k"]),
            d("n", "s", &["-O", "3"], &[("h", "t")], &["k"]),
            d("n", "s", &["-O3"], &[("g", "t")], &["k"]),
            d("n", "s", &["-O3"], &[("h", "u")], &["k"]),
            d("n", "s", &["-O3"], &[("h", "t")], &["j"]),
            d("n", "s", &["-O3"], &[("h", "t")], &[]),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn hex_and_sha256() {
        assert_eq!(hex(&sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
