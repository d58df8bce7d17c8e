//! Full-pipeline corpus measurement (opt-in; needs nvcc): every `.cu` file of the checkouts given
//! by path goes through `cuda_kernel!(file = ...)` exactly as the macro runs it (front end, nvcc
//! with the type probes, checker, code generator), and the tool counts, per file and per
//! repository, the non-template kernels in the file's compiled PTX against the launchers really
//! generated for them.
//!
//! ```sh
//! scripts/with-cuda cargo run --release -p cuda-embed-macros-core --example corpus_macro -- \
//!     ggml=/tmp/corpus/ggml:include:src:src/ggml-cuda \
//!     tiny-cuda-nn=/tmp/corpus/tiny-cuda-nn:include  lectures=/tmp/corpus/lectures  ...
//! ```
//!
//! Each argument is `NAME=DIR` with optional `:INCLUDE_DIR`s relative to `DIR` (passed as the
//! macro's `include_dirs`; the file's own folder is searched first, as the macro does). Options:
//! `--define NAME[=VALUE]` defines a macro for every file (the macro's `defines`, nvcc's `-D`),
//! `--skip TEXT` leaves out files whose path (relative to `DIR`) contains `TEXT` (repeatable),
//! `--only TEXT` keeps only files whose path contains one of the `TEXT`s given (repeatable),
//! `--front-only` runs only the front end (no nvcc) and lists the files it refuses,
//! `--every K` takes every K-th file in path order (a deterministic subset when nvcc is slow),
//! `--max-files N` takes the first `N` files of each repository in path order, `--arch N` the
//! architecture (default 80; an arch-specific one too, `90a`), `--std c++20` the C++ standard
//! (the macro's `std`), `--option FLAG` a compiler flag for every file (the macro's `options`, as
//! nvcc spells it: `--expt-relaxed-constexpr`, `--extended-lambda`; repeatable), `--jobs N` measures `N` files at once (default: the number of
//! cores), `--shard I/N` takes every `N`-th of the selected files starting at the `I`-th (so `N`
//! runs with `I = 0..N` cover the selection once; add their tables), `--verbose` prints every file. Compiles go through the macro's
//! build cache (`CUDA_EMBED_CACHE_DIR`), so a second run only recompiles what changed.
//!
//! - A file is **accepted** when nvcc alone compiles it (to PTX, with the include directories
//!   given): files needing third-party headers that are not there are reported and left out of
//!   the denominator.
//! - **Kernels in PTX**: the `.entry` symbols of that PTX that are not template instances
//!   (`ptx::is_template_symbol`); kernels from the file's user headers are among them.
//! - A kernel **has a launcher** when the macro succeeds on the file as a whole (one failing
//!   kernel fails the macro, so it costs the file's other launchers too), the checked kernel is
//!   bound to that very PTX symbol, the generated code holds a module whose `NAME` is the kernel's
//!   and whose `launch` takes `stream`, `config` and one parameter per `.param` of the entry, and
//!   every struct passed by value has a Rust twin in the generated code (a launcher naming a type
//!   that does not exist is no launcher).
//!
//! - **Template instances in PTX**: the other `.entry` symbols; **with launchers**: those a
//!   checked instance of the macro is bound to (instances the source instantiates itself become
//!   launchers without `instances = [...]`).
//!
//! It prints, for each kernel without a launcher, why (the macro's error), then the table.

use cuda_embed_macros_core::front::input::Input;
use cuda_embed_macros_core::front::ir::Module;
use cuda_embed_macros_core::front::types::Mapped;
use cuda_embed_macros_core::oracle::nvcc::{self, Request};
use cuda_embed_macros_core::{check, front, gen, oracle, oracle::ptx, CallSite};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

struct Repo {
    name: String,
    dir: PathBuf,
    includes: Vec<String>,
}

#[derive(Default, Clone, Copy)]
struct Tally {
    tried: usize,
    accepted: usize,
    kernels: usize,
    launchers: usize,
    templates: usize,
    /// Template instances in the PTX that a launcher of the module is bound to (those the source
    /// instantiates itself, or `instances` lists).
    instances: usize,
}

/// One generated kernel module: its `NAME`, the types of its `launch` parameters.
struct Launcher {
    name: String,
    params: Vec<String>,
}

fn main() {
    let mut repos = Vec::new();
    let (mut skip, mut max_files, mut arch, mut verbose) = (Vec::<String>::new(), usize::MAX, "80".to_string(), false);
    let (mut std_flag, mut flags) = (None::<String>, Vec::<String>::new());
    let mut every = 1usize;
    let mut only = Vec::<String>::new();
    let mut front_only = false;
    let mut jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut shard = (0usize, 1usize);
    let mut defines = Vec::<String>::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--skip" => skip.push(args.next().expect("--skip TEXT")),
            "--only" => only.push(args.next().expect("--only TEXT")),
            "--define" => defines.push(args.next().expect("--define NAME[=VALUE]")),
            "--every" => every = args.next().and_then(|n| n.parse().ok()).filter(|&n| n > 0).expect("--every K"),
            "--max-files" => max_files = args.next().and_then(|n| n.parse().ok()).expect("--max-files N"),
            "--arch" => arch = args.next().filter(|a| nvcc::Arch::parse(a).is_ok()).expect("--arch N (80, 90a, ...)"),
            "--std" => std_flag = Some(args.next().expect("--std c++17")),
            "--option" => flags.push(args.next().expect("--option FLAG")),
            "--verbose" => verbose = true,
            "--front-only" => front_only = true,
            "--jobs" => jobs = args.next().and_then(|n| n.parse().ok()).filter(|&n| n > 0).expect("--jobs N"),
            "--shard" => {
                let spec = args.next().unwrap_or_default();
                shard = spec
                    .split_once('/')
                    .and_then(|(i, n)| Some((i.parse().ok()?, n.parse().ok()?)))
                    .filter(|&(i, n): &(usize, usize)| i < n)
                    .expect("--shard I/N with I < N");
            }
            _ => {
                let (name, rest) = a.split_once('=').expect("arguments are NAME=DIR[:INCLUDE_DIR...]");
                let mut parts = rest.split(':');
                let dir = PathBuf::from(parts.next().unwrap()).canonicalize().expect("DIR must exist");
                repos.push(Repo { name: name.into(), dir, includes: parts.map(String::from).collect() });
            }
        }
    }
    assert!(!repos.is_empty(), "usage: corpus_macro [--skip TEXT] [--max-files N] NAME=DIR[:INCLUDE_DIR...] ...");
    // `--front-only` needs no compiler.
    let nvcc = (!front_only).then(|| match nvcc::find_nvcc() {
        Ok(Ok(n)) => n,
        other => panic!("the full-pipeline corpus needs nvcc (run under scripts/with-cuda): {:?}", other.err()),
    });
    std::env::set_var("CUDA_EMBED_ARCHS", &arch);
    let archs = vec![nvcc::Arch::parse(&arch).unwrap()];
    let mut options: Vec<String> = defines.iter().map(|d| format!("-D{d}")).collect();
    options.extend(std_flag.iter().map(|s| format!("-std={s}")));
    options.extend(flags.iter().cloned());
    // The macro's `std` and `options` for every file (see `lower`).
    let mut extra = std_flag.map(|s| format!(", std = {s:?}")).unwrap_or_default();
    if !flags.is_empty() {
        let list: Vec<String> = flags.iter().map(|f| format!("{f:?}")).collect();
        extra.push_str(&format!(", options = [{}]", list.join(", ")));
    }
    MACRO_OPTIONS.set(extra).expect("set once");
    let mut table: BTreeMap<String, Tally> = BTreeMap::new();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut not_accepted: Vec<String> = Vec::new();
    for repo in &repos {
        // The macro resolves `file` and `include_dirs` against the crate root.
        std::env::set_var("CARGO_MANIFEST_DIR", &repo.dir);
        let mut files = Vec::new();
        walk(&repo.dir, &mut files);
        files.sort();
        let files: Vec<String> = files
            .iter()
            .filter_map(|f| f.strip_prefix(&repo.dir).ok().map(|r| r.display().to_string()))
            .filter(|r| !skip.iter().any(|s| r.contains(s.as_str())))
            .filter(|r| only.is_empty() || only.iter().any(|o| r.contains(o.as_str())))
            .enumerate()
            .filter(|(i, _)| i % every == 0)
            .map(|(_, r)| r)
            .take(max_files)
            .enumerate()
            .filter(|(i, _)| i % shard.1 == shard.0)
            .map(|(_, r)| r)
            .collect();
        let Some(nvcc) = &nvcc else {
            front_errors(repo, &files, &defines);
            continue;
        };
        let mut tally = Tally::default();
        // Files are measured `jobs` at a time (each runs its own nvcc), then reported in path order.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut results: Vec<(usize, FileResult)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..jobs.min(files.len()).max(1))
                .map(|_| {
                    s.spawn(|| {
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(rel) = files.get(i) else { break };
                            let r = measure(repo, rel, nvcc, &options, &archs, &defines);
                            if verbose {
                                // As each file finishes, so a run cut short still shows what it measured.
                                match &r {
                                    FileResult::NotAccepted(_) => eprintln!("done {} {rel}: not accepted", repo.name),
                                    FileResult::Accepted { kernels, missing, .. } => {
                                        eprintln!("done {} {rel}: {}/{kernels}", repo.name, kernels - missing.len());
                                        for (symbol, why) in missing {
                                            eprintln!("  missing {symbol}: {}", cut(why, 300));
                                        }
                                    }
                                }
                            }
                            out.push((i, r));
                        }
                        out
                    })
                })
                .collect();
            workers.into_iter().flat_map(|w| w.join().expect("a corpus worker panicked")).collect()
        });
        results.sort_by_key(|r| r.0);
        for (i, r) in results {
            let rel = &files[i];
            tally.tried += 1;
            let (kernels, templates, instances, missing) = match r {
                FileResult::NotAccepted(why) => {
                    not_accepted.push(format!("{} {rel}: {}", repo.name, cut(&why, 160)));
                    continue;
                }
                FileResult::Accepted { kernels, templates, instances, missing } => {
                    (kernels, templates, instances, missing)
                }
            };
            tally.accepted += 1;
            tally.templates += templates;
            tally.instances += instances;
            tally.kernels += kernels;
            for (symbol, why) in &missing {
                println!("MISSING {} {rel} {symbol}: {}", repo.name, cut(why, 300));
                *reasons.entry(reason_key(why)).or_default() += 1;
            }
            let got = kernels - missing.len();
            tally.launchers += got;
            if verbose {
                println!("FILE {} {rel}: {got}/{kernels} launchers", repo.name);
            }
        }
        table.insert(repo.name.clone(), tally);
    }
    if front_only {
        return;
    }
    println!("\nfiles nvcc does not compile alone (not accepted, left out of the denominator):");
    for f in &not_accepted {
        println!("  {f}");
    }
    println!("\nwhy kernels got no launcher:");
    let mut top: Vec<_> = reasons.into_iter().collect();
    top.sort_by_key(|r| std::cmp::Reverse(r.1));
    for (r, n) in top.iter().take(25) {
        println!("{n:>5}  {r}");
    }
    println!(
        "\n| repository | files tried | files accepted | kernels in PTX | launchers | % | template instances in PTX \
         | with launchers |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut total = Tally::default();
    for (name, t) in &table {
        row(name, t);
        total.tried += t.tried;
        total.accepted += t.accepted;
        total.kernels += t.kernels;
        total.launchers += t.launchers;
        total.templates += t.templates;
        total.instances += t.instances;
    }
    row("total", &total);
}

/// `--front-only`: runs only the macro's front end (no compiler) on each file and prints the
/// files it refuses, with why; a quick check of header and signature reading over a corpus.
fn front_errors(repo: &Repo, files: &[String], defines: &[String]) {
    let mut refused = 0;
    for rel in files {
        if let Err(why) = lower(rel, &repo.includes, defines) {
            refused += 1;
            println!("FRONT {} {rel}: {}", repo.name, cut(&why, 300));
        }
    }
    println!("{}: the front end refused {refused} of {} files", repo.name, files.len());
}

/// What one file gave: not accepted (nvcc alone fails, with its first error), or its non-template
/// kernel and template-instance counts and the kernels without a launcher (PTX symbol, why).
enum FileResult {
    NotAccepted(String),
    Accepted { kernels: usize, templates: usize, instances: usize, missing: Vec<(String, String)> },
}

/// Measures one file of `repo` (see the module docs).
fn measure(
    repo: &Repo,
    rel: &str,
    nvcc: &nvcc::Nvcc,
    options: &[String],
    archs: &[nvcc::Arch],
    defines: &[String],
) -> FileResult {
    let path = repo.dir.join(rel);
    let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
    let mut dirs: Vec<PathBuf> = path.parent().map(Path::to_path_buf).into_iter().collect();
    dirs.extend(repo.includes.iter().map(|i| repo.dir.join(i)));
    // The macro's own compile gives the PTX (the probes add no entries); nvcc alone runs only when
    // the macro fails before or in its compile, to tell an unaccepted file.
    let (compiled_entries, outcome) = pipeline(rel, &repo.includes, defines, nvcc);
    let entries = match compiled_entries {
        Some(entries) => entries,
        None => match nvcc::compile(
            nvcc,
            &Request {
                source: &text,
                line_directive: &format!("#line 1 \"{rel}\""),
                options,
                archs,
                include_dirs: &dirs,
            },
        ) {
            Ok(out) => ptx::entries(&out.ptx),
            Err(log) => return FileResult::NotAccepted(first_error(&log)),
        },
    };
    let (templates, kernels): (Vec<_>, Vec<_>) = entries.iter().partition(|e| ptx::is_template_symbol(&e.symbol));
    let missing = kernels
        .iter()
        .filter_map(|e| {
            let why = match &outcome {
                Err(why) => Some(why.clone()),
                Ok((bound, launchers, twins)) => launcher_for(e, bound, launchers, twins).err(),
            };
            why.map(|w| (e.symbol.clone(), w))
        })
        .collect();
    let instances = match &outcome {
        Ok((bound, _, _)) => templates.iter().filter(|e| bound.iter().any(|b| b.0 == e.symbol)).count(),
        Err(_) => 0,
    };
    FileResult::Accepted { kernels: kernels.len(), templates: templates.len(), instances, missing }
}

fn row(name: &str, t: &Tally) {
    println!(
        "| {name} | {} | {} | {} | {} | {:.1}% | {} | {} |",
        t.tried,
        t.accepted,
        t.kernels,
        t.launchers,
        100.0 * t.launchers as f64 / t.kernels.max(1) as f64,
        t.templates,
        t.instances
    );
}

/// What the macro generated for one file: each checked kernel's PTX symbol and display name, the
/// generated launchers, and the struct names with a generated Rust twin.
type Outcome = Result<(Vec<(String, String, Vec<Mapped>)>, Vec<Launcher>, Vec<String>), String>;

/// Runs the macro's pipeline on `file = rel` as `cuda_kernel!` does: the PTX entries of its
/// compile (`None` when it did not get that far) and what it generated.
fn pipeline(
    rel: &str,
    includes: &[String],
    defines: &[String],
    nvcc: &nvcc::Nvcc,
) -> (Option<Vec<ptx::Entry>>, Outcome) {
    let mut entries = None;
    let outcome = generate(rel, includes, defines, nvcc, &mut entries);
    (entries, outcome)
}

/// The macro's `std = ...` and `options = [...]` from `--std` and `--option`, as macro input text.
static MACRO_OPTIONS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The macro's front end on `file = rel` with these include dirs and defines, as `cuda_kernel!`
/// runs it from `src/lib.rs` of the checkout.
fn lower(rel: &str, includes: &[String], defines: &[String]) -> Result<Module, String> {
    let dirs: Vec<String> = includes.iter().map(|d| format!("{d:?}")).collect();
    let defines: Vec<String> = defines.iter().map(|d| format!("{d:?}")).collect();
    let mut tokens = format!("file = {rel:?}, include_dirs = [{}]", dirs.join(", "));
    if !defines.is_empty() {
        tokens.push_str(&format!(", defines = [{}]", defines.join(", ")));
    }
    tokens.push_str(MACRO_OPTIONS.get().map_or("", String::as_str));
    let input: Input = syn::parse_str(&tokens).map_err(|e| format!("macro input: {e}"))?;
    let site = CallSite { file: "src/lib.rs".into(), line: 1, dir: None };
    front::lower(&input, &site).map_err(|f| format!("front end: {}", f.error))
}

fn generate(
    rel: &str,
    includes: &[String],
    defines: &[String],
    nvcc: &nvcc::Nvcc,
    entries: &mut Option<Vec<ptx::Entry>>,
) -> Outcome {
    let module = lower(rel, includes, defines)?;
    let compiled =
        oracle::consult(&oracle::Nvcc(nvcc.clone()), &module).map_err(|e| format!("compile: {}", first_error(&e)))?;
    *entries = Some(compiled.entries.clone());
    let checked = check::check(&module, Some(&compiled))
        .map_err(|e| e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>().join(" | "))?;
    let tokens =
        gen::generate(&module, &checked, &compiled.image, &compiled.deps, &cuda_embed_macros_core::tune::gen::items);
    let file: syn::File = syn::parse2(tokens).map_err(|e| format!("generated code does not parse: {e}"))?;
    let mut launchers = Vec::new();
    let mut twins = Vec::new();
    collect(&file.items, &mut launchers, &mut twins);
    let bound = checked
        .kernels
        .iter()
        .filter_map(|k| Some((k.symbol.clone()?, k.unit.display.clone(), k.params.clone())))
        .collect();
    Ok((bound, launchers, twins))
}

/// Whether PTX entry `e` got a launcher (see the module docs), or why not.
fn launcher_for(
    e: &ptx::Entry,
    bound: &[(String, String, Vec<Mapped>)],
    launchers: &[Launcher],
    twins: &[String],
) -> Result<(), String> {
    let (_, display, params) =
        bound.iter().find(|b| b.0 == e.symbol).ok_or("no kernel of the source is bound to this PTX entry")?;
    let l = launchers.iter().find(|l| l.name == *display).ok_or(format!("no generated module for `{display}`"))?;
    if l.params.len() != e.params.len() + 2 {
        return Err(format!("`{display}`: launch takes {} parameters, the entry {}", l.params.len(), e.params.len()));
    }
    for m in params {
        if let Mapped::User { name, .. } = m {
            if !twins.contains(name) {
                return Err(format!(
                    "`{display}`: struct `{name}` has no Rust twin (user code would have to write it)"
                ));
            }
        }
    }
    Ok(())
}

/// Every module holding `const NAME` and `fn launch`, and every struct, in generated items.
fn collect(items: &[syn::Item], launchers: &mut Vec<Launcher>, twins: &mut Vec<String>) {
    let mut name = None;
    let mut params = None;
    for item in items {
        match item {
            syn::Item::Mod(m) => collect(m.content.as_ref().map_or(&[][..], |c| &c.1), launchers, twins),
            syn::Item::Struct(s) => twins.push(s.ident.to_string()),
            syn::Item::Const(c) if c.ident == "NAME" => {
                if let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &*c.expr {
                    name = Some(s.value());
                }
            }
            syn::Item::Fn(f) if f.sig.ident == "launch" => {
                let types = f.sig.inputs.iter().map(|a| quote::ToTokens::to_token_stream(a).to_string());
                params = Some(types.collect());
            }
            _ => {}
        }
    }
    if let (Some(name), Some(params)) = (name, params) {
        launchers.push(Launcher { name, params });
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "cu") {
            out.push(p);
        }
    }
}

fn first_error(log: &str) -> String {
    log.lines().find(|l| l.contains("error")).unwrap_or(log.lines().next().unwrap_or("")).trim().to_string()
}

fn cut(s: &str, n: usize) -> String {
    let s = s.replace('\n', " ");
    if s.chars().count() <= n {
        s
    } else {
        s.chars().take(n).collect::<String>() + "..."
    }
}

/// Groups failure messages: names and numbers dropped so equal causes add up.
fn reason_key(why: &str) -> String {
    let first = why.split(" | ").next().unwrap_or(why);
    let mut out = String::new();
    let mut in_tick = false;
    for c in first.chars() {
        if c == '`' {
            in_tick = !in_tick;
            out.push_str(if in_tick { "`_" } else { "`" });
        } else if !in_tick {
            out.push(if c.is_ascii_digit() { '#' } else { c });
        }
    }
    cut(&out, 140)
}
