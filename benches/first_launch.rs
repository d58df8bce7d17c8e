//! First launch of an embedded kernel once the context exists: module load + launch + sync,
//! measured in fresh child processes (a module loads once per process); embedded and raw
//! children alternate.
//!
//! - `embedded`: a `cuda_kernel!` module built by nvcc (fatbin in the binary).
//! - `raw load`: the same-sized fatbin loaded by hand (`cuModuleLoadData`, `cuModuleGetFunction`,
//!   `cuLaunchKernel`, sync): the driver's own floor.
//! - `raw_attr`: the same plus one `cuFuncGetAttribute` (the block-size limit), to show what that
//!   read costs: the embedded path made it before every first launch; it now takes the limit
//!   read from the fatbin's cubin at build time, and reads it only where the fatbin has no cubin
//!   for the GPU's architecture.
//! - `nvrtc cold` / `nvrtc hit`: a `compiler = "nvrtc"` module with an empty, then a warm, disk
//!   cache.
//!
//! Children run in alternating pairs (`FIRST_LAUNCH_PAIRS`, default 21): the ratios are printed
//! both as a ratio of medians and as the paired estimator of `common` (the median of the
//! per-pair ratios with its 95% confidence interval). Diagnostics: `FIRST_LAUNCH_FAULTS=1` (page
//! faults in the timed region), `FIRST_LAUNCH_PAGES=1` (which mappings gained pages),
//! `FIRST_LAUNCH_PREFAULT=1` (the executable's code mapped before the timed region).
//!
//! Run: `cargo bench --bench first_launch` (or `bash .gpu/run bench first_launch`).

mod common;

use cuda_embed::cudarc::driver::sys;
use cuda_embed::{cuda_kernel, LaunchConfig};
use std::ffi::c_void;
use std::process::Command;
use std::time::Instant;

cuda_kernel!(
    r#"
    extern "C" __global__ void first(float* y, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * y[i] + 1.0f;
    }
"#
);

cuda_kernel!(
    r#"
    extern "C" __global__ void reference(float* y, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * y[i] + 2.0f;
    }
"#
);

cuda_kernel!(
    r#"
    extern "C" __global__ void jitted(float* y, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * y[i] + 3.0f;
    }
"#,
    compiler = "nvrtc"
);

/// Where the time of a raw first launch goes, phase by phase (`--phases`): what the embedded path
/// adds must come from somewhere in this list.
fn phases() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let mut y = stream.alloc_zeros::<f32>(256)?;
    stream.synchronize()?;
    let Some(bytes) = reference::module().spec().image.fatbin_bytes() else { return Ok(()) };
    use cuda_embed::cudarc::driver::DevicePtrMut;
    let (p, _g) = y.device_ptr_mut(&stream);
    let mut t = Instant::now();
    let mut lap = |name: &str| {
        let now = Instant::now();
        println!("PHASE {name} {:.1} us", (now - t).as_secs_f64() * 1e6);
        t = now;
    };
    let copy = bytes.to_vec();
    lap("copy of the fatbin");
    let (mut module, mut f) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: a complete embedded fatbin; the symbol exists; args match `reference`.
    unsafe {
        sys::cuModuleLoadData(&mut module, copy.as_ptr() as *const c_void);
        lap("cuModuleLoadData");
        sys::cuModuleGetFunction(&mut f, module, c"reference".as_ptr());
        lap("cuModuleGetFunction");
        let mut v = 0i32;
        sys::cuFuncGetAttribute(&mut v, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
        lap("cuFuncGetAttribute (first: loads the function)");
        sys::cuFuncGetAttribute(&mut v, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f);
        lap("cuFuncGetAttribute (second)");
        let mut m = std::ptr::null_mut();
        sys::cuFuncGetModule(&mut m, f);
        lap("cuFuncGetModule");
        let _ = ctx.compute_capability();
        lap("compute_capability");
        let (a, n) = (2.0f32, 256i32);
        let mut args: [*mut c_void; 3] =
            [&p as *const u64 as *mut c_void, &a as *const f32 as *mut c_void, &n as *const i32 as *mut c_void];
        sys::cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, stream.cu_stream(), args.as_mut_ptr(), std::ptr::null_mut());
        lap("cuLaunchKernel");
    }
    stream.synchronize()?;
    lap("synchronize");
    drop(_g);
    let t0 = Instant::now();
    jitted::module().preload(&ctx)?;
    println!(
        "PHASE nvrtc-path preload {:.1} us (from disk cache: {})",
        t0.elapsed().as_secs_f64() * 1e6,
        jitted::module().loaded_from_disk_cache(&ctx)
    );
    let t0 = Instant::now();
    first::module().preload(&ctx)?;
    println!("PHASE embedded preload {:.1} us", t0.elapsed().as_secs_f64() * 1e6);
    Ok(())
}

/// The process's minor page faults so far (field 10 of /proc/self/stat; 0 where unreadable).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    rest.split_whitespace().nth(7).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// One mapping of this process (a line of `/proc/self/maps`).
struct Mapping {
    start: usize,
    end: usize,
    perms: String,
    /// The file mapped, or `[heap]`, `[stack]`, `[anon]` (nothing named).
    path: String,
}

fn mappings() -> Vec<Mapping> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (a, b) = fields.first()?.split_once('-')?;
            Some(Mapping {
                start: usize::from_str_radix(a, 16).ok()?,
                end: usize::from_str_radix(b, 16).ok()?,
                perms: fields.get(1)?.to_string(),
                path: fields.get(5).copied().unwrap_or("[anon]").to_string(),
            })
        })
        .collect()
}

/// Maps every page of this executable's code (reads one byte of each), so the timed region takes
/// no page faults in it: with `FIRST_LAUNCH_PREFAULT=1`, the children show what the first launch
/// costs without the first touch of the code it runs (a diagnostic, not a figure to report).
fn prefault_own_code() -> usize {
    let exe = std::fs::read_link("/proc/self/exe").unwrap_or_default();
    let mut pages = 0;
    for m in mappings().iter().filter(|m| m.perms.starts_with("r-x") && std::path::Path::new(&m.path) == exe) {
        for page in (m.start..m.end).step_by(4096) {
            // SAFETY: `page` lies in a readable mapping of this process (r-x, listed above).
            unsafe { std::ptr::read_volatile(page as *const u8) };
            pages += 1;
        }
    }
    pages
}

/// The pages of this process's mappings (up to 256 MiB each) that are present in its page table,
/// per mapping (`FIRST_LAUNCH_PAGES=1`: which mappings the timed region first touched, a
/// diagnostic of its page faults).
fn present_pages() -> Vec<(String, usize, Vec<bool>)> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut pagemap) = std::fs::File::open("/proc/self/pagemap") else { return Vec::new() };
    let mut out = Vec::new();
    for m in mappings().into_iter().filter(|m| m.end - m.start <= 256 << 20) {
        let mut bytes = vec![0u8; (m.end - m.start) / 4096 * 8];
        let at = (m.start / 4096 * 8) as u64;
        if pagemap.seek(SeekFrom::Start(at)).is_err() || pagemap.read_exact(&mut bytes).is_err() {
            continue;
        }
        let present = bytes.chunks(8).map(|c| c[7] & 0x80 != 0).collect();
        out.push((format!("{} {}", m.path, m.perms), m.start, present));
    }
    out
}

/// The timed region of a child: the first launch of `mode`'s kernel and the synchronisation
/// after it. Not inlined, so a profiler can count what it runs (callgrind `--toggle-collect`).
#[inline(never)]
fn first_launch_of(
    mode: &str,
    stream: &std::sync::Arc<cuda_embed::CudaStream>,
    cfg: LaunchConfig,
    y: &mut cuda_embed::CudaSlice<f32>,
) -> cuda_embed::Result<()> {
    match mode {
        "embedded" => unsafe { first::launch(stream, cfg, y, 2.0, 256)? },
        "nvrtc" => unsafe { jitted::launch(stream, cfg, y, 2.0, 256)? },
        _ => {
            let Some(bytes) = reference::module().spec().image.fatbin_bytes() else { unreachable!() };
            use cuda_embed::cudarc::driver::DevicePtrMut;
            let (p, _g) = y.device_ptr_mut(stream);
            let mut module = std::ptr::null_mut();
            let mut f = std::ptr::null_mut();
            let (a, n) = (2.0f32, 256i32);
            let mut args: [*mut c_void; 3] =
                [&p as *const u64 as *mut c_void, &a as *const f32 as *mut c_void, &n as *const i32 as *mut c_void];
            // SAFETY: a complete embedded fatbin; the symbol exists; args match `reference`.
            unsafe {
                assert_eq!(
                    sys::cuModuleLoadData(&mut module, bytes.as_ptr() as *const c_void),
                    sys::CUresult::CUDA_SUCCESS
                );
                assert_eq!(
                    sys::cuModuleGetFunction(&mut f, module, c"reference".as_ptr()),
                    sys::CUresult::CUDA_SUCCESS
                );
                if mode == "raw_attr" {
                    // What the embedded path added to the driver calls: the block-size limit read.
                    let mut v = 0i32;
                    let a = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
                    assert_eq!(sys::cuFuncGetAttribute(&mut v, a, f), sys::CUresult::CUDA_SUCCESS);
                }
                // The embedded child's configuration (`cfg`), so both run the same grid.
                let (g, b) = (cfg.grid_dim, cfg.block_dim);
                let r = sys::cuLaunchKernel(
                    f,
                    g.0,
                    g.1,
                    g.2,
                    b.0,
                    b.1,
                    b.2,
                    0,
                    stream.cu_stream(),
                    args.as_mut_ptr(),
                    std::ptr::null_mut(),
                );
                assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            }
        }
    }
    stream.synchronize()?;
    Ok(())
}

fn child(mode: &str) -> cuda_embed::Result<f64> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let mut y = stream.alloc_zeros::<f32>(256)?;
    let cfg = LaunchConfig::for_num_elems(256);
    stream.synchronize()?;
    if std::env::var_os("FIRST_LAUNCH_PREFAULT").is_some() {
        println!("PREFAULTED={}", prefault_own_code());
    }
    let pages_before = std::env::var_os("FIRST_LAUNCH_PAGES").map(|_| present_pages());
    let faults = minor_faults();
    let t0 = Instant::now();
    first_launch_of(mode, &stream, cfg, &mut y)?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    if std::env::var_os("FIRST_LAUNCH_FAULTS").is_some() {
        // Page faults taken inside the timed region (code and data touched for the first time).
        println!("FAULTS={}", minor_faults() - faults);
    }
    if let Some(before) = pages_before {
        // Pages present now that were not before the timed region, per mapping.
        for (name, start, present) in present_pages() {
            let Some((_, _, was)) = before.iter().find(|(n, s, _)| *s == start && *n == name) else {
                println!("NEW MAPPING {name} at {start:#x}: {} pages", present.iter().filter(|p| **p).count());
                continue;
            };
            let new: Vec<usize> =
                (0..present.len()).filter(|&i| present[i] && !was.get(i).copied().unwrap_or(false)).collect();
            if !new.is_empty() {
                println!("NEW PAGES {name}: {} (page offsets {:?})", new.len(), &new[..new.len().min(400)]);
            }
        }
    }
    if mode == "nvrtc" {
        println!("FROM_CACHE={}", jitted::module().loaded_from_disk_cache(&ctx));
    }
    Ok(ms)
}

fn spawn(mode: &str, cache: &std::path::Path) -> f64 {
    spawn_checked(mode, cache, None)
}

/// Runs one child; for NVRTC children, `hit` says whether the disk cache must (not) have been used.
fn spawn_checked(mode: &str, cache: &std::path::Path, hit: Option<bool>) -> f64 {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--child", mode])
        .env("CUDA_EMBED_CACHE_DIR", cache)
        .output()
        .expect("spawn child");
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        eprintln!("child {mode} failed: {text}{}", String::from_utf8_lossy(&out.stderr));
        std::process::exit(1);
    }
    if let Some(h) = hit {
        assert!(text.contains(&format!("FROM_CACHE={h}")), "expected FROM_CACHE={h}: {text}");
    }
    text.lines().find_map(|l| l.strip_prefix("MS=")).and_then(|v| v.parse().ok()).expect("child printed its time")
}

fn median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[v.len() / 2], v[0])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--phases") {
        if let Err(e) = phases() {
            eprintln!("first_launch bench: {e}");
            std::process::exit(2);
        }
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--child") {
        match child(&args[i + 1]) {
            Ok(ms) => println!("MS={ms}"),
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
            eprintln!("first_launch bench: {e}");
            std::process::exit(2);
        }
    };
    const RUNS: usize = 9;
    // The embedded and raw children alternate (and more of them run), so drift of the machine
    // over the run weighs on both alike.
    let pairs = common::env_usize("FIRST_LAUNCH_PAIRS", 21);
    let scratch = tempfile::tempdir().unwrap();
    let (mut embedded, mut raw, mut raw_attr) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..pairs {
        // `raw_attr` (the raw sequence plus the limit read the embedded path made) runs between
        // the pair, so the pair's alternation is unchanged.
        let order = if i % 2 == 0 { ["embedded", "raw_attr", "raw"] } else { ["raw", "raw_attr", "embedded"] };
        for mode in order {
            let ms = spawn(mode, scratch.path());
            match mode {
                "raw" => raw.push(ms),
                "raw_attr" => raw_attr.push(ms),
                _ => embedded.push(ms),
            }
        }
    }
    let attr_ratio = median(raw_attr.clone()).0 / median(raw.clone()).0;
    // Child `i` of each kind ran in pair `i` (back to back): one ratio per pair.
    let (embedded_paired, attr_paired) = (common::Paired::new(&embedded, &raw), common::Paired::new(&raw_attr, &raw));
    let ratios = {
        let (e, r) = (median(embedded.clone()).0, median(raw.clone()).0);
        e / r
    };
    let cold: Vec<f64> = (0..5)
        .map(|_| {
            let fresh = tempfile::tempdir().unwrap();
            spawn_checked("nvrtc", fresh.path(), Some(false))
        })
        .collect();
    let warm = tempfile::tempdir().unwrap();
    spawn("nvrtc", warm.path());
    let hit: Vec<f64> = (0..RUNS).map(|_| spawn_checked("nvrtc", warm.path(), Some(true))).collect();
    // The hit against the embedded load as the target reads it: alternating pairs, like the
    // embedded and raw children above, so the machine's drift weighs on both alike.
    let (mut hit_pairs, mut embedded_pairs) = (Vec::new(), Vec::new());
    for i in 0..pairs {
        if i % 2 == 0 {
            hit_pairs.push(spawn_checked("nvrtc", warm.path(), Some(true)));
            embedded_pairs.push(spawn("embedded", scratch.path()));
        } else {
            embedded_pairs.push(spawn("embedded", scratch.path()));
            hit_pairs.push(spawn_checked("nvrtc", warm.path(), Some(true)));
        }
    }
    let hit_paired = common::Paired::new(&hit_pairs, &embedded_pairs);
    let hit_ratio = median(hit_pairs).0 / median(embedded_pairs).0;
    println!("GPU: {gpu}");
    println!("| first launch (load + launch + sync) | median ms | min ms | runs |");
    println!("|---|---|---|---|");
    for (name, v) in [
        ("embedded fatbin (cuda_kernel!, nvcc)", embedded),
        ("raw cuModuleLoadData of a same-size fatbin", raw),
        ("raw, plus one cuFuncGetAttribute (MAX_THREADS_PER_BLOCK)", raw_attr),
        ("NVRTC fallback, cold cache", cold),
        ("NVRTC fallback, disk-cache hit", hit),
    ] {
        let n = v.len();
        let (med, min) = median(v);
        println!("| {name} | {med:.3} | {min:.3} | {n} |");
    }
    println!();
    println!("embedded / raw (medians of {pairs} alternating pairs): {ratios:.3}x");
    println!("raw plus the limit read / raw (same children): {attr_ratio:.3}x");
    println!("NVRTC disk-cache hit / embedded (medians of {pairs} alternating pairs): {hit_ratio:.3}x");
    println!();
    println!("{}", common::paired_header("ratio", pairs));
    println!("| embedded / raw | {} |", embedded_paired.cell());
    println!("| raw plus the limit read / raw | {} |", attr_paired.cell());
    println!("| NVRTC disk-cache hit / embedded | {} |", hit_paired.cell());
}
