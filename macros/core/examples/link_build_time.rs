//! Build time of separate compilation against one plain compile of the same code (needs nvcc, no
//! GPU): `tests/kernels/link/main.cu` + `math.cu` compiled as relocatable units and device-linked
//! (what `link = ["math.cu"]` does, with and without `lto`, the units compiled in parallel), against the two files pasted into one
//! source compiled to a fatbin (what `cuda_kernel!` does without `rdc`). Every run uses an empty
//! build cache, so nvcc always runs. Prints the medians and the ratio. Where libnvrtc and
//! nvJitLink are found too, the same for build-time NVRTC: the units compiled by NVRTC (units and
//! architectures in parallel, as the macro does) and linked by nvJitLink against the one source
//! compiled by NVRTC, and against the same source with its architectures compiled in parallel too
//! (what a plain module does not do); the link with one compile at a time beside them.
//! `LINK_BUILD_TIME_RUNS=N` sets the runs per row (default 5), `LINK_BUILD_TIME_NVRTC_ONLY=1`
//! leaves the nvcc rows out.
//!
//! Run: `scripts/with-cuda cargo run --release -p cuda-embed-macros-core --example link_build_time [KERNELS_DIR]`

use cuda_embed_macros_core::link::nvcc::{compile_units, device_link, unit_args, Mode};
use cuda_embed_macros_core::link::{nvjitlink, nvrtc as link_nvrtc};
use cuda_embed_macros_core::oracle::nvcc::{self as compile, Arch, Request};
use cuda_embed_macros_core::oracle::nvrtc;
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let nvcc = match compile::find_nvcc() {
        Ok(Ok(n)) => n,
        other => {
            eprintln!("link_build_time needs nvcc: {other:?}");
            std::process::exit(2);
        }
    };
    // The kernels' directory: the first argument, else the checkout's tests/kernels/link.
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/kernels/link"));
    // nvcc runs in a temporary directory: the include directory must be absolute.
    let dir = dir.canonicalize().unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).expect("kernel file");
    let (main, math) = (read("main.cu"), read("math.cu"));
    let shared = read("shared.cuh");
    let one = format!(
        "{shared}\n{}\n{}",
        math.replace("#include \"shared.cuh\"", ""),
        main.replace("#include \"shared.cuh\"", "")
    );
    let archs: Vec<Arch> = compile::DEFAULT_ARCHS.iter().map(|a| Arch::parse(a).expect("arch")).collect();
    let include = vec![dir.clone()];
    let fresh_cache = || {
        let d = tempfile::tempdir().expect("tempdir");
        std::env::set_var("CUDA_EMBED_CACHE_DIR", d.path());
        d
    };
    let plain = || {
        let _c = fresh_cache();
        let t0 = Instant::now();
        let req = Request { source: &one, line_directive: "", options: &[], archs: &archs, include_dirs: &include };
        compile::compile(&nvcc, &req).expect("plain compile");
        t0.elapsed().as_secs_f64()
    };
    let linked = |mode: Mode| {
        let _c = fresh_cache();
        let t0 = Instant::now();
        let args = unit_args(mode, &archs, &include, &[]);
        let jobs = [(args.clone(), main.clone(), "main.cu".to_string()), (args, math.clone(), "math.cu".to_string())];
        let mut objects = compile_units(&nvcc, mode, &jobs).into_iter().map(|o| o.expect("unit compiles"));
        let (a, b) = (objects.next().expect("main.cu"), objects.next().expect("math.cu"));
        device_link(&nvcc, mode, &archs, &[("main.cu", &a.bytes), ("math.cu", &b.bytes)]).expect("link");
        t0.elapsed().as_secs_f64()
    };
    // LINK_BUILD_TIME_RUNS: runs of each row (default 5); LINK_BUILD_TIME_NVRTC_ONLY=1: the
    // build-time NVRTC rows only.
    let runs: usize = std::env::var("LINK_BUILD_TIME_RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
    let nvcc_rows = std::env::var_os("LINK_BUILD_TIME_NVRTC_ONLY").is_none();
    let med = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (mut p, mut r, mut l) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..if nvcc_rows { runs } else { 0 } {
        p.push(plain());
        r.push(linked(Mode::Rdc));
        l.push(linked(Mode::Lto));
    }
    if nvcc_rows {
        let (p, r, l) = (med(p), med(r), med(l));
        println!("nvcc {}, archs {:?}, {runs} runs each, median seconds", nvcc.version, compile::DEFAULT_ARCHS);
        println!("| build of main.cu + math.cu | median s | vs one plain compile |");
        println!("|---|---|---|");
        println!("| one source, no rdc (reference) | {p:.3} | 1.00x |");
        println!("| link = [\"math.cu\"] (2 relocatable units + nvlink + fatbinary) | {r:.3} | {:.2}x |", r / p);
        println!("| link + lto (2 LTO-IR units + nvlink -dlto + fatbinary) | {l:.3} | {:.2}x |", l / p);
    }
    let n = match nvrtc::find_nvrtc() {
        Ok(Ok(n)) => n,
        other => {
            eprintln!("no build-time NVRTC rows: {other:?}");
            return;
        }
    };
    let jl = match nvjitlink::find(&n) {
        Ok(jl) => jl,
        Err(e) => {
            eprintln!("no build-time NVRTC rows: {e}");
            return;
        }
    };
    let req = |source| Request { source, line_directive: "", options: &[], archs: &archs, include_dirs: &include };
    let links = std::cell::RefCell::new(Vec::new());
    let plain = || {
        let _c = fresh_cache();
        let t0 = Instant::now();
        nvrtc::compile(&n, &[], &req(&one)).expect("plain NVRTC compile");
        t0.elapsed().as_secs_f64()
    };
    let linked = |mode: Mode| {
        let _c = fresh_cache();
        let t0 = Instant::now();
        // As the macro does: the units (and each unit's architectures) compile in parallel.
        let units = [(&main, "main.cu"), (&math, "math.cu")];
        let objects = link_nvrtc::parallel(
            units
                .iter()
                .map(|(text, label)| {
                    let (n, req) = (&n, &req);
                    move || link_nvrtc::compile_unit(n, mode, &req(text), label)
                })
                .collect(),
        );
        let objects: Vec<_> = objects.into_iter().map(|o| o.expect("unit compiles")).collect();
        let t1 = Instant::now();
        link_nvrtc::device_link(&n, &jl, mode, &archs, &[("main.cu", &objects[0]), ("math.cu", &objects[1])])
            .expect("link");
        links.borrow_mut().push((mode, t1.elapsed().as_secs_f64()));
        t0.elapsed().as_secs_f64()
    };
    // The reference given the same parallelism: the one source compiled for each architecture
    // on a thread of its own (what a plain module does not do today).
    let plain_parallel = || {
        let _c = fresh_cache();
        let t0 = Instant::now();
        let one_arch: Vec<[Arch; 1]> = archs.iter().map(|a| [a.clone()]).collect();
        let jobs: Vec<_> = one_arch
            .iter()
            .map(|a| {
                let (n, one, include) = (&n, &one, &include);
                move || {
                    let r = Request { source: one, line_directive: "", options: &[], archs: a, include_dirs: include };
                    nvrtc::compile(n, &[], &r).map(|_| ())
                }
            })
            .collect();
        for r in link_nvrtc::parallel(jobs) {
            r.expect("plain NVRTC compile");
        }
        t0.elapsed().as_secs_f64()
    };
    let serial = |mode: Mode| {
        link_nvrtc::set_slots(1);
        let t = linked(mode);
        link_nvrtc::set_slots(0);
        t
    };
    let (mut p, mut pp, mut r, mut l, mut rs, mut ls) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        p.push(plain());
        pp.push(plain_parallel());
        r.push(linked(Mode::Rdc));
        l.push(linked(Mode::Lto));
        rs.push(serial(Mode::Rdc));
        ls.push(serial(Mode::Lto));
    }
    let (p, pp, r, l, rs, ls) = (med(p), med(pp), med(r), med(l), med(rs), med(ls));
    println!();
    println!("{} and {}, the same runs ({} compiles at once)", n.name(), jl.name(), link_nvrtc::slots());
    println!("| build of main.cu + math.cu (build-time NVRTC) | median s | vs one plain compile | vs plain, archs in parallel |");
    println!("|---|---|---|---|");
    println!("| one source, no rdc (reference) | {p:.3} | 1.00x | {:.2}x |", p / pp);
    println!("| one source, no rdc, archs in parallel | {pp:.3} | {:.2}x | 1.00x |", pp / p);
    println!(
        "| link = [\"math.cu\"] (2 units x 2 archs in parallel, -rdc=true, + nvJitLink) | {r:.3} | {:.2}x | {:.2}x |",
        r / p,
        r / pp
    );
    println!("| link + lto (2 units in parallel, -dlto, + nvJitLink -lto) | {l:.3} | {:.2}x | {:.2}x |", l / p, l / pp);
    println!("| link, one compile at a time (before) | {rs:.3} | {:.2}x | {:.2}x |", rs / p, rs / pp);
    println!("| link + lto, one compile at a time (before) | {ls:.3} | {:.2}x | {:.2}x |", ls / p, ls / pp);
    let link_of = |m: Mode| med(links.borrow().iter().filter(|l| l.0 == m).map(|l| l.1).collect());
    println!(
        "nvJitLink's share (both archs, median of every run): link {:.3} s, link + lto {:.3} s",
        link_of(Mode::Rdc),
        link_of(Mode::Lto)
    );
}
