//! Following `#include` from a CUDA source: which user headers it reaches (for cargo's rebuild
//! tracking and NVRTC's in-memory headers) and include cycles that would never end.
//!
//! A thin layer over [`cuda_embed_source::includes`], the scanner the runtime uses too; its module
//! docs state the rules (quoted includes next to the including file, then the include
//! directories; angle includes only in the include directories; toolkit and system headers not
//! followed; a cycle through headers without include guards is an error naming the chain).

use cuda_embed_source::includes::Scanner;
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
    /// The named namespaces enclosing the `#include` the compiler reads it at
    /// (`namespace ops { #include "k.cuh" }`: `["ops"]`), which its declarations live in; set
    /// by the front end ([`crate::front::headers`]), empty until then and for a header included at
    /// global scope.
    pub namespaces: Vec<String>,
}

/// Every user header reachable from `source` (whose own directory is `dir`), searching quoted
/// includes next to the including file first, then `include_dirs`; angle includes only in
/// `include_dirs`. Headers that cannot be found are left to the compiler, which reports them with
/// a location. An include cycle through unguarded headers is an error naming the chain.
pub fn scan(source: &str, dir: Option<&Path>, include_dirs: &[PathBuf]) -> Result<Vec<Header>, String> {
    let headers = Scanner::new(include_dirs).scan(source, dir).into_result().map_err(|c| c.to_string())?;
    Ok(headers
        .into_iter()
        .filter_map(|h| Some(Header { include: h.include, path: h.path?, text: h.text, namespaces: Vec::new() }))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_reports_files_and_cycles() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.cuh"), "#include \"b.cuh\"\n").unwrap();
        std::fs::write(d.path().join("b.cuh"), "#define B 1\n").unwrap();
        let h = scan("#include \"a.cuh\"\n#include <cuda_fp16.h>\n", Some(d.path()), &[]).unwrap();
        assert_eq!(h.iter().map(|h| h.include.as_str()).collect::<Vec<_>>(), ["a.cuh", "b.cuh"]);
        assert_eq!(h[1].path, d.path().join("b.cuh").canonicalize().unwrap());
        assert_eq!(h[1].text, "#define B 1\n");
        std::fs::write(d.path().join("b.cuh"), "#include \"a.cuh\"\n").unwrap();
        let e = scan("#include \"a.cuh\"", Some(d.path()), &[]).unwrap_err();
        assert!(e.contains("include cycle: a.cuh -> b.cuh -> a.cuh"), "{e}");
    }
}
