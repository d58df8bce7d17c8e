//! Corpus acceptance: the kernel signatures of real projects (llm.c, cuda-samples, candle, CuPy,
//! flashinfer), extracted by `tests/corpus/extract.py` into a folder of `*.txt` files, must parse
//! and map without a compiler probe.
//!
//! The extracted signatures are other projects' text, so they are not kept in this repository:
//! only the extractor, this tool and the figures (BENCHMARKS.md) are. To measure, check the
//! projects out in a temporary folder and run
//! `cargo run -p cuda-embed-macros-core --example corpus -- ggml=/tmp/corpus/ggml lectures=/tmp/corpus/lectures ...`
//! (each `NAME=CHECKOUT` is extracted into a temporary folder), or extract them yourself into
//! `DIR/<name>.txt` and run `... --example corpus -- DIR` (or set `CUDA_EMBED_CORPUS_DIR`).
//! The full-pipeline measurement (nvcc, probes, generated launchers) is the `corpus_macro` example.
//! It prints the table and exits non-zero when acceptance falls below the bars at the end.
//!
//! Each entry starts with a `//@ <repo> <path>:<line>` line and holds one `__global__` declaration
//! (signature only) with the `#define`/`typedef`/`using` lines of its file that it names. An entry
//! counts as accepted when `signature::parse` succeeds and every parameter of the (non-template)
//! kernel maps with `types::map(.., None)`, where a by-value name the tables do not know (which
//! maps to a Rust type of that name) counts only when the entry defines a struct, class, union or
//! enum of that name (else nothing would declare the Rust type the launcher names). Template kernels are counted apart: they need an
//! instantiation list and are not generated.
//!
//! To extract a corpus file from a checkout (the commit is recorded in the file's first line):
//! `python3 tests/corpus/extract.py $CUDA_EMBED_CORPUS_DIR/llm.c.txt karpathy/llm.c /tmp/llm.c <commit>`.
//! Kernels that candle generates with function-like macros (`UNARY_OP(float, uneg_f32, -x)`) are
//! expanded by the extractor, as the preprocessor would; the lexer expands object-like macros only.
//!
//! It prints the per-repo table and the top rejection reasons; `CORPUS_VERBOSE=1` also lists every
//! rejected entry, and
//! `CORPUS_DUMP=1` prints every accepted kernel's mapping (to eyeball for wrong accepts).

use cuda_embed_macros_core::{front::types, signature};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Default)]
struct Tally {
    entries: usize,
    templates: usize,
    kernels: usize,
    accepted: usize,
    no_kernel: usize,
}

struct Entry {
    repo: String,
    location: String,
    text: String,
}

fn entries() -> Vec<Entry> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let checkouts: Vec<&String> = args.iter().filter(|a| a.contains('=')).collect();
    let extracted = tempfile::tempdir().expect("a temporary folder");
    let dir = if !checkouts.is_empty() {
        // `NAME=CHECKOUT`: extract each checkout's signatures into a temporary folder first.
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/extract.py");
        for c in checkouts {
            let (name, path) = c.split_once('=').unwrap();
            let commit = std::process::Command::new("git")
                .args(["-C", path, "rev-parse", "HEAD"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
            let out = extracted.path().join(format!("{name}.txt"));
            let mut cmd = std::process::Command::new("python3");
            cmd.arg(&script).arg(&out).arg(name).arg(path).args(commit);
            let status = cmd.status().expect("python3 runs extract.py");
            assert!(status.success(), "extract.py failed on {path}");
        }
        extracted.path().to_path_buf()
    } else {
        args.first().map(PathBuf::from).or_else(|| std::env::var_os("CUDA_EMBED_CORPUS_DIR").map(PathBuf::from)).expect(
            "usage: corpus NAME=CHECKOUT... | corpus DIR (a folder of corpus files made by tests/corpus/extract.py)",
        )
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the corpus folder {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut cur: Option<Entry> = None;
        for line in text.lines() {
            if let Some(head) = line.strip_prefix("//@ ") {
                out.extend(cur.take());
                let (repo, location) = head.split_once(' ').unwrap_or((head, ""));
                cur = Some(Entry { repo: repo.to_string(), location: location.to_string(), text: String::new() });
            } else if let Some(e) = cur.as_mut() {
                e.text.push_str(line);
                e.text.push('\n');
            }
        }
        out.extend(cur);
    }
    out
}

/// Whether the entry defines a struct/class/union/enum `name` (or an alias of one): without
/// the compiler a by-value parameter maps to a Rust type of its name, which only counts as
/// accepted when such a type exists to be generated or written.
fn defines_record(parsed: &signature::Parsed, name: &str) -> bool {
    parsed.records.contains(name)
        || parsed.aliases.get(name).is_some_and(|body| body.iter().any(|t| parsed.records.contains(&t.text)))
}

/// Groups rejection messages: the parameter name is dropped so equal causes add up.
fn reason_key(err: &str, param: &str) -> String {
    let msg = err.replace(&format!("parameter `{param}` "), "parameter ");
    msg.split("; supported:").next().unwrap_or(&msg).to_string()
}

fn main() {
    let verbose = std::env::var_os("CORPUS_VERBOSE").is_some();
    let dump = std::env::var_os("CORPUS_DUMP").is_some();
    let mut per_repo: BTreeMap<String, Tally> = BTreeMap::new();
    let mut reasons: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut reject = |reason: String, where_: String| {
        let r = reasons.entry(reason).or_insert((0, where_));
        r.0 += 1;
    };
    for e in entries() {
        let tally = per_repo.entry(e.repo.clone()).or_default();
        tally.entries += 1;
        let where_ = format!("{} {}", e.repo, e.location);
        let parsed = match signature::parse(&e.text) {
            Ok(p) => p,
            Err(err) => {
                tally.kernels += 1;
                if verbose {
                    println!("REJECT {where_}: parse error: {}\n{}", err.0, e.text);
                }
                reject(format!("parse error: {}", err.0.split(':').next_back().unwrap_or("").trim()), where_);
                continue;
            }
        };
        tally.templates += parsed.templates.len();
        if parsed.kernels.is_empty() && parsed.templates.is_empty() {
            tally.no_kernel += 1;
            if verbose {
                println!("NO KERNEL {where_}\n{}", e.text);
            }
            continue;
        }
        for k in &parsed.kernels {
            tally.kernels += 1;
            let mut failure = None;
            let mut described = Vec::new();
            for p in &k.params {
                match types::map(p, &parsed, None) {
                    Ok(types::Mapped::User { name, .. }) if !defines_record(&parsed, &name) => {
                        failure = Some(format!(
                            "parameter type `{}` is neither known nor a struct defined in the entry",
                            p.base
                        ));
                        break;
                    }
                    Ok(m) => described.push(format!(
                        "{} [{}{}] => {}",
                        p.name,
                        p.base,
                        "*".repeat(p.pointer_depth),
                        m.describe()
                    )),
                    Err(err) => {
                        failure = Some(reason_key(&err, &p.name));
                        break;
                    }
                }
            }
            match failure {
                None => {
                    tally.accepted += 1;
                    if dump {
                        println!(
                            "OK\t{where_}\t{}{}\t{}",
                            if k.extern_c { "extern \"C\" " } else { "" },
                            k.qualified_name(),
                            described.join(" | ")
                        );
                    }
                }
                Some(reason) => {
                    if verbose {
                        println!("REJECT {where_}: {reason}\n{}", e.text);
                    }
                    reject(reason, where_.clone());
                }
            }
        }
    }

    println!(
        "\n{:<28} {:>7} {:>9} {:>8} {:>8} {:>8}",
        "repository", "entries", "templates", "kernels", "accepted", "percent"
    );
    let mut total = Tally::default();
    for (repo, t) in &per_repo {
        println!(
            "{:<28} {:>7} {:>9} {:>8} {:>8} {:>7.1}%",
            repo,
            t.entries,
            t.templates,
            t.kernels,
            t.accepted,
            100.0 * t.accepted as f64 / t.kernels.max(1) as f64
        );
        total.entries += t.entries;
        total.templates += t.templates;
        total.kernels += t.kernels;
        total.accepted += t.accepted;
        total.no_kernel += t.no_kernel;
    }
    let pct = 100.0 * total.accepted as f64 / total.kernels.max(1) as f64;
    println!(
        "{:<28} {:>7} {:>9} {:>8} {:>8} {:>7.1}%",
        "total", total.entries, total.templates, total.kernels, total.accepted, pct
    );
    if total.no_kernel > 0 {
        println!("entries where no kernel was found: {}", total.no_kernel);
    }
    let mut top: Vec<_> = reasons.into_iter().collect();
    top.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
    println!("\ntop rejection reasons ({} kernels rejected):", total.kernels - total.accepted);
    for (reason, (n, example)) in top.iter().take(20) {
        println!("{n:>5}  {reason}   (e.g. {example})");
    }

    assert!(total.kernels >= 300, "corpus too small: {} non-template kernels", total.kernels);
    for (repo, t) in &per_repo {
        let p = 100.0 * t.accepted as f64 / t.kernels.max(1) as f64;
        assert!(t.kernels < 50 || p >= 85.0, "{repo}: only {p:.1}% of {} kernels accepted", t.kernels);
    }
    assert!(pct >= 90.0, "only {pct:.1}% of {} corpus kernels accepted", total.kernels);
    assert_eq!(
        total.no_kernel, 0,
        "corpus entries without a kernel (extraction or parser bug); run with CORPUS_VERBOSE=1"
    );
}
