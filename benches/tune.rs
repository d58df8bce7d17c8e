//! Autotuning: two block reductions whose best block shape depends on the size (few large blocks
//! waste the GPU at 2^12; many small blocks pile atomics onto one address at 2^26), each tuned
//! over 9 variants (BLOCK 128/256/512 x ITEMS 1/4/16), at 2^12 and 2^26 elements:
//! - `block_sum`: each thread's ITEMS loads unrolled (all in flight at once);
//! - `strided_sum`: each thread walks its ITEMS elements in a loop that is not unrolled, as
//!   many hand-written reductions do, so a thread's loads follow one another and a few large
//!   blocks take ITEMS memory latencies where many small ones take one.
//!
//! Reports, each a ratio measured in this process on this GPU:
//! - the tuned launch against the best and the worst variant launched directly (targets: at
//!   least 0.98x the best, at least 1.2x the worst), at both sizes, in two kinds of time:
//!   **GPU time** (batches of launches queued behind a blocking kernel, `tune::time_queued`,
//!   so the GPU runs them back to back and CUDA events measure the kernels' execution; the
//!   targets are judged on it) and **host clock** (back-to-back calls between syncs, which at
//!   2^12 is mostly the launch path's own cost);
//! - the tuning time of the first call at each size, and a second process with the record on
//!   disk that does not tune (its first call's time, and no tuning line on stderr);
//! - the host cost of a `tuned` call against a plain launch of the chosen variant (target: at
//!   most 1.02x).
//!
//! Run: `cargo bench --bench tune`.

use cuda_embed::{cuda_kernel, tune, CudaSlice, CudaStream, LaunchConfig};
use std::sync::Arc;
use std::time::Instant;

cuda_kernel!(
    r#"
    template <int BLOCK, int ITEMS>
    __global__ void block_sum(const float* x, float* out, size_t n) {
        __shared__ float s[BLOCK];
        size_t base = (size_t)blockIdx.x * BLOCK * ITEMS + threadIdx.x;
        float acc = 0.0f;
        #pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            size_t i = base + (size_t)k * BLOCK;
            if (i < n) acc += x[i];
        }
        s[threadIdx.x] = acc;
        __syncthreads();
        for (int w = BLOCK / 2; w > 0; w >>= 1) {
            if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
            __syncthreads();
        }
        if (threadIdx.x == 0) atomicAdd(out, s[0]);
    }
"#,
    tune = {
        params = ["BLOCK: 128, 256, 512", "ITEMS: 1, 4, 16"],
        block = "BLOCK",
        grid = "cdiv(n, BLOCK * ITEMS)",
        key = "n",
    }
);

cuda_kernel!(
    r#"
    template <int BLOCK, int ITEMS>
    __global__ void strided_sum(const float* x, float* out, size_t n) {
        __shared__ float s[BLOCK];
        size_t stride = (size_t)gridDim.x * BLOCK;
        float acc = 0.0f;
        // Not unrolled: one load after another, ITEMS of them per thread.
        #pragma unroll 1
        for (size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride) acc += x[i];
        s[threadIdx.x] = acc;
        __syncthreads();
        for (int w = BLOCK / 2; w > 0; w >>= 1) {
            if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
            __syncthreads();
        }
        if (threadIdx.x == 0) atomicAdd(out, s[0]);
    }
"#,
    tune = {
        params = ["BLOCK: 128, 256, 512", "ITEMS: 1, 4, 16"],
        block = "BLOCK",
        grid = "cdiv(n, BLOCK * ITEMS)",
        key = "n",
    }
);

// The same shape with an empty body: its calls cost the host more than the GPU, so their time is
// the launch path's own (the per-call overhead of `tuned`).
cuda_kernel!(
    r#"
    template <int BLOCK>
    __global__ void nop(const float* x, float* out, size_t n) {}
"#,
    tune = { params = ["BLOCK: 128, 256"], block = "BLOCK", grid = "cdiv(n, BLOCK)", key = "n" }
);

fn main() {
    if let Err(e) = run() {
        eprintln!("tune bench: {e}");
        std::process::exit(2);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Host clock: median microseconds per call of `f`, 5 warm-up calls, then 15 samples of `per`
/// back-to-back calls between stream syncs.
fn host_us(
    stream: &Arc<CudaStream>,
    per: usize,
    mut f: impl FnMut() -> cuda_embed::Result<()>,
) -> cuda_embed::Result<f64> {
    for _ in 0..5 {
        f()?;
    }
    stream.synchronize()?;
    let mut v = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        for _ in 0..per {
            f()?;
        }
        stream.synchronize()?;
        v.push(t.elapsed().as_secs_f64() * 1e6 / per as f64);
    }
    Ok(median(v))
}

/// GPU time: median microseconds per call of each of `fs`, 3 warm-up calls each, then 15 rounds
/// over all of them (so clock changes hit each alike), each sample `per` calls queued behind a
/// blocking kernel (`tune::time_queued`) and timed by events around them. Also how many samples
/// the blocking kernel timed out on (those include launch gaps).
fn gpu_us(
    stream: &Arc<CudaStream>,
    per: usize,
    fs: &mut [&mut dyn FnMut() -> cuda_embed::Result<()>],
) -> cuda_embed::Result<(Vec<f64>, usize)> {
    for f in fs.iter_mut() {
        for _ in 0..3 {
            f()?;
        }
    }
    stream.synchronize()?;
    let mut samples = vec![Vec::new(); fs.len()];
    let mut timeouts = 0;
    for _ in 0..15 {
        for (k, f) in fs.iter_mut().enumerate() {
            let t = tune::time_queued(stream, || {
                for _ in 0..per {
                    f()?;
                }
                Ok(())
            })?;
            timeouts += usize::from(t.with_gaps);
            samples[k].push(t.ms * 1e3 / per as f64);
        }
    }
    Ok((samples.into_iter().map(median).collect(), timeouts))
}

/// The two tuned kernels, which share their parameters and variants.
#[derive(Clone, Copy, PartialEq)]
enum Which {
    BlockSum,
    StridedSum,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::BlockSum => "block_sum",
            Which::StridedSum => "strided_sum",
        }
    }

    fn tuner(self) -> &'static tune::Tuner {
        match self {
            Which::BlockSum => block_sum::tuner(),
            Which::StridedSum => strided_sum::tuner(),
        }
    }

    fn module(self) -> &'static cuda_embed::Module {
        match self {
            Which::BlockSum => block_sum::module(),
            Which::StridedSum => strided_sum::module(),
        }
    }

    unsafe fn tuned(
        self,
        stream: &Arc<CudaStream>,
        x: &CudaSlice<f32>,
        out: &mut CudaSlice<f32>,
        n: usize,
    ) -> cuda_embed::Result<()> {
        match self {
            Which::BlockSum => unsafe { block_sum::tuned(stream, x, out, n) },
            Which::StridedSum => unsafe { strided_sum::tuned(stream, x, out, n) },
        }
    }

    /// Launches variant `label` directly (`block_sum::launch::<B, I>`, ...).
    unsafe fn launch(
        self,
        stream: &Arc<CudaStream>,
        label: &str,
        cfg: LaunchConfig,
        x: &CudaSlice<f32>,
        out: &mut CudaSlice<f32>,
        n: usize,
    ) -> cuda_embed::Result<()> {
        macro_rules! each {
            ($k:ident: $($b:literal, $i:literal);*) => {
                match label {
                    $(concat!("BLOCK=", $b, " ITEMS=", $i) => unsafe { $k::launch::<$b, $i>(stream, cfg, x, out, n) },)*
                    other => panic!("no variant {other}"),
                }
            };
        }
        match self {
            Which::BlockSum => {
                each!(block_sum: 128, 1; 128, 4; 128, 16; 256, 1; 256, 4; 256, 16; 512, 1; 512, 4; 512, 16)
            }
            Which::StridedSum => {
                each!(strided_sum: 128, 1; 128, 4; 128, 16; 256, 1; 256, 4; 256, 16; 512, 1; 512, 4; 512, 16)
            }
        }
    }
}

/// The best and the worst of `(us, label)` pairs.
fn extremes<'a>(times: &[(f64, &'a str)]) -> ((f64, &'a str), (f64, &'a str)) {
    let best = times.iter().copied().fold((f64::MAX, ""), |a, b| if b.0 < a.0 { b } else { a });
    let worst = times.iter().copied().fold((0.0, ""), |a, b| if b.0 > a.0 { b } else { a });
    (best, worst)
}

/// One kernel at one size: the first call (tuning), then every variant and the tuned launch in
/// GPU time and host clock. Returns the chosen variant.
fn compare(
    stream: &Arc<CudaStream>,
    which: Which,
    host: &[f32],
    x: &CudaSlice<f32>,
    out: &mut CudaSlice<f32>,
) -> cuda_embed::Result<String> {
    let n = x.len();
    let name = which.name();
    stream.memset_zeros(out)?;
    stream.synchronize()?;
    let t = Instant::now();
    unsafe { which.tuned(stream, x, out, n)? };
    stream.synchronize()?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    let got = stream.clone_dtoh(out)?[0] as f64;
    let want: f64 = host[..n].iter().map(|v| *v as f64).sum();
    assert!((got - want).abs() <= 1e-2 * want.abs(), "sum {got} != {want}: the tuning changed the output");
    let chosen = which.tuner().chosen(0, &[n as i64]).unwrap_or("?").to_string();
    println!("{name}, n = 2^{}: first call (tuning 9 variants) {first_ms:.1} ms, chose [{chosen}]", n.trailing_zeros());
    let per = if n < 1 << 20 { 50 } else { 5 };
    let labels: Vec<&str> = which.tuner().variants().collect();
    let mut cfgs = Vec::new();
    for v in 0..labels.len() {
        cfgs.push(which.tuner().config(which.module(), v, &[n as i64])?);
    }
    // GPU time: the nine variants and the tuned launch, round-robin.
    let (gpu, timeouts) = {
        let out = std::cell::RefCell::new(&mut *out);
        let mut direct: Vec<Box<dyn FnMut() -> cuda_embed::Result<()> + '_>> = Vec::new();
        for (v, label) in labels.iter().enumerate() {
            let (cfg, out) = (cfgs[v], &out);
            direct.push(Box::new(move || unsafe { which.launch(stream, label, cfg, x, &mut out.borrow_mut(), n) }));
        }
        let out = &out;
        direct.push(Box::new(move || unsafe { which.tuned(stream, x, &mut out.borrow_mut(), n) }));
        let mut fs: Vec<&mut dyn FnMut() -> cuda_embed::Result<()>> =
            direct.iter_mut().map(|f| &mut **f as &mut dyn FnMut() -> cuda_embed::Result<()>).collect();
        gpu_us(stream, per, &mut fs)?
    };
    // Host clock, as before: each variant, then the tuned launch.
    let mut host_times = Vec::new();
    for (v, label) in labels.iter().enumerate() {
        let cfg = cfgs[v];
        host_times.push(host_us(stream, per, || unsafe { which.launch(stream, label, cfg, x, out, n) })?);
    }
    let host_tuned = host_us(stream, per, || unsafe { which.tuned(stream, x, out, n) })?;
    for (kind, times, tuned) in [("GPU time", &gpu[..9], gpu[9]), ("host clock", &host_times[..], host_tuned)] {
        let pairs: Vec<(f64, &str)> = times.iter().copied().zip(labels.iter().copied()).collect();
        let (best, worst) = extremes(&pairs);
        let table: Vec<String> = pairs.iter().map(|(t, l)| format!("[{l}] {t:.2}")).collect();
        println!("  {kind}, us per call: {}", table.join(", "));
        println!(
            "  {kind}: tuned {tuned:.2} us: {:.3}x the best [{}] ({:.2} us; target >= 0.98x), {:.2}x the worst [{}] ({:.2} us; target >= 1.2x); best/worst spread {:.2}x",
            best.0 / tuned,
            best.1,
            best.0,
            worst.0 / tuned,
            worst.1,
            worst.0,
            worst.0 / best.0
        );
    }
    if timeouts > 0 {
        println!("  GPU time: {timeouts} samples may include launch gaps (the blocking kernel timed out)");
    }
    Ok(chosen)
}

fn run() -> cuda_embed::Result<()> {
    let dir = match std::env::var_os("TUNE_BENCH_DIR") {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir().join(format!("cuda-embed-tune-bench-{}", std::process::id())),
    };
    tune::set_records_dir(&dir);
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let child = std::env::var_os("TUNE_BENCH_CHILD").is_some();
    let host: Vec<f32> = (0..1usize << 26).map(|i| ((i % 7) as f32) * 0.25).collect();
    let mut out = stream.alloc_zeros::<f32>(1)?;
    if child {
        // A second process with the record on disk: its first call finds it and does not tune.
        let n = 1usize << 26;
        let x = stream.clone_htod(&host[..n])?;
        stream.synchronize()?;
        let t = Instant::now();
        unsafe { block_sum::tuned(&stream, &x, &mut out, n)? };
        stream.synchronize()?;
        let first_ms = t.elapsed().as_secs_f64() * 1e3;
        let chosen = block_sum::tuner().chosen(0, &[n as i64]).unwrap_or("?");
        let recorded = tune::records().iter().any(|r| r.kernel == "block_sum" && r.key[0].1 == n as i64);
        println!(
            "second process, n = 2^26: first call {first_ms:.2} ms, chose [{chosen}] from the record on disk: {recorded} (no tuning line above)"
        );
        return Ok(());
    }
    println!(
        "tune bench on {} (sm_{}{}), {}",
        ctx.name()?,
        ctx.compute_capability()?.0,
        ctx.compute_capability()?.1,
        {
            let mut d = 0;
            // SAFETY: a valid out-pointer.
            unsafe { cuda_embed::cudarc::driver::sys::cuDriverGetVersion(&mut d) };
            format!("driver {d}")
        }
    );
    let mut small = None;
    for n in [1usize << 12, 1 << 26] {
        let x = stream.clone_htod(&host[..n])?;
        for which in [Which::BlockSum, Which::StridedSum] {
            compare(&stream, which, &host, &x, &mut out)?;
        }
        if n == 1 << 12 {
            small = Some(x);
        }
    }
    // Host cost per call: only the calls are timed, in batches of 500 with a sync between; an
    // empty kernel, so the GPU keeps up and the figure is the host's.
    if let Some(x) = small {
        let n = 1usize << 12;
        unsafe { nop::tuned(&stream, &x, &mut out, n)? };
        let chosen = nop::tuner().chosen(0, &[n as i64]).unwrap_or("BLOCK=128").to_string();
        let v = nop::tuner().variants().position(|l| l == chosen).unwrap_or(0);
        let cfg = nop::tuner().config(nop::module(), v, &[n as i64])?;
        let (mut plain, mut tuned) = (Vec::new(), Vec::new());
        for round in 0..22 {
            for m in 0..2 {
                let method = (m + round) % 2;
                let mut elapsed = 0.0;
                for _ in 0..10 {
                    let t = Instant::now();
                    for _ in 0..500 {
                        if method == 0 {
                            if v == 0 {
                                unsafe { nop::launch::<128>(&stream, cfg, &x, &mut out, n)? };
                            } else {
                                unsafe { nop::launch::<256>(&stream, cfg, &x, &mut out, n)? };
                            }
                        } else {
                            unsafe { nop::tuned(&stream, &x, &mut out, n)? };
                        }
                    }
                    elapsed += t.elapsed().as_secs_f64();
                    stream.synchronize()?;
                }
                if round >= 2 {
                    [&mut plain, &mut tuned][method].push(elapsed * 1e9 / 5000.0);
                }
            }
        }
        let (p, t) = (median(plain), median(tuned));
        println!("host cost per call (empty kernel, n = 2^12): plain launch of [{chosen}] {p:.0} ns, tuned {t:.0} ns: {:.3}x (target <= 1.02x)", t / p);
    }
    // A second process with the record on disk does not tune.
    stream.synchronize()?;
    let status = std::process::Command::new(std::env::current_exe().map_err(|e| cuda_embed::Error::Tune {
        what: "the bench".into(),
        cause: e.to_string(),
        fix: None,
    })?)
    .env("TUNE_BENCH_CHILD", "1")
    .env("TUNE_BENCH_DIR", &dir)
    .status();
    if !status.as_ref().is_ok_and(|s| s.success()) {
        println!("second process failed: {status:?}");
    }
    let file = dir.join("exported.txt");
    let count = tune::export(&file)?;
    println!("exported {count} records to {}:\n{}", file.display(), std::fs::read_to_string(&file).unwrap_or_default());
    Ok(())
}
