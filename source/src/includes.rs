//! The one `#include` scanner: which user headers a CUDA source reaches, and include cycles that
//! would never end.
//!
//! The macro uses it for cargo's rebuild tracking and for the headers it embeds for NVRTC; the
//! runtime uses it for the cache key of NVRTC modules and run-time programs (the bytes of every
//! header reached are hashed, so editing one misses).
//!
//! # Semantics
//!
//! Every `#include "name"`, `#include <name>` and `#include_next` line counts, even one disabled by
//! `#if` (a scan may find more than the preprocessor reads, never less); an `#include MACRO` is not
//! followed. A name resolves, in order:
//!
//! 1. to an in-memory header of exactly that name ([`Scanner::memory`]; NVRTC's headers),
//! 2. for `"name"` only: to the file next to the including file (for the source itself, and for
//!    in-memory headers, the directory given to [`Scanner::scan`]),
//! 3. to the file in the first include directory that has it.
//!
//! Toolkit and system include directories (those holding the CUDA headers, or under
//! `/usr/include`) are not searched: their headers are versioned with the compiler, which every
//! key covers. A name that resolves nowhere is reported in [`Scan::missing`] and left to the
//! compiler, which reports it with a location when it is really read.
//!
//! A header reached again while it is still being included (a cycle) is not followed again. If it
//! protects itself (`#pragma once`, or `#ifndef X` / `#if !defined(X)` then `#define X` as its
//! first directives) that is fine; otherwise the preprocessor would never stop, and the chain of
//! includes is reported in [`Scan::cycles`]. The scan itself always ends.

use crate::key::{sha256, Digest};
use std::path::{Path, PathBuf};

/// One `#include` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// The name as written between the quotes or angle brackets.
    pub name: String,
    /// `"name"` (true) or `<name>` (false).
    pub quoted: bool,
    /// 1-based line number.
    pub line: usize,
}

/// The `#include` lines of `text` (see the module docs).
///
/// ```
/// let d = cuda_embed_source::includes::directives("#include \"a.cuh\"\n  #  include <b/c.h>\n");
/// assert_eq!((d[0].name.as_str(), d[0].quoted, d[1].name.as_str(), d[1].line), ("a.cuh", true, "b/c.h", 2));
/// ```
pub fn directives(text: &str) -> Vec<Directive> {
    if !may_include(text) {
        return Vec::new();
    }
    text.lines()
        .enumerate()
        .filter_map(|(n, line)| {
            let rest = line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include")?;
            let rest = rest.strip_prefix("_next").unwrap_or(rest).trim_start();
            let (quoted, close) = match rest.chars().next()? {
                '"' => (true, '"'),
                '<' => (false, '>'),
                _ => return None,
            };
            let name = &rest[1..];
            Some(Directive { name: name[..name.find(close)?].to_string(), quoted, line: n + 1 })
        })
        .collect()
}

/// Whether `text` may hold an `#include` line: every directive holds the word (the preprocessor
/// cannot make one from a macro), so a text without it includes nothing and is not read line by
/// line. A plain byte loop: on a cache hit this is all the scan does with a source that
/// includes nothing, and a substring searcher's setup would cost more than the loop.
///
/// ```
/// use cuda_embed_source::includes::may_include;
/// assert!(may_include("#include \"a.cuh\"") && may_include("// includes"));
/// assert!(!may_include("__global__ void k() {}") && !may_include("inclu"));
/// ```
pub fn may_include(text: &str) -> bool {
    const WORD: &[u8] = b"include";
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(WORD.len() - 1)).any(|at| bytes[at] == b'i' && bytes[at..].starts_with(WORD))
}

/// Whether a header protects itself against repeated inclusion: `#pragma once`, or an include
/// guard (`#ifndef X` or `#if !defined(X)`, then `#define X`) as its first two directives.
pub fn guarded(text: &str) -> bool {
    let directives: Vec<&str> =
        text.lines().filter_map(|l| l.trim().strip_prefix('#')).map(str::trim).take(2).collect();
    if text.lines().filter_map(|l| l.trim().strip_prefix('#')).any(|d| {
        let d = d.trim_start();
        d.strip_prefix("pragma").is_some_and(|p| p.split_whitespace().next() == Some("once"))
    }) {
        return true;
    }
    let [first, second] = directives.as_slice() else { return false };
    let guard = first.strip_prefix("ifndef").map(str::trim).or_else(|| {
        let cond = first.strip_prefix("if")?.trim_start().strip_prefix('!')?.trim_start().strip_prefix("defined")?;
        Some(cond.trim().trim_start_matches('(').trim_end_matches(')').trim())
    });
    let defined = second.strip_prefix("define").and_then(|d| d.split_whitespace().next());
    guard.is_some_and(|g| !g.is_empty() && defined == Some(g))
}

/// A header reached from the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The name as written in the `#include` (`"common.cuh"`, `"../x.h"`).
    pub include: String,
    /// The file it was found in (canonical), or `None` for an in-memory header.
    pub path: Option<PathBuf>,
    /// Its text (invalid UTF-8 replaced).
    pub text: String,
    /// SHA-256 of the file's bytes; all zeros for an in-memory header, whose text the caller
    /// already has (every key over in-memory headers hashes their texts itself, so the scan does
    /// not hash them a second time).
    pub sha256: Digest,
}

/// An include cycle through headers without include guards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// The include names from the first header of the cycle back to it (`a.cuh`, `b.cuh`, `a.cuh`).
    pub chain: Vec<String>,
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "include cycle: {} — the headers include each other without include guards, so the preprocessor \
             would never stop: add `#pragma once` to them or break the cycle",
            self.chain.join(" -> ")
        )
    }
}

impl std::error::Error for Cycle {}

/// What a [`Scanner::scan`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Every header reached, in include order (depth first). A file reached under two different
    /// names is listed under each (NVRTC resolves in-memory headers by name).
    pub headers: Vec<Header>,
    /// Names that resolved nowhere, each once, in the order first seen (`<cuda_fp16.h>` lands
    /// here: toolkit headers are not searched).
    pub missing: Vec<String>,
    /// Include cycles through unguarded headers.
    pub cycles: Vec<Cycle>,
}

impl Scan {
    /// The headers, or the first include cycle as an error.
    pub fn into_result(self) -> Result<Vec<Header>, Cycle> {
        match self.cycles.into_iter().next() {
            Some(c) => Err(c),
            None => Ok(self.headers),
        }
    }
}

/// Where a header came from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    Memory(usize),
    File(PathBuf),
}

/// Scans sources for the headers they include (see the module docs for the rules).
///
/// ```
/// use cuda_embed_source::includes::Scanner;
/// let memory = [("common.cuh", "#pragma once\n#define N 4\n")];
/// let scan = Scanner::new(&[]).memory(&memory).scan("#include \"common.cuh\"\n#include <cuda_fp16.h>\n", None);
/// assert_eq!(scan.headers[0].include, "common.cuh");
/// assert_eq!(scan.missing, ["cuda_fp16.h"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Scanner<'a> {
    /// The include directories as given.
    given: Vec<PathBuf>,
    /// `given` less the toolkit and system directories, sorted out at the first include that
    /// searches them: telling a toolkit directory apart costs a `stat` per name it may hold, and
    /// a source without such an include (the common case of a cache hit at first launch) must
    /// not pay them.
    dirs: std::sync::OnceLock<Vec<PathBuf>>,
    memory: Vec<(&'a str, &'a str)>,
}

impl<'a> Scanner<'a> {
    /// A scanner searching `include_dirs` in order (toolkit and system directories left out).
    pub fn new(include_dirs: &[PathBuf]) -> Scanner<'a> {
        Scanner { given: include_dirs.to_vec(), dirs: std::sync::OnceLock::new(), memory: Vec::new() }
    }

    /// The include directories searched: those given, less toolkit and system ones.
    fn dirs(&self) -> &[PathBuf] {
        self.dirs.get_or_init(|| self.given.iter().filter(|d| !is_system_include_dir(d)).cloned().collect())
    }

    /// Adds in-memory headers, `(name, text)`: an include of exactly `name` reads `text`.
    pub fn memory<N: AsRef<str>, T: AsRef<str>>(mut self, headers: &'a [(N, T)]) -> Scanner<'a> {
        self.memory.extend(headers.iter().map(|(n, t)| (n.as_ref(), t.as_ref())));
        self
    }

    /// Every header `source` reaches; `dir` is the source's own directory (for its quoted
    /// includes and those of in-memory headers; `None`: none).
    pub fn scan(&self, source: &str, dir: Option<&Path>) -> Scan {
        let mut scan = Scan::default();
        let mut stack: Vec<(Origin, String)> = Vec::new();
        self.walk(source, dir, dir, &mut stack, &mut scan);
        scan
    }

    /// [`scan`](Self::scan) of a compilation unit whose options include `pre_includes` before
    /// the source ([`crate::options::pre_includes`]): the headers they reach come first, as if
    /// the source began with `#include "H"` for each. A name that cannot be written in a quoted
    /// include (a `"` or a line break in it) is reported missing.
    ///
    /// ```
    /// use cuda_embed_source::includes::Scanner;
    /// let headers = [("pre.cuh", "#define N 4\n"), ("k.cuh", "")];
    /// let scan = Scanner::new(&[]).memory(&headers).scan_unit(&["pre.cuh".to_string()], "#include \"k.cuh\"\n", None);
    /// let names: Vec<&str> = scan.headers.iter().map(|h| h.include.as_str()).collect();
    /// assert_eq!(names, ["pre.cuh", "k.cuh"]);
    /// ```
    pub fn scan_unit(&self, pre_includes: &[String], source: &str, dir: Option<&Path>) -> Scan {
        if pre_includes.is_empty() {
            return self.scan(source, dir);
        }
        let mut text = String::with_capacity(source.len() + pre_includes.iter().map(|h| h.len() + 12).sum::<usize>());
        let mut unwritable = Vec::new();
        for h in pre_includes {
            if h.contains(['"', '\n', '\r']) {
                unwritable.push(h.clone());
            } else {
                text.push_str("#include \"");
                text.push_str(h);
                text.push_str("\"\n");
            }
        }
        text.push_str(source);
        let mut scan = self.scan(&text, dir);
        for h in unwritable {
            if !scan.missing.contains(&h) {
                scan.missing.push(h);
            }
        }
        scan
    }

    fn resolve(&self, d: &Directive, base: Option<&Path>) -> Option<Origin> {
        if let Some(i) = self.memory.iter().position(|(n, _)| *n == d.name) {
            return Some(Origin::Memory(i));
        }
        let next_to = if d.quoted { base } else { None };
        let path = next_to
            .into_iter()
            .chain(self.dirs().iter().map(PathBuf::as_path))
            .map(|b| b.join(&d.name))
            .find(|p| p.is_file())?;
        Some(Origin::File(path.canonicalize().unwrap_or(path)))
    }

    fn load(&self, origin: &Origin) -> Option<(String, Digest)> {
        match origin {
            Origin::Memory(i) => Some((self.memory[*i].1.to_string(), [0; 32])),
            Origin::File(p) => {
                let bytes = std::fs::read(p).ok()?;
                Some((String::from_utf8_lossy(&bytes).into_owned(), sha256(&bytes)))
            }
        }
    }

    fn walk(
        &self,
        text: &str,
        base: Option<&Path>,
        source_dir: Option<&Path>,
        stack: &mut Vec<(Origin, String)>,
        scan: &mut Scan,
    ) {
        for d in directives(text) {
            let missing = |scan: &mut Scan| {
                if !scan.missing.contains(&d.name) {
                    scan.missing.push(d.name.clone());
                }
            };
            let Some(origin) = self.resolve(&d, base) else {
                missing(scan);
                continue;
            };
            if let Some(at) = stack.iter().position(|(o, _)| *o == origin) {
                if !self.load(&origin).is_some_and(|(text, _)| guarded(&text)) {
                    let chain = stack[at..].iter().map(|(_, n)| n.clone()).chain([d.name.clone()]).collect();
                    scan.cycles.push(Cycle { chain });
                }
                continue;
            }
            let path = match &origin {
                Origin::File(p) => Some(p.clone()),
                Origin::Memory(_) => None,
            };
            if scan.headers.iter().any(|h| h.path == path && h.include == d.name) {
                continue; // already followed under this name
            }
            let Some((text, sha)) = self.load(&origin) else {
                missing(scan); // unreadable: the compiler will say why
                continue;
            };
            let next_base = match &path {
                Some(p) => p.parent().map(Path::to_path_buf),
                None => source_dir.map(Path::to_path_buf),
            };
            scan.headers.push(Header { include: d.name.clone(), path, text: text.clone(), sha256: sha });
            stack.push((origin, d.name.clone()));
            self.walk(&text, next_base.as_deref(), source_dir, stack, scan);
            stack.pop();
        }
    }
}

/// A directory whose headers are versioned with the compiler: a CUDA toolkit or CCCL include
/// directory, or a system one (under `/usr/include`).
fn is_system_include_dir(dir: &Path) -> bool {
    crate::options::is_toolkit_include_dir(dir)
        || dir.starts_with("/usr/include")
        || crate::options::is_cutlass_include_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(scan: &Scan) -> Vec<&str> {
        scan.headers.iter().map(|h| h.include.as_str()).collect()
    }

    #[test]
    fn directives_are_read_like_the_preprocessor() {
        let text = "#include \"a.cuh\"\n  #  include <b/c.h>\n#include_next \"d.h\"\n// #include \"no.h\"\n#define X\n#include MACRO\n";
        let found: Vec<_> = directives(text).into_iter().map(|d| (d.quoted, d.name, d.line)).collect();
        assert_eq!(found, [(true, "a.cuh".into(), 1), (false, "b/c.h".into(), 2), (true, "d.h".into(), 3)]);
        assert!(directives("#define X 1\n__global__ void k() {}\n").is_empty());
    }

    #[test]
    fn quoted_resolve_next_to_the_including_file_then_include_dirs() {
        let d = tempfile::tempdir().unwrap();
        let inc = d.path().join("inc");
        std::fs::create_dir_all(inc.join("sub")).unwrap();
        std::fs::write(d.path().join("a.cuh"), "#pragma once\n#include \"sub/b.cuh\"\n").unwrap();
        // Relative to b.cuh (inc/sub/), not to the source: inc/sub/near.cuh.
        std::fs::write(inc.join("sub/b.cuh"), "#include <c.cuh>\n#include \"near.cuh\"\n").unwrap();
        std::fs::write(inc.join("sub/near.cuh"), "").unwrap();
        std::fs::write(inc.join("c.cuh"), "#define C 1\n").unwrap();
        let src = "#include \"a.cuh\"\n#include <cuda_fp16.h>\n  #  include \"missing.cuh\"\n";
        let scan = Scanner::new(std::slice::from_ref(&inc)).scan(src, Some(d.path()));
        assert_eq!(names(&scan), ["a.cuh", "sub/b.cuh", "c.cuh", "near.cuh"]);
        assert_eq!(scan.headers[3].path.as_deref(), Some(inc.join("sub/near.cuh").canonicalize().unwrap().as_path()));
        assert_eq!(scan.missing, ["cuda_fp16.h", "missing.cuh"]);
        assert!(scan.cycles.is_empty());
        assert_eq!(scan.headers[2].sha256, sha256(b"#define C 1\n"));
    }

    #[test]
    fn angle_includes_only_search_include_dirs() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("x.cuh"), "").unwrap();
        let scan = Scanner::new(&[]).scan("#include <x.cuh>\n", Some(d.path()));
        assert!(scan.headers.is_empty());
        assert_eq!(scan.missing, ["x.cuh"]);
        let scan = Scanner::new(&[d.path().to_path_buf()]).scan("#include <x.cuh>\n", None);
        assert_eq!(names(&scan), ["x.cuh"]);
    }

    /// Which include directories are the toolkit's is found out with `stat`s, only once an
    /// include needs the directories: a source without includes costs no file system call.
    #[test]
    fn include_dirs_are_sorted_out_only_when_an_include_needs_them() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("cuda_fp16.h"), "").unwrap();
        let scanner = Scanner::new(&[d.path().to_path_buf()]);
        let memory = [("m.cuh", "#define M 1\n")];
        let with_memory = scanner.clone().memory(&memory);
        assert_eq!(scanner.scan("__global__ void k() {}\n", Some(d.path())), Scan::default());
        assert_eq!(with_memory.scan("#include \"m.cuh\"\n", None).headers.len(), 1);
        assert!(scanner.dirs.get().is_none() && with_memory.dirs.get().is_none(), "no include searched the dirs");
        assert_eq!(scanner.scan("#include <cuda_fp16.h>\n", None).missing, ["cuda_fp16.h"]);
        assert_eq!(scanner.dirs.get().map(Vec::len), Some(0), "the toolkit directory is left out");
    }

    #[test]
    fn toolkit_dirs_are_not_searched() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("cuda_fp16.h"), "").unwrap();
        let scan = Scanner::new(&[d.path().to_path_buf()]).scan("#include <cuda_fp16.h>\n", None);
        assert!(scan.headers.is_empty());
    }

    #[test]
    fn in_memory_headers_come_first() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("m.cuh"), "on disk").unwrap();
        std::fs::write(d.path().join("disk.cuh"), "").unwrap();
        let memory = [("m.cuh".to_string(), "#include \"disk.cuh\"\n".to_string())];
        let scan = Scanner::new(&[]).memory(&memory).scan("#include \"m.cuh\"\n", Some(d.path()));
        assert_eq!(names(&scan), ["m.cuh", "disk.cuh"]);
        assert_eq!((scan.headers[0].path.as_ref(), scan.headers[0].text.as_str()), (None, "#include \"disk.cuh\"\n"));
        assert_eq!(scan.headers[0].sha256, [0; 32], "an in-memory header is not hashed by the scan");
        assert_eq!(scan.headers[1].sha256, sha256(b""), "a file is");
    }

    #[test]
    fn unguarded_cycle_reports_the_chain_guarded_is_fine() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.cuh"), "#include \"b.cuh\"\n").unwrap();
        std::fs::write(d.path().join("b.cuh"), "#include \"a.cuh\"\n").unwrap();
        let scan = Scanner::new(&[]).scan("#include \"a.cuh\"", Some(d.path()));
        assert_eq!(names(&scan), ["a.cuh", "b.cuh"], "the headers of the cycle are still found");
        assert_eq!(scan.cycles, [Cycle { chain: vec!["a.cuh".into(), "b.cuh".into(), "a.cuh".into()] }]);
        let e = scan.into_result().unwrap_err().to_string();
        assert!(e.starts_with("include cycle: a.cuh -> b.cuh -> a.cuh — ") && e.contains("#pragma once"), "{e}");

        for guard in ["#ifndef A_CUH\n#define A_CUH\n", "#pragma once\n", "#if !defined(A_CUH)\n#define A_CUH\n"] {
            std::fs::write(d.path().join("a.cuh"), format!("{guard}#include \"b.cuh\"\n#endif\n")).unwrap();
            let h = Scanner::new(&[]).scan("#include \"a.cuh\"", Some(d.path())).into_result().unwrap();
            assert_eq!(h.len(), 2, "{guard}");
        }
        // A header including itself, and in-memory headers, too.
        let memory = [("s.cuh", "#include \"s.cuh\"\n")];
        let scan = Scanner::new(&[]).memory(&memory).scan("#include \"s.cuh\"", None);
        assert_eq!(scan.cycles[0].chain, ["s.cuh", "s.cuh"]);
    }

    #[test]
    fn guard_detection() {
        assert!(guarded("// c\n#pragma once\n"));
        assert!(guarded("#ifndef X_H\n#define X_H\n#endif\n"));
        assert!(guarded("#if !defined X_H\n#define X_H 1\n#endif\n"));
        assert!(!guarded("#ifndef X_H\n#define Y_H\n"));
        assert!(!guarded("#include \"a.h\"\n#ifndef X\n#define X\n"));
        assert!(!guarded("#pragma unroll\n"));
    }
}
