//! Following `#include "..."` from a CUDA source: which user headers it reaches (for cargo's
//! rebuild tracking, the cache key and NVRTC's in-memory headers) and include cycles that would
//! never end.

use std::path::{Path, PathBuf};

/// A user header reached from the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The name as written in the `#include` (`"common.cuh"`, `"../x.h"`).
    pub include: String,
    /// Where it was found.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// `#include "name"` / `#include <name>` lines of a text: (name, quoted, 1-based line).
pub fn directives(text: &str) -> Vec<(String, bool, usize)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let l = line.trim_start();
        let Some(rest) = l.strip_prefix('#') else { continue };
        let Some(rest) = rest.trim_start().strip_prefix("include") else { continue };
        let rest = rest.trim_start();
        let (close, quoted) = match rest.chars().next() {
            Some('"') => ('"', true),
            Some('<') => ('>', false),
            _ => continue,
        };
        if let Some(end) = rest[1..].find(close) {
            out.push((rest[1..1 + end].to_string(), quoted, n + 1));
        }
    }
    out
}

/// Whether a header protects itself against repeated inclusion (`#pragma once`, or an
/// `#ifndef X` / `#define X` guard as its first directives).
fn guarded(text: &str) -> bool {
    let directives: Vec<&str> = text.lines().map(str::trim).filter(|l| l.starts_with('#')).take(2).collect();
    if text.lines().any(|l| {
        let t = l.trim().trim_start_matches('#').trim_start();
        t.starts_with("pragma") && t.contains("once")
    }) {
        return true;
    }
    match directives.as_slice() {
        [a, b] => {
            let a = a.trim_start_matches('#').trim();
            let b = b.trim_start_matches('#').trim();
            a.strip_prefix("ifndef").map(str::trim).is_some_and(|g| {
                b.strip_prefix("define").map(str::trim).is_some_and(|d| d.split_whitespace().next() == Some(g))
            })
        }
        _ => false,
    }
}

/// Every user header reachable from `source` (whose own directory is `dir`), searching quoted
/// includes next to the including file first, then `include_dirs`; angle includes only in
/// `include_dirs` (system and toolkit headers are not followed). Headers that cannot be found
/// are left to the compiler, which reports them with a location. An include cycle through
/// unguarded headers is an error.
pub fn scan(source: &str, dir: Option<&Path>, include_dirs: &[PathBuf]) -> Result<Vec<Header>, String> {
    let mut found: Vec<Header> = Vec::new();
    let mut stack: Vec<(PathBuf, String)> = Vec::new();
    walk(source, dir, include_dirs, &mut stack, &mut found)?;
    Ok(found)
}

fn walk(
    text: &str,
    dir: Option<&Path>,
    include_dirs: &[PathBuf],
    stack: &mut Vec<(PathBuf, String)>,
    found: &mut Vec<Header>,
) -> Result<(), String> {
    for (name, quoted, _) in directives(text) {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if quoted {
            candidates.extend(dir.map(|d| d.join(&name)));
        }
        candidates.extend(include_dirs.iter().map(|d| d.join(&name)));
        let Some(path) = candidates.into_iter().find(|p| p.is_file()) else { continue };
        let path = path.canonicalize().unwrap_or(path);
        if let Some(at) = stack.iter().position(|p| p.0 == path) {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if guarded(&text) {
                continue;
            }
            let chain: Vec<&str> = stack[at..].iter().map(|p| p.1.as_str()).chain([name.as_str()]).collect();
            return Err(format!(
                "include cycle: {} — the headers include each other without include guards, so the preprocessor \
                 would never stop: add `#pragma once` to them or break the cycle",
                chain.join(" -> ")
            ));
        }
        if found.iter().any(|h| h.path == path && h.include == name) {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        found.push(Header { include: name.clone(), path: path.clone(), text: text.clone() });
        stack.push((path.clone(), name));
        walk(&text, path.parent(), include_dirs, stack, found)?;
        stack.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_nested_includes_and_dirs() {
        let d = tempfile::tempdir().unwrap();
        let inc = d.path().join("inc");
        std::fs::create_dir_all(inc.join("sub")).unwrap();
        std::fs::write(d.path().join("a.cuh"), "#pragma once\n#include \"sub/b.cuh\"\n").unwrap();
        std::fs::write(inc.join("sub/b.cuh"), "#include <c.cuh>\n").unwrap();
        std::fs::write(inc.join("c.cuh"), "#define C 1\n").unwrap();
        let src = "#include \"a.cuh\"\n#include <cuda_fp16.h>\n  #  include \"missing.cuh\"\n";
        let h = scan(src, Some(d.path()), std::slice::from_ref(&inc)).unwrap();
        let names: Vec<&str> = h.iter().map(|h| h.include.as_str()).collect();
        assert_eq!(names, ["a.cuh", "sub/b.cuh", "c.cuh"]);
        assert_eq!(directives(src)[2], ("missing.cuh".to_string(), true, 3));
    }

    #[test]
    fn unguarded_cycle_is_an_error_guarded_is_not() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.cuh"), "#include \"b.cuh\"\n").unwrap();
        std::fs::write(d.path().join("b.cuh"), "#include \"a.cuh\"\n").unwrap();
        let e = scan("#include \"a.cuh\"", Some(d.path()), &[]).unwrap_err();
        assert!(e.contains("include cycle") && e.contains("a.cuh -> ") && e.contains("#pragma once"), "{e}");
        std::fs::write(d.path().join("a.cuh"), "#ifndef A_CUH\n#define A_CUH\n#include \"b.cuh\"\n#endif\n").unwrap();
        let h = scan("#include \"a.cuh\"", Some(d.path()), &[]).unwrap();
        assert_eq!(h.len(), 2);
    }
}
