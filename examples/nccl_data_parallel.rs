//! Data-parallel training across GPUs with NCCL: linear regression, kernels from `cuda_kernel!`,
//! one thread per GPU, gradients summed with an NCCL all-reduce every step.
//!
//! ```sh
//! scripts/with-cuda cargo run --release --example nccl_data_parallel            # every GPU
//! scripts/with-cuda cargo run --release --example nccl_data_parallel -- 2       # at most 2
//! ```
//!
//! Each rank generates its own shard of the data on its GPU (a counter-based hash, so every
//! world size trains on the same global data set), and per step computes the residuals, the
//! gradient of the squared loss over its shard (deterministically: per-chunk partial sums, then
//! a fixed-order sum), all-reduces the gradient (and the loss) with NCCL, and applies the same
//! update, so the weights stay identical on every rank. The program checks that the weights
//! converge to the generating ones and agree across ranks, then prints the step time for 1, 2, 4,
//! ... GPUs (strong scaling: the same global data) and the all-reduce bus bandwidth measured the
//! way nccl-tests reports it (`busbw = bytes / time * 2 (n - 1) / n`).
//!
//! Across hosts: NCCL's unique id is 128 bytes (`Id::internal()`); rank 0 creates it and the
//! others rebuild it with `Id::uninit(bytes)`. Here the threads share it in memory; between
//! processes or hosts, write the bytes to a file or an environment variable that every process
//! reads (e.g. through your launcher), give each process its global rank, and the rest of this
//! program is unchanged.
//!
//! Exit status 2 (with a message) when there is no GPU or no libnccl.so.2.

use cuda_embed::cudarc::driver::CudaSlice;
use cuda_embed::cudarc::nccl::safe::{Comm, Id, ReduceOp};
use cuda_embed::{cuda_kernel, LaunchConfig};
use std::sync::{Arc, Barrier};

/// cuda-embed's errors and NCCL's, in one type.
type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;
use std::time::Instant;

cuda_kernel!(
    r#"
    // A reproducible uniform number in [-1, 1) from two integers (a counter-based hash).
    __device__ float uniform(unsigned long long a, unsigned long long b) {
        unsigned long long z = a * 0x9E3779B97F4A7C15ull + b * 0xC2B2AE3D27D4EB4Full + 0x165667B19E3779F9ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        return (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
    }
    __device__ float true_weight(int j) { return uniform(1u << 30, j); }

    // Rows [first, first + rows) of the global data: d features, the last one the constant 1
    // (so its weight is the bias), and y = x . w_true + noise.
    extern "C" __global__ void make_shard(float* x, float* y, long long first, int rows, int d) {
        int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
        int lane = threadIdx.x % 32;
        if (r >= rows) return;
        float dot = 0.0f;
        for (int j = lane; j < d; j += 32) {
            float v = (j == d - 1) ? 1.0f : uniform(first + r, j);
            x[(long long)r * d + j] = v;
            dot += v * true_weight(j);
        }
        for (int o = 16; o > 0; o /= 2) dot += __shfl_down_sync(0xffffffffu, dot, o);
        if (lane == 0) y[r] = dot + 0.01f * uniform(first + r, 1 << 20);
    }

    // res[r] = x[r] . w - y[r]: one warp per row.
    extern "C" __global__ void residual(const float* x, const float* w, const float* y, float* res, int rows, int d) {
        int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
        int lane = threadIdx.x % 32;
        if (r >= rows) return;
        float dot = 0.0f;
        for (int j = lane; j < d; j += 32) dot += x[(long long)r * d + j] * w[j];
        for (int o = 16; o > 0; o /= 2) dot += __shfl_down_sync(0xffffffffu, dot, o);
        if (lane == 0) res[r] = dot - y[r];
    }

    // Block c sums rows [c * chunk, (c + 1) * chunk): part[c][j] = sum res * x[.][j] for j < d,
    // part[c][d] = sum res^2. blockDim.x >= d + 1.
    extern "C" __global__ void grad_chunks(const float* x, const float* res, float* part, int rows, int d, int chunk) {
        int j = threadIdx.x;
        int begin = blockIdx.x * chunk;
        int end = min(rows, begin + chunk);
        float acc = 0.0f;
        for (int r = begin; r < end; ++r) {
            float e = res[r];
            if (j < d) acc += e * x[(long long)r * d + j];
            else if (j == d) acc += e * e;
        }
        if (j <= d) part[blockIdx.x * (d + 1) + j] = acc;
    }

    // g[j] = sum over chunks of part[c][j], in chunk order (the same bits on every run).
    extern "C" __global__ void grad_sum(const float* part, float* g, int chunks, int d) {
        int j = blockIdx.x * blockDim.x + threadIdx.x;
        if (j > d) return;
        float acc = 0.0f;
        for (int c = 0; c < chunks; ++c) acc += part[c * (d + 1) + j];
        g[j] = acc;
    }

    // w -= lr * 2 / n_total * g (the gradient of the mean squared error).
    extern "C" __global__ void sgd(float* w, const float* g, float lr, float n_total, int d) {
        int j = blockIdx.x * blockDim.x + threadIdx.x;
        if (j < d) w[j] -= lr * 2.0f / n_total * g[j];
    }
"#
);

const D: usize = 256; // features, the last one the bias
const STEPS: usize = 60;
const LR: f32 = 0.5;
const CHUNK: usize = 512;

/// What one rank reports back.
struct RankResult {
    weights: Vec<f32>,
    loss: f32,
    step_ms: f64,
}

fn rank_main(rank: usize, world: usize, n_total: usize, id: Id, start: Arc<Barrier>) -> Res<RankResult> {
    let ctx = cuda_embed::context(rank)?;
    let stream = ctx.new_stream()?;
    let comm = Comm::from_rank(stream.clone(), rank, world, id).map_err(nccl_error)?;
    let rows = n_total / world;
    let first = (rank * rows) as i64;
    let mut x = stream.alloc_zeros::<f32>(rows * D)?;
    let mut y = stream.alloc_zeros::<f32>(rows)?;
    let mut res = stream.alloc_zeros::<f32>(rows)?;
    let chunks = rows.div_ceil(CHUNK);
    let mut part = stream.alloc_zeros::<f32>(chunks * (D + 1))?;
    let mut g = stream.alloc_zeros::<f32>(D + 1)?;
    let mut w = stream.alloc_zeros::<f32>(D)?;
    let warps =
        |n: usize| LaunchConfig { grid_dim: (n.div_ceil(8) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let small = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (((D + 1).div_ceil(32) * 32) as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    let chunk_cfg = LaunchConfig { grid_dim: (chunks as u32, 1, 1), block_dim: small.block_dim, shared_mem_bytes: 0 };
    let (r, d, c) = (rows as i32, D as i32, CHUNK as i32);
    // SAFETY (every launch below): each kernel touches exactly the rows and features given, and
    // every buffer was allocated with those sizes above.
    unsafe { make_shard::launch(&stream, warps(rows), &mut x, &mut y, first, r, d)? };
    let mut step = |g: &mut CudaSlice<f32>, w: &mut CudaSlice<f32>| -> Res<()> {
        unsafe {
            residual::launch(&stream, warps(rows), &x, w, &y, &mut res, r, d)?;
            grad_chunks::launch(&stream, chunk_cfg, &x, &res, &mut part, r, d, c)?;
            grad_sum::launch(&stream, small, &part, g, chunks as i32, d)?;
        }
        comm.all_reduce_in_place(g, &ReduceOp::Sum).map_err(nccl_error)?;
        unsafe { sgd::launch(&stream, small, w, g, LR, n_total as f32, d)? };
        Ok(())
    };
    step(&mut g, &mut w)?; // warm-up (module loads, NCCL connections)
    stream.synchronize()?;
    start.wait();
    let t0 = Instant::now();
    for _ in 1..STEPS {
        step(&mut g, &mut w)?;
    }
    stream.synchronize()?;
    let step_ms = t0.elapsed().as_secs_f64() * 1e3 / (STEPS - 1) as f64;
    let loss = stream.clone_dtoh(&g)?[D] / n_total as f32;
    Ok(RankResult { weights: stream.clone_dtoh(&w)?, loss, step_ms })
}

/// The all-reduce bus bandwidth in GB/s on `world` GPUs, `bytes` per rank, as nccl-tests computes it.
fn all_reduce_busbw(world: usize, bytes: usize) -> Res<f64> {
    let id = Id::new().map_err(nccl_error)?;
    let start = Arc::new(Barrier::new(world));
    let threads: Vec<_> = (0..world)
        .map(|rank| {
            let (id, start) = (Id::uninit(*id.internal()), start.clone());
            std::thread::spawn(move || -> Res<f64> {
                let ctx = cuda_embed::context(rank)?;
                let stream = ctx.new_stream()?;
                let comm = Comm::from_rank(stream.clone(), rank, world, id).map_err(nccl_error)?;
                let mut buf = stream.alloc_zeros::<f32>(bytes / 4)?;
                comm.all_reduce_in_place(&mut buf, &ReduceOp::Sum).map_err(nccl_error)?;
                stream.synchronize()?;
                start.wait();
                let iters = 20;
                let t0 = Instant::now();
                for _ in 0..iters {
                    comm.all_reduce_in_place(&mut buf, &ReduceOp::Sum).map_err(nccl_error)?;
                }
                stream.synchronize()?;
                Ok(t0.elapsed().as_secs_f64() / iters as f64)
            })
        })
        .collect();
    let mut worst = 0.0f64;
    for t in threads {
        worst = worst.max(t.join().expect("rank thread panicked")?);
    }
    let algbw = bytes as f64 / worst / 1e9;
    Ok(algbw * 2.0 * (world as f64 - 1.0) / world as f64)
}

fn nccl_error(e: cuda_embed::cudarc::nccl::result::NcclError) -> Box<dyn std::error::Error + Send + Sync> {
    format!("NCCL: {e:?}").into()
}

fn train(world: usize, n_total: usize) -> Res<(f64, f32, Vec<f32>)> {
    let id = Id::new().map_err(nccl_error)?;
    let start = Arc::new(Barrier::new(world));
    let threads: Vec<_> = (0..world)
        .map(|rank| {
            let (id, start) = (Id::uninit(*id.internal()), start.clone());
            std::thread::spawn(move || rank_main(rank, world, n_total, id, start))
        })
        .collect();
    let results: Vec<RankResult> =
        threads.into_iter().map(|t| t.join().expect("rank thread panicked")).collect::<Res<_>>()?;
    for (rank, r) in results.iter().enumerate().skip(1) {
        let diff = r.weights.iter().zip(&results[0].weights).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(diff <= 1e-6, "rank {rank}'s weights differ from rank 0's by {diff}");
    }
    let step_ms = results.iter().map(|r| r.step_ms).fold(0.0, f64::max);
    Ok((step_ms, results[0].loss, results[0].weights.clone()))
}

fn main() {
    if let Err(e) = run() {
        eprintln!("nccl_data_parallel: {e}");
        std::process::exit(2);
    }
}

fn run() -> Res<()> {
    cuda_embed::context(0)?; // a clear error without a driver or GPU
    let devices = cuda_embed::cudarc::driver::CudaContext::device_count()? as usize;
    // SAFETY: only probes whether the library can be loaded.
    if !unsafe { cuda_embed::cudarc::nccl::sys::is_culib_present() } {
        return Err("libnccl.so.2 not found: install NCCL or add its directory to LD_LIBRARY_PATH".into());
    }
    let max = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(devices).min(devices);
    let n_total = 1 << 22; // 4M samples x 256 features = 4 GiB of f32 in total
    println!("linear regression, {n_total} samples x {D} features, {STEPS} steps, on up to {max} GPU(s)");
    println!("| GPUs | step ms | speed-up | final loss | max |w - w_true| | all-reduce busbw GB/s (256 MiB) |");
    println!("|---|---|---|---|---|---|");
    let w_true: Vec<f32> = (0..D).map(true_weight_host).collect();
    let mut base = None;
    let mut world = 1;
    while world <= max {
        let (ms, loss, w) = train(world, n_total)?;
        let err = w.iter().zip(&w_true).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(err < 1e-2, "{world} GPU(s): weights did not converge (max error {err})");
        let base_ms = *base.get_or_insert(ms);
        let busbw = if world > 1 { format!("{:.1}", all_reduce_busbw(world, 256 << 20)?) } else { "-".into() };
        println!("| {world} | {ms:.3} | {:.2}x | {loss:.3e} | {err:.2e} | {busbw} |", base_ms / ms);
        world *= 2;
    }
    Ok(())
}

/// The host twin of the kernels' `true_weight` (the same hash), to check convergence.
fn true_weight_host(j: usize) -> f32 {
    let (a, b) = (1u64 << 30, j as u64);
    let mut z = a
        .wrapping_mul(0x9E3779B97F4A7C15)
        .wrapping_add(b.wrapping_mul(0xC2B2AE3D27D4EB4F))
        .wrapping_add(0x165667B19E3779F9);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^= z >> 31;
    (z >> 40) as f32 * (2.0 / 16777216.0) - 1.0
}
