//! Data-parallel training across GPUs with NCCL: linear regression with kernels from
//! `cuda_kernel!` (data, residuals, gradient), `elementwise_kernel!` (the SGD update) and
//! `reduction_kernel!` (the loss), gradients summed with an NCCL all-reduce every step.
//!
//! ```sh
//! scripts/with-cuda cargo run --release --example nccl_data_parallel              # threads, every GPU
//! scripts/with-cuda cargo run --release --example nccl_data_parallel -- 2         # threads, at most 2
//! scripts/with-cuda cargo run --release --example nccl_data_parallel -- procs 2   # 2 processes
//! ```
//!
//! Two forms: one process with a thread per GPU, and one process per GPU (`procs N`: this
//! program starts N copies of itself, each with `NCCL_DP_RANK`, `NCCL_DP_WORLD` and
//! `NCCL_DP_ID_FILE` in its environment; rank 0's parent writes the NCCL unique id to that file
//! and every rank reads it). The second is how it runs across hosts: start one process per GPU
//! with your launcher (mpirun, srun, torchrun-style scripts) setting the three variables, the id
//! file on a shared file system (or the id's hex in an environment variable), and
//! `CUDA_VISIBLE_DEVICES` or the local rank choosing the GPU.
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
//! NCCL's unique id is 128 bytes (`Id::internal()`); one rank's process creates it and the others
//! rebuild it with `Id::uninit(bytes)`. The threads share it in memory; the processes read it, as
//! hex, from the file.
//!
//! Exit status 2 (with a message) when there is no GPU or no libnccl.so.2.

use cuda_embed::cudarc::driver::CudaSlice;
use cuda_embed::cudarc::nccl::safe::{Comm, Id, ReduceOp};
use cuda_embed::{cuda_kernel, elementwise_kernel, reduction_kernel, LaunchConfig};
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

    // Block c sums rows [c * chunk, (c + 1) * chunk): part[c][j] = sum res * x[.][j].
    // blockDim.x >= d.
    extern "C" __global__ void grad_chunks(const float* x, const float* res, float* part, int rows, int d, int chunk) {
        int j = threadIdx.x;
        int begin = blockIdx.x * chunk;
        int end = min(rows, begin + chunk);
        float acc = 0.0f;
        for (int r = begin; r < end; ++r) {
            if (j < d) acc += res[r] * x[(long long)r * d + j];
        }
        if (j < d) part[blockIdx.x * d + j] = acc;
    }

    // g[j] = sum over chunks of part[c][j], in chunk order (the same bits on every run).
    extern "C" __global__ void grad_sum(const float* part, float* g, int chunks, int d) {
        int j = blockIdx.x * blockDim.x + threadIdx.x;
        if (j >= d) return;
        float acc = 0.0f;
        for (int c = 0; c < chunks; ++c) acc += part[c * d + j];
        g[j] = acc;
    }
"#
);

// w -= step * g, with step = lr * 2 / n_total (the gradient of the mean squared error).
elementwise_kernel!(sgd, inputs = "float g, scalar float step", outputs = "float w", operation = "w = w - step * g");

// The shard's sum of squared residuals (in f64), for the loss.
reduction_kernel!(
    squared_sum,
    inputs = "float r",
    outputs = "double y",
    reduce_type = "double",
    map = "(double)r * r",
    reduce = "a + b",
    identity = "0",
);

const D: usize = 256; // features, the last one the bias
const STEPS: usize = 60;
const LR: f32 = 0.5;
const CHUNK: usize = 512;
const N_TOTAL: usize = 1 << 22; // 4M samples x 256 features = 4 GiB of f32 in total

/// What one rank reports back.
struct RankResult {
    weights: Vec<f32>,
    loss: f64,
    step_ms: f64,
}

/// How the ranks start their timed steps together: a barrier between threads, or an all-reduce
/// between processes.
enum Start {
    Threads(Arc<Barrier>),
    Processes,
}

fn rank_main(rank: usize, device: usize, world: usize, id: Id, start: Start) -> Res<RankResult> {
    let ctx = cuda_embed::context(device)?;
    let stream = ctx.new_stream()?;
    let comm = Comm::from_rank(stream.clone(), rank, world, id).map_err(nccl_error)?;
    let rows = N_TOTAL / world;
    let first = (rank * rows) as i64;
    let mut x = stream.alloc_zeros::<f32>(rows * D)?;
    let mut y = stream.alloc_zeros::<f32>(rows)?;
    let mut res = stream.alloc_zeros::<f32>(rows)?;
    let chunks = rows.div_ceil(CHUNK);
    let mut part = stream.alloc_zeros::<f32>(chunks * D)?;
    let mut g = stream.alloc_zeros::<f32>(D)?;
    let mut w = stream.alloc_zeros::<f32>(D)?;
    let mut loss = stream.alloc_zeros::<f64>(1)?;
    let warps =
        |n: usize| LaunchConfig { grid_dim: (n.div_ceil(8) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let small =
        LaunchConfig { grid_dim: (1, 1, 1), block_dim: (D.div_ceil(32) as u32 * 32, 1, 1), shared_mem_bytes: 0 };
    let chunk_cfg = LaunchConfig { grid_dim: (chunks as u32, 1, 1), block_dim: small.block_dim, shared_mem_bytes: 0 };
    let (r, d, c) = (rows as i32, D as i32, CHUNK as i32);
    let step_size = LR * 2.0 / N_TOTAL as f32;
    // SAFETY (every launch below): each kernel touches exactly the rows and features given, and
    // every buffer was allocated with those sizes above.
    unsafe { make_shard::launch(&stream, warps(rows), &mut x, &mut y, first, r, d)? };
    let mut step = |g: &mut CudaSlice<f32>, w: &mut CudaSlice<f32>, loss: &mut CudaSlice<f64>| -> Res<()> {
        unsafe {
            residual::launch(&stream, warps(rows), &x, w, &y, &mut res, r, d)?;
            grad_chunks::launch(&stream, chunk_cfg, &x, &res, &mut part, r, d, c)?;
            grad_sum::launch(&stream, small, &part, g, chunks as i32, d)?;
        }
        squared_sum::launch(&stream, &res, loss)?;
        comm.all_reduce_in_place(g, &ReduceOp::Sum).map_err(nccl_error)?;
        comm.all_reduce_in_place(loss, &ReduceOp::Sum).map_err(nccl_error)?;
        sgd::launch(&stream, g, step_size, w)?;
        Ok(())
    };
    step(&mut g, &mut w, &mut loss)?; // warm-up (module loads, NCCL connections)
    stream.synchronize()?;
    match start {
        Start::Threads(barrier) => {
            barrier.wait();
        }
        Start::Processes => {
            let mut token = stream.alloc_zeros::<f32>(1)?;
            comm.all_reduce_in_place(&mut token, &ReduceOp::Sum).map_err(nccl_error)?;
            stream.synchronize()?;
        }
    }
    let t0 = Instant::now();
    for _ in 1..STEPS {
        step(&mut g, &mut w, &mut loss)?;
    }
    stream.synchronize()?;
    let step_ms = t0.elapsed().as_secs_f64() * 1e3 / (STEPS - 1) as f64;
    // The loss of the weights before the last update.
    let loss = stream.clone_dtoh(&loss)?[0] / N_TOTAL as f64;
    Ok(RankResult { weights: stream.clone_dtoh(&w)?, loss, step_ms })
}

/// Checks that every rank holds rank 0's weights (NCCL gives every rank the same sum, and each
/// applies the same update), and returns the slowest step time and the largest difference.
fn agree(results: &[RankResult]) -> Res<(f64, f32)> {
    let mut worst = 0.0f32;
    for (rank, r) in results.iter().enumerate().skip(1) {
        let diff = r.weights.iter().zip(&results[0].weights).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        if diff > 1e-6 {
            return Err(format!("rank {rank}'s weights differ from rank 0's by up to {diff}").into());
        }
        worst = worst.max(diff);
    }
    Ok((results.iter().map(|r| r.step_ms).fold(0.0, f64::max), worst))
}

/// Trains on `world` GPUs, one thread each.
fn train_threads(world: usize) -> Res<((f64, f32), RankResult)> {
    let id = Id::new().map_err(nccl_error)?;
    let start = Arc::new(Barrier::new(world));
    let threads: Vec<_> = (0..world)
        .map(|rank| {
            let (id, start) = (Id::uninit(*id.internal()), Start::Threads(start.clone()));
            std::thread::spawn(move || rank_main(rank, rank, world, id, start))
        })
        .collect();
    let results: Vec<RankResult> =
        threads.into_iter().map(|t| t.join().expect("rank thread panicked")).collect::<Res<_>>()?;
    let ms = agree(&results)?;
    Ok((ms, results.into_iter().next().expect("one rank at least")))
}

/// The environment of one rank process.
const RANK_VAR: &str = "NCCL_DP_RANK";
const WORLD_VAR: &str = "NCCL_DP_WORLD";
const ID_VAR: &str = "NCCL_DP_ID_FILE";
/// Where a rank process writes its result (rank, step ms, loss, weights), for its parent.
const OUT_VAR: &str = "NCCL_DP_OUT";

fn hex(bytes: impl IntoIterator<Item = u8>) -> String {
    bytes.into_iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Res<Vec<u8>> {
    let text = text.trim();
    (0..text.len())
        .step_by(2)
        .map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or_else(|| "bad hex".into()))
        .collect()
}

/// One rank process (started by `train_processes`, or by a launcher across hosts).
fn rank_process(rank: usize, world: usize) -> Res<()> {
    let path = std::env::var(ID_VAR).map_err(|_| format!("{ID_VAR} is not set"))?;
    let bytes = unhex(&std::fs::read_to_string(&path)?)?;
    let internal: [std::ffi::c_char; 128] =
        std::array::from_fn(|i| bytes.get(i).copied().unwrap_or(0) as std::ffi::c_char);
    if bytes.len() != 128 {
        return Err(format!("{path}: an NCCL id is 128 bytes, found {}", bytes.len()).into());
    }
    let devices = cuda_embed::cudarc::driver::CudaContext::device_count()? as usize;
    let r = rank_main(rank, rank % devices, world, Id::uninit(internal), Start::Processes)?;
    if let Ok(out) = std::env::var(OUT_VAR) {
        let weights = hex(r.weights.iter().flat_map(|w| w.to_le_bytes()));
        std::fs::write(out, format!("{} {} {}\n", r.step_ms, r.loss, weights))?;
    }
    Ok(())
}

/// Trains on `world` GPUs, one process each (copies of this program).
fn train_processes(world: usize) -> Res<((f64, f32), RankResult)> {
    let dir = std::env::temp_dir().join(format!("nccl_dp_{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let id = Id::new().map_err(nccl_error)?;
    let id_file = dir.join("nccl_id");
    std::fs::write(&id_file, hex(id.internal().iter().map(|&c| c as u8)))?;
    let exe = std::env::current_exe()?;
    let children: Vec<_> = (0..world)
        .map(|rank| {
            std::process::Command::new(&exe)
                .env(RANK_VAR, rank.to_string())
                .env(WORLD_VAR, world.to_string())
                .env(ID_VAR, &id_file)
                .env(OUT_VAR, dir.join(format!("rank{rank}")))
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    for (rank, mut child) in children.into_iter().enumerate() {
        let status = child.wait()?;
        if !status.success() {
            return Err(format!("rank process {rank} failed ({status})").into());
        }
    }
    let results = (0..world)
        .map(|rank| -> Res<RankResult> {
            let text = std::fs::read_to_string(dir.join(format!("rank{rank}")))?;
            let mut parts = text.split_whitespace();
            let mut next = || parts.next().ok_or("short result file");
            let step_ms = next()?.parse()?;
            let loss = next()?.parse()?;
            let bytes = unhex(next()?)?;
            let weights = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            Ok(RankResult { weights, loss, step_ms })
        })
        .collect::<Res<Vec<_>>>()?;
    std::fs::remove_dir_all(&dir)?;
    let ms = agree(&results)?;
    Ok((ms, results.into_iter().next().expect("one rank at least")))
}

/// The all-reduce of `bytes` per rank on `world` GPUs: (time in us, algbw, busbw in GB/s), with
/// busbw computed as nccl-tests does (`algbw * 2 (n - 1) / n`).
fn all_reduce_bw(world: usize, bytes: usize) -> Res<(f64, f64, f64)> {
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
                for _ in 0..5 {
                    comm.all_reduce_in_place(&mut buf, &ReduceOp::Sum).map_err(nccl_error)?;
                }
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
    Ok((worst * 1e6, algbw, algbw * 2.0 * (world as f64 - 1.0) / world as f64))
}

fn nccl_error(e: cuda_embed::cudarc::nccl::result::NcclError) -> Box<dyn std::error::Error + Send + Sync> {
    format!("NCCL: {e:?}").into()
}

fn main() {
    let rank_env = std::env::var(RANK_VAR).ok().zip(std::env::var(WORLD_VAR).ok());
    let result = match rank_env {
        Some((rank, world)) => match (rank.parse(), world.parse()) {
            (Ok(rank), Ok(world)) => rank_process(rank, world),
            _ => Err(format!("{RANK_VAR}={rank} and {WORLD_VAR}={world} must be numbers").into()),
        },
        None => run(),
    };
    if let Err(e) = result {
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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let processes = args.first().is_some_and(|a| a == "procs");
    let max = args.iter().find_map(|a| a.parse().ok()).unwrap_or(devices).min(devices);
    let form = if processes { "one process per GPU" } else { "one thread per GPU" };
    println!("linear regression, {N_TOTAL} samples x {D} features, {STEPS} steps, on 1 to {max} GPU(s), {form}");
    println!("| GPUs | step ms | speed-up | final loss | max |w - w_true| | max weight difference between ranks |");
    println!("|---|---|---|---|---|---|");
    let w_true: Vec<f32> = (0..D).map(true_weight_host).collect();
    let mut base = None;
    let mut world = 1;
    while world <= max {
        let ((ms, spread), r) = if processes { train_processes(world)? } else { train_threads(world)? };
        let err = r.weights.iter().zip(&w_true).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        if err >= 1e-2 {
            return Err(format!("{world} GPU(s): the weights did not converge (max error {err})").into());
        }
        let base_ms = *base.get_or_insert(ms);
        println!("| {world} | {ms:.3} | {:.2}x | {:.3e} | {err:.2e} | {spread:e} |", base_ms / ms, r.loss);
        world *= 2;
    }
    if max > 1 && !processes {
        println!("\nall-reduce (sum, f32, in place), nccl-tests style: in-place time per call, algbw, busbw");
        println!("| GPUs | size | time us | algbw GB/s | busbw GB/s |");
        println!("|---|---|---|---|---|");
        let mut world = 2;
        while world <= max {
            for mib in [1usize, 16, 64, 256, 1024] {
                let (us, algbw, busbw) = all_reduce_bw(world, mib << 20)?;
                println!("| {world} | {mib} MiB | {us:.1} | {algbw:.1} | {busbw:.1} |");
            }
            world *= 2;
        }
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
