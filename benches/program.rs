//! `Program` (run-time source, NVRTC + disk cache): first use once the context exists, measured in
//! fresh child processes so neither NVRTC nor the module is already loaded.
//!
//! - cold: an empty cache directory: `Program::load` (NVRTC compile, cache write, module load)
//!   + `kernel` lookup + first launch + sync.
//! - disk-cache hit: the same in a new process with the cache warm: key + cubin read + module
//!   load + lookup + first launch + sync.
//!
//! Each is also measured for `Program::compile` alone (no GPU work), to split compile from load.
//!
//! The CuPy side (`RawModule` with the same source, options and name expressions) is
//! `benches/cupy_program.py`. Run: `cargo bench --bench program` (or `bash .gpu/run bench program`).

use cuda_embed::{Arg, LaunchConfig, Program};
use std::process::Command;
use std::time::Instant;

/// The same source, define and name expressions as `benches/cupy_program.py`.
const SOURCE: &str = r#"
template <class T> __global__ void axpy(T a, const T* x, T* y, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn program() -> Program {
    Program::new(SOURCE)
        .name("axpy.cu")
        .define("BLOCK", 256)
        .name_expression("axpy<float>")
        .name_expression("axpy<double>")
}

/// One first use in this process, timed from after the context and buffers exist: `load` (the
/// whole first use: `Program::load` + kernel lookup + first launch + sync) or `compile`
/// (`Program::compile` alone: a compile or a cache read). Returns (ms, from cache).
fn child(mode: &str) -> cuda_embed::Result<(f64, bool)> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let x = stream.clone_htod(&[1.0f32; 256])?;
    let mut y = stream.alloc_zeros::<f32>(256)?;
    let n = 256i32;
    let (major, minor) = ctx.compute_capability()?;
    stream.synchronize()?;
    let t0 = Instant::now();
    let p = program();
    if mode == "compile" {
        let compiled = p.compile((major * 10 + minor) as u32)?;
        return Ok((t0.elapsed().as_secs_f64() * 1e3, compiled.from_cache));
    }
    let module = p.load(&ctx)?;
    let k = module.kernel("axpy<float>")?;
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: 256 threads read x and write y, both 256 long.
    unsafe {
        k.launch(&stream, cfg, &mut [Arg::value(&2.0f32), Arg::slice(&x), Arg::slice_mut(&mut y), Arg::value(&n)])?
    };
    stream.synchronize()?;
    Ok((t0.elapsed().as_secs_f64() * 1e3, module.from_cache()))
}

/// Runs one child with `cache` as its cache directory; `hit` says whether the disk cache must
/// (not) have been used.
fn spawn(mode: &str, cache: &std::path::Path, hit: bool) -> f64 {
    let out = Command::new(std::env::current_exe().expect("own path"))
        .args(["--child", mode])
        .env("CUDA_EMBED_CACHE_DIR", cache)
        .output()
        .expect("spawn child");
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        eprintln!("child {mode} failed: {text}{}", String::from_utf8_lossy(&out.stderr));
        std::process::exit(1);
    }
    assert!(text.contains(&format!("FROM_CACHE={hit}")), "expected FROM_CACHE={hit}: {text}");
    text.lines().find_map(|l| l.strip_prefix("MS=")).and_then(|v| v.parse().ok()).expect("child printed its time")
}

fn median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        match child(args.get(i + 1).map_or("load", String::as_str)) {
            Ok((ms, from_cache)) => println!("MS={ms}\nFROM_CACHE={from_cache}"),
            Err(e) => {
                println!("{e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let gpu = match cuda_embed::context(0) {
        Ok(ctx) => ctx.name().unwrap_or_default(),
        Err(e) => {
            eprintln!("program bench: {e}");
            std::process::exit(2);
        }
    };
    const COLD_RUNS: usize = 5;
    const HIT_RUNS: usize = 9;
    let cold = |mode| (0..COLD_RUNS).map(|_| spawn(mode, tempfile::tempdir().unwrap().path(), false)).collect();
    let (cold_load, cold_compile): (Vec<f64>, Vec<f64>) = (cold("load"), cold("compile"));
    let warm = tempfile::tempdir().unwrap();
    spawn("load", warm.path(), false);
    let hit = |mode| (0..HIT_RUNS).map(|_| spawn(mode, warm.path(), true)).collect();
    let (hit_load, hit_compile): (Vec<f64>, Vec<f64>) = (hit("load"), hit("compile"));

    println!("GPU: {gpu}");
    println!("| Program first use, fresh process, after the context exists | median ms | min ms | runs |");
    println!("|---|---|---|---|");
    for (name, v) in [
        ("cold cache: `load` (NVRTC compile, cache write, module load) + lookup + launch + sync", cold_load),
        ("cold cache: `compile` alone (NVRTC load + compile + cache write)", cold_compile),
        ("disk-cache hit: `load` (key, cubin read, module load) + lookup + launch + sync", hit_load),
        ("disk-cache hit: `compile` alone (key + cubin read)", hit_compile),
    ] {
        let n = v.len();
        let (med, min) = median(v);
        println!("| {name} | {med:.3} | {min:.3} | {n} |");
    }
}
