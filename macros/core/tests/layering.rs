//! The layering of the two large crates (issue 34), read from the `crate::` paths of their source
//! files: no cycle between the top-level modules of `macros/core/src`, and in `runtime/src` none
//! beyond the imports listed as not yet untangled (the list may only shrink). A lower stage that
//! imports a higher one is the sign that data belongs further down (in the IR); a failure names
//! the cycle and the files and lines that close it.
//!
//! Run on its own: `cargo test -p cuda-embed-macros-core --test layering`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file of `src` belongs to (`check` for `src/check/types.rs`, `expand`
/// for `src/expand.rs`); `None` for the crate root.
fn top(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib").then_some(name)
}

/// Every `crate::NAME` a file names outside comments (`use crate::a::b`, `crate::a::f()`), as
/// the set of NAMEs, with the lines that name them.
fn uses(text: &str) -> BTreeMap<String, Vec<usize>> {
    let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let before = rest[..i].chars().last();
            let tail = &rest[i + "crate::".len()..];
            let name: String = tail.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            // `$crate::` (macro_rules) is the same crate; a longer identifier ending in `crate` is not.
            let len = name.len();
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') && !name.is_empty() {
                out.entry(name).or_default().push(n + 1);
            }
            rest = &tail[len..];
        }
    }
    out
}

/// The module graph of the crate at `src`: edges `a -> b` with the file:line that makes each.
fn graph(src: &Path) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut all = Vec::new();
    files(src, &mut all);
    let modules: BTreeSet<String> = all.iter().filter_map(|f| top(src, f)).collect();
    let mut g: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for f in &all {
        let Some(from) = top(src, f) else { continue };
        let text = std::fs::read_to_string(f).unwrap();
        for (to, lines) in uses(&text) {
            if to != from && modules.contains(&to) {
                let at = lines.iter().map(|l| format!("{}:{l}", f.strip_prefix(src).unwrap().display()));
                g.entry(from.clone()).or_default().entry(to).or_default().extend(at);
            }
        }
    }
    g
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn cycles(g: &BTreeMap<String, BTreeMap<String, Vec<String>>>) -> Vec<Vec<String>> {
    struct State<'a> {
        g: &'a BTreeMap<String, BTreeMap<String, Vec<String>>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        if let Some(edges) = s.g.get(v) {
            for w in edges.keys() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if s.on.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The report of one cycle: each edge inside it, with the lines that make it.
fn describe(g: &BTreeMap<String, BTreeMap<String, Vec<String>>>, comp: &[String]) -> String {
    let mut text = format!("cycle among {}:\n", comp.join(", "));
    for a in comp {
        for (b, at) in g.get(a).into_iter().flatten() {
            if comp.contains(b) {
                text.push_str(&format!("  {a} -> {b}: {}\n", at.join(", ")));
            }
        }
    }
    text
}

/// Checks the crate at `crate_dir`: every import between two modules of one cycle must be listed
/// in `known` (the imports not yet untangled), and every entry of `known` must still be one (the
/// list only shrinks). With `known` empty: no cycle at all.
fn check(crate_dir: &str, known: &[(&str, &str)]) {
    // The crate's directory at run time (a packed GPU run sets it), else where it was built.
    let root =
        std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
    let src = root.join(crate_dir).join("src");
    let g = graph(&src);
    let found = cycles(&g);
    let mut inside = BTreeSet::new();
    for comp in &found {
        for a in comp {
            for b in g.get(a).into_iter().flat_map(|e| e.keys()) {
                if comp.contains(b) {
                    inside.insert((a.clone(), b.clone()));
                }
            }
        }
    }
    let known: BTreeSet<(String, String)> = known.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    let new: Vec<_> = inside.difference(&known).collect();
    let report: Vec<String> = found.iter().map(|c| describe(&g, c)).collect();
    assert!(
        new.is_empty(),
        "{}: new imports inside an import cycle {new:?} (move the shared data down a stage instead):\n{}",
        src.display(),
        report.join("\n")
    );
    let stale: Vec<_> = known.difference(&inside).collect();
    assert!(stale.is_empty(), "{}: untangled, remove from the known list: {stale:?}", src.display());
}

#[test]
fn the_macro_core_has_no_import_cycle() {
    check(".", &[]);
}

/// The runtime's imports inside an import cycle not yet untangled (issue 34): none left. From the
/// bottom: `module` (loads images through the `Build` trait the crate root implements with
/// `program` and `link`; holds `KernelRef`), the argument vocabulary `args` (launch and node side,
/// the N-D layouts), `bind` (the checked path, its binding stream under capture, the argument
/// impls; the N-D views reach it through `bind::ViewOperand`), then `launch`, `ndarray` and the
/// other capabilities above them, none of which is imported back. Adding an entry here is adding
/// a cycle: move the shared type down instead.
const RUNTIME_KNOWN: &[(&str, &str)] = &[];

#[test]
fn the_runtime_adds_no_import_cycle() {
    check("../../runtime", RUNTIME_KNOWN);
}

#[test]
fn the_reader_finds_cycles() {
    let g = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string(), vec!["x.rs:1".into()]);
        }
        g
    };
    assert!(cycles(&g(&[("a", "b"), ("b", "c")])).is_empty());
    assert_eq!(cycles(&g(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])), vec![vec!["a", "b", "c"]]);
    let u = uses(
        "use crate::front::ir;\n// crate::gen in a comment\nlet x = $crate::y; crate::oracle::nvcc::find(); mycrate::z",
    );
    assert_eq!(u.keys().collect::<Vec<_>>(), ["front", "oracle", "y"]);
}
