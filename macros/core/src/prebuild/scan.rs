//! Finding a crate's kernel macro invocations in its source files, with the call site each
//! proc macro will see (the file name rustc gives it, the lines of its tokens).
//!
//! What the proc macros in `cuda-embed-macros` (`macros/src/lib.rs`) read from their input is
//! read here the same way from the file's tokens: the call site is the first token's line, the
//! lines of `elementwise_kernel!`'s `key = "literal"` pairs and of every literal of
//! `reduction_kernel!` and `fuse!`. A difference would only cost the macro a cache miss (a
//! compile of its own), never a wrong image: what the cache returns is keyed by what was
//! compiled.

use crate::expand::CallSite;
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A function-like kernel macro whose expansion compiles CUDA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Macro {
    /// `cuda_kernel!`
    CudaKernel,
    /// `elementwise_kernel!`
    Elementwise,
    /// `reduction_kernel!`
    Reduction,
    /// `fuse!`
    Fuse,
}

/// Every kernel macro [`Macro::named`] knows.
pub const MACROS: [Macro; 4] = [Macro::CudaKernel, Macro::Elementwise, Macro::Reduction, Macro::Fuse];

impl Macro {
    /// The macro named `name` (the last segment of its path), if it is one of these.
    pub fn named(name: &str) -> Option<Macro> {
        Some(match name {
            "cuda_kernel" => Macro::CudaKernel,
            "elementwise_kernel" => Macro::Elementwise,
            "reduction_kernel" => Macro::Reduction,
            "fuse" => Macro::Fuse,
            _ => return None,
        })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Macro::CudaKernel => "cuda_kernel",
            Macro::Elementwise => "elementwise_kernel",
            Macro::Reduction => "reduction_kernel",
            Macro::Fuse => "fuse",
        }
    }
}

/// One invocation found in a file: the macro, its input tokens and its call site, as the proc
/// macro receives them.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// Which macro.
    pub which: Macro,
    /// Its input (the tokens between the delimiters).
    pub tokens: TokenStream,
    /// The call site the proc macro computes from the same tokens.
    pub site: CallSite,
}

impl Invocation {
    /// Runs the macro's expansion (the same function the proc macro calls), which compiles the
    /// module or finds it in the build cache; the tokens it produced.
    pub fn expand(&self) -> TokenStream {
        let tokens = self.tokens.clone();
        let site = self.site.clone();
        match self.which {
            Macro::CudaKernel => crate::expand::expand(tokens, site),
            Macro::Elementwise => crate::elementwise::expand(tokens, site, &key_lines(&self.tokens)),
            Macro::Reduction => crate::reduction::expand(tokens, site, &literal_lines(&self.tokens)),
            Macro::Fuse => crate::fuse::expand(tokens, site, &literal_lines(&self.tokens)),
        }
    }
}

/// The Rust line of each top-level `key = "literal"` (what `elementwise_kernel!` reads).
fn key_lines(tokens: &TokenStream) -> HashMap<String, usize> {
    let toks: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let mut lines = HashMap::new();
    for w in toks.windows(3) {
        if let (TokenTree::Ident(k), TokenTree::Punct(p), TokenTree::Literal(l)) = (&w[0], &w[1], &w[2]) {
            if p.as_char() == '=' {
                lines.insert(k.to_string(), l.span().start().line);
            }
        }
    }
    lines
}

/// The Rust line of every literal, nested ones too (what `reduction_kernel!` and `fuse!` read).
fn literal_lines(tokens: &TokenStream) -> Vec<(String, usize)> {
    fn walk(tokens: TokenStream, out: &mut Vec<(String, usize)>) {
        for t in tokens {
            match t {
                TokenTree::Literal(l) => out.push((l.to_string(), l.span().start().line)),
                TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(tokens.clone(), &mut out);
    out
}

/// A Rust source file to scan.
#[derive(Debug, Clone)]
pub struct File {
    /// Where it is.
    pub path: PathBuf,
    /// The name rustc gives the proc macro for it ([`rustc_name`]).
    pub rustc_name: String,
    /// Its text.
    pub text: String,
}

impl File {
    /// Its kernel macro invocations ([`scan_text`]), tokenized on this thread.
    pub fn invocations(&self) -> Result<Vec<Invocation>, String> {
        scan_text(&self.text, &self.path, &self.rustc_name)
    }
}

/// Every kernel macro invocation in the Rust source `text` of the file `path`, which rustc names
/// `rustc_name` (the name `Span::file` gives the proc macro). Invocations inside other macros'
/// input are found too (a `cuda_kernel!` in a `mod` or a function body); one in a
/// `macro_rules!` body is found with its `$` placeholders and fails to expand, which costs
/// nothing but its try. `Err` when the text is not Rust tokens (unbalanced delimiters).
pub fn scan_text(text: &str, path: &Path, rustc_name: &str) -> Result<Vec<Invocation>, String> {
    let tokens: TokenStream = text.parse().map_err(|e| format!("{}: {e}", path.display()))?;
    let dir = path.parent().map(Path::to_path_buf);
    let mut out = Vec::new();
    find(tokens, &mut |which, input: TokenStream| {
        let line = input.clone().into_iter().next().map_or(0, |t| t.span().start().line);
        out.push(Invocation {
            which,
            tokens: input,
            site: CallSite { file: rustc_name.to_string(), line, dir: dir.clone() },
        });
    });
    Ok(out)
}

/// Calls `found` with each `NAME ! (...)` (or `[...]`, `{...}`) whose NAME is a kernel macro.
fn find(tokens: TokenStream, found: &mut impl FnMut(Macro, TokenStream)) {
    let toks: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, t) in toks.iter().enumerate() {
        if let TokenTree::Group(g) = t {
            let invoked = match (i.checked_sub(2).map(|j| &toks[j]), i.checked_sub(1).map(|j| &toks[j])) {
                (Some(TokenTree::Ident(name)), Some(TokenTree::Punct(bang))) if bang.as_char() == '!' => {
                    Macro::named(&name.to_string())
                }
                _ => None,
            };
            match invoked {
                Some(which) if g.delimiter() != Delimiter::None => found(which, g.stream()),
                _ => find(g.stream(), found),
            }
        }
    }
}

/// The `.rs` files under `dir` (recursively; `target` folders and hidden ones skipped), sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(&p, out),
                Ok(t) if t.is_file() && name.ends_with(".rs") => out.push(p),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// The name rustc gives the proc macro for the file `file` of the package at `manifest_dir`
/// (`Span::file`): cargo runs rustc in the workspace root and passes a package's sources relative
/// to it when the package is a path package under the root, absolute otherwise (a registry or git
/// dependency). The workspace root is the nearest folder at or above the package whose
/// `Cargo.toml` has a `[workspace]` table; the package's own folder when there is none.
pub fn rustc_name(file: &Path, manifest_dir: &Path) -> String {
    let text = |p: &Path| p.to_string_lossy().into_owned();
    // A published package carries `Cargo.toml.orig`; git dependencies live in cargo's `git/`.
    let names: Vec<_> = manifest_dir.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let in_cargo_home = names.windows(2).any(|w| w[0] == ".cargo" && (w[1] == "registry" || w[1] == "git"));
    if in_cargo_home || manifest_dir.join("Cargo.toml.orig").is_file() {
        return text(file);
    }
    let root = workspace_root(manifest_dir);
    file.strip_prefix(&root).map_or_else(|_| text(file), text)
}

/// The workspace root of the package at `manifest_dir` (see [`rustc_name`]).
pub fn workspace_root(manifest_dir: &Path) -> PathBuf {
    let has_workspace = |d: &Path| {
        std::fs::read_to_string(d.join("Cargo.toml"))
            .is_ok_and(|t| t.lines().any(|l| l.trim_start().starts_with("[workspace]")))
    };
    manifest_dir.ancestors().find(|d| has_workspace(d)).unwrap_or(manifest_dir).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_invocations_with_their_lines() {
        let text = r###"use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    extern "C" __global__ void a(float* x) {}
"#);

fn f() {
    cuda_embed::elementwise_kernel!(
        scale,
        inputs = "T x",
        outputs = "T y",
        operation = "y = x * 2",
        types = ["float"],
    );
}
mod m { reduction_kernel! { s, inputs = "T x", map = "x", reduce = "a + b", identity = "0", outputs = "T y", types = ["float"] } }
println!("cuda_kernel!(not one)");
"###;
        let found = scan_text(text, Path::new("/p/src/lib.rs"), "src/lib.rs").unwrap();
        let which: Vec<_> = found.iter().map(|i| (i.which, i.site.line)).collect();
        assert_eq!(which, [(Macro::CudaKernel, 3), (Macro::Elementwise, 9), (Macro::Reduction, 16)]);
        assert_eq!(found[0].site.file, "src/lib.rs");
        assert_eq!(found[0].site.dir.as_deref(), Some(Path::new("/p/src")));
        let lines = key_lines(&found[1].tokens);
        assert_eq!((lines["inputs"], lines["operation"]), (10, 12));
        assert!(literal_lines(&found[2].tokens).iter().any(|(t, l)| t == "\"a + b\"" && *l == 16));
        assert!(scan_text("fn f() { (", Path::new("x.rs"), "x.rs").is_err());
    }

    #[test]
    fn file_names_as_rustc_gives_them() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("Cargo.toml"), "[workspace]\nmembers = [\"a\"]\n").unwrap();
        std::fs::create_dir_all(ws.path().join("a/src")).unwrap();
        std::fs::write(ws.path().join("a/Cargo.toml"), "[package]\nname = \"a\"\n").unwrap();
        let file = ws.path().join("a/src/main.rs");
        assert_eq!(rustc_name(&file, &ws.path().join("a")), "a/src/main.rs");
        let reg = Path::new("/home/u/.cargo/registry/src/index/x-1.0");
        assert_eq!(rustc_name(&reg.join("src/lib.rs"), reg), "/home/u/.cargo/registry/src/index/x-1.0/src/lib.rs");
    }
}
