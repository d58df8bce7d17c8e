//! Build time of separate compilation against one plain compile of the same code (needs nvcc, no
//! GPU): `tests/kernels/link/main.cu` + `math.cu` compiled as relocatable units and device-linked
//! (what `link = ["math.cu"]` does, with and without `lto`, the units compiled in parallel), against the two files pasted into one
//! source compiled to a fatbin (what `cuda_kernel!` does without `rdc`). Every run uses an empty
//! build cache, so nvcc always runs. Prints the medians and the ratio. Where libnvrtc and
//! nvJitLink are found too, the same for build-time NVRTC: the units compiled by NVRTC and linked
//! by nvJitLink against the one source compiled by NVRTC.
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
    const RUNS: usize = 5;
    let med = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (mut p, mut r, mut l) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        p.push(plain());
        r.push(linked(Mode::Rdc));
        l.push(linked(Mode::Lto));
    }
    let (p, r, l) = (med(p), med(r), med(l));
    println!("nvcc {}, archs {:?}, {RUNS} runs each, median seconds", nvcc.version, compile::DEFAULT_ARCHS);
    println!("| build of main.cu + math.cu | median s | vs one plain compile |");
    println!("|---|---|---|");
    println!("| one source, no rdc (reference) | {p:.3} | 1.00x |");
    println!("| link = [\"math.cu\"] (2 relocatable units + nvlink + fatbinary) | {r:.3} | {:.2}x |", r / p);
    println!("| link + lto (2 LTO-IR units + nvlink -dlto + fatbinary) | {l:.3} | {:.2}x |", l / p);
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
    let plain = || {
        let _c = fresh_cache();
        let t0 = Instant::now();
        nvrtc::compile(&n, &[], &req(&one)).expect("plain NVRTC compile");
        t0.elapsed().as_secs_f64()
    };
    let linked = |mode: Mode| {
        let _c = fresh_cache();
        let t0 = Instant::now();
        let a = link_nvrtc::compile_unit(&n, mode, &req(&main), "main.cu").expect("main.cu compiles");
        let b = link_nvrtc::compile_unit(&n, mode, &req(&math), "math.cu").expect("math.cu compiles");
        link_nvrtc::device_link(&n, &jl, mode, &archs, &[("main.cu", &a), ("math.cu", &b)]).expect("link");
        t0.elapsed().as_secs_f64()
    };
    let (mut p, mut r, mut l) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        p.push(plain());
        r.push(linked(Mode::Rdc));
        l.push(linked(Mode::Lto));
    }
    let (p, r, l) = (med(p), med(r), med(l));
    println!();
    println!("{} and {}, the same runs", n.name(), jl.name());
    println!("| build of main.cu + math.cu (build-time NVRTC) | median s | vs one plain compile |");
    println!("|---|---|---|");
    println!("| one source, no rdc (reference) | {p:.3} | 1.00x |");
    println!("| link = [\"math.cu\"] (2 units x 2 archs, -rdc=true, + nvJitLink) | {r:.3} | {:.2}x |", r / p);
    println!("| link + lto (2 units, -dlto, + nvJitLink -lto) | {l:.3} | {:.2}x |", l / p);
}
