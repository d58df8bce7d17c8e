//! A small GPU service on tokio (no network): clients send requests through a channel, a batcher
//! groups them, and two workers, each with its own stream and pinned buffers, upload a batch,
//! run a kernel on it and download the result, all awaited (`cuda_embed::future`), so one
//! worker's copies overlap the other's kernel. Every reply is checked against the CPU.
//!
//! It prints the overlap it achieved (the GPU's busy time, summed over the two streams, over the
//! wall time of the run) and a timeline chart made from CUDA events recorded around each stage.
//!
//! Run: `cargo run --release --example async_service` (`SERVICE_REQUESTS`, `SERVICE_ITERS`
//! change the load). Without a GPU it prints why and exits with status 2.

use cuda_embed::cudarc::driver::{sys, CudaEvent, CudaStream, PinnedHostSlice};
use cuda_embed::{cuda_kernel, future, CudaSlice, LaunchConfig};

use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

cuda_kernel!(
    r#"
    // A compute-bound transform: `iters` steps of a contraction towards 2, per element.
    extern "C" __global__ void transform(const float* x, float* y, int n, int iters) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float v = x[i];
        for (int k = 0; k < iters; ++k) v = 0.999f * v + 0.002f;
        y[i] = v;
    }
"#
);

/// Elements per request.
const M: usize = 1 << 16;
/// Requests per batch at most.
const BATCH: usize = 16;

struct Request {
    data: Vec<f32>,
    reply: oneshot::Sender<Vec<f32>>,
}

/// One stage of one batch on the GPU, from events: `(stream, stage, start ms, end ms)`.
type Span = (usize, char, f32, f32);

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn cpu_transform(x: f32, iters: usize) -> f32 {
    (0..iters).fold(x, |v, _| 0.999f32 * v + 0.002f32)
}

fn main() {
    let ctx = match cuda_embed::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("async_service: {e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().expect("tokio");
    if let Err(e) = rt.block_on(serve(ctx)) {
        eprintln!("async_service: {e}");
        std::process::exit(1);
    }
}

async fn serve(ctx: Arc<cuda_embed::CudaContext>) -> cuda_embed::Result<()> {
    let requests = env("SERVICE_REQUESTS", 512);
    let iters = env("SERVICE_ITERS", 2000);
    let timed = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let streams = [ctx.new_stream()?, ctx.new_stream()?];
    // The time origin of the chart, and a warm-up launch (the module loads here, not in a batch).
    let (x, mut y) = (streams[0].alloc_zeros::<f32>(32)?, streams[0].alloc_zeros::<f32>(32)?);
    unsafe { transform::launch_async(&streams[0], LaunchConfig::for_num_elems(32), &x, &mut y, 32, 1) }.await?;
    for s in &streams {
        future::synchronize(s).await?;
    }
    let origin = streams[0].record_event(timed)?;
    let wall = Instant::now();

    let (req_tx, mut req_rx) = mpsc::channel::<Request>(64);
    // Two workers, each fed batches through its own channel.
    let (mut work_txs, mut handles) = (Vec::new(), Vec::new());
    for (w, stream) in streams.iter().enumerate() {
        let (tx, rx) = mpsc::channel::<Vec<Request>>(2);
        work_txs.push(tx);
        handles.push(tokio::spawn(worker(w, stream.clone(), rx, iters)));
    }
    // The batcher: whatever has arrived, up to BATCH, alternating between the workers.
    let batcher = tokio::spawn(async move {
        let mut next = 0;
        while let Some(first) = req_rx.recv().await {
            let mut batch = vec![first];
            while batch.len() < BATCH {
                match req_rx.try_recv() {
                    Ok(r) => batch.push(r),
                    Err(_) => break,
                }
            }
            if work_txs[next % 2].send(batch).await.is_err() {
                break;
            }
            next += 1;
        }
    });
    // The clients: `requests` requests with different data, all in flight, each reply checked.
    let clients: Vec<_> = (0..requests)
        .map(|r| {
            let tx = req_tx.clone();
            tokio::spawn(async move {
                let data: Vec<f32> = (0..M).map(|i| ((r * 7 + i) % 1000) as f32 / 100.0).collect();
                let (reply, answer) = oneshot::channel();
                let sample: Vec<(usize, f32)> =
                    (0..8).map(|k| (k * M / 8 + r % 17, data[k * M / 8 + r % 17])).collect();
                tx.send(Request { data, reply }).await.ok()?;
                let out = answer.await.ok()?;
                // Device and CPU round `0.999 * v + 0.002` alike except for contraction into an
                // FMA: compare with a tolerance.
                Some(sample.iter().all(|&(i, x)| (out[i] - cpu_transform(x, iters)).abs() <= 1e-3))
            })
        })
        .collect();
    drop(req_tx);
    let mut correct = 0;
    for c in clients {
        if c.await.ok().flatten() == Some(true) {
            correct += 1;
        }
    }
    batcher.await.ok();
    let mut spans: Vec<Span> = Vec::new();
    let mut batches = 0;
    for h in handles {
        let (n, events) = h.await.expect("worker panicked")?;
        batches += n;
        for (w, stage, a, b) in events {
            spans.push((w, stage, origin.elapsed_ms(&a)?, origin.elapsed_ms(&b)?));
        }
    }
    let wall = wall.elapsed();
    report(requests, correct, batches, iters, &spans, wall);
    if correct != requests {
        return Err(cuda_embed::Error::Shape {
            op: "async_service".into(),
            detail: format!("{} of {requests} replies differ from the CPU", requests - correct),
        });
    }
    Ok(())
}

/// One worker: its stream, its pinned and device buffers, one batch at a time.
async fn worker(
    w: usize,
    stream: Arc<CudaStream>,
    mut rx: mpsc::Receiver<Vec<Request>>,
    iters: usize,
) -> cuda_embed::Result<(usize, Vec<(usize, char, CudaEvent, CudaEvent)>)> {
    let ctx = stream.context().clone();
    // SAFETY (of the pinned allocations): each is written before it is read. The upload buffer is
    // write-combined (the host only writes it), the download buffer is not (the host reads it).
    let mut up: PinnedHostSlice<f32> = unsafe { ctx.alloc_pinned(BATCH * M) }?;
    let mut down: PinnedHostSlice<f32> = unsafe { ctx.alloc_pinned_with_flags(BATCH * M, 0) }?;
    let mut x: CudaSlice<f32> = stream.alloc_zeros(BATCH * M)?;
    let mut y: CudaSlice<f32> = stream.alloc_zeros(BATCH * M)?;
    let timed = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (mut batches, mut events) = (0, Vec::new());
    while let Some(batch) = rx.recv().await {
        let n = batch.len() * M;
        for (r, req) in batch.iter().enumerate() {
            up.as_mut_slice()?[r * M..(r + 1) * M].copy_from_slice(&req.data);
        }
        // The pinned buffers are owned by each copy until its future resolves, and handed back.
        let a = stream.record_event(timed)?;
        up = future::copy_to_device(&stream, up, &mut x).await?;
        let b = stream.record_event(timed)?;
        events.push((w, 'U', a, b));
        let (xs, mut ys) = (x.slice(0..n), y.slice_mut(0..n));
        let cfg = LaunchConfig::for_num_elems(n as u32);
        let a = stream.record_event(timed)?;
        unsafe { transform::launch_async(&stream, cfg, &xs, &mut ys, n as i32, iters as i32) }.await?;
        let b = stream.record_event(timed)?;
        events.push((w, 'K', a, b));
        let a = stream.record_event(timed)?;
        down = future::copy_to_host(&stream, &ys, down).await?;
        let b = stream.record_event(timed)?;
        events.push((w, 'D', a, b));
        let out = down.as_slice()?;
        for (r, req) in batch.into_iter().enumerate() {
            let _ = req.reply.send(out[r * M..(r + 1) * M].to_vec());
        }
        batches += 1;
    }
    Ok((batches, events))
}

/// The overlap and the timeline chart.
fn report(requests: usize, correct: usize, batches: usize, iters: usize, spans: &[Span], wall: Duration) {
    let start = spans.iter().map(|s| s.2).fold(f32::INFINITY, f32::min);
    let end = spans.iter().map(|s| s.3).fold(0.0f32, f32::max);
    let span = (end - start).max(1e-6);
    let busy: f32 = spans.iter().map(|s| s.3 - s.2).sum();
    let per = |stage: char| spans.iter().filter(|s| s.1 == stage).map(|s| s.3 - s.2).sum::<f32>();
    println!(
        "async_service: {requests} requests of {M} floats ({correct} correct), {batches} batches of up to {BATCH}, \
         {iters} steps per element, in {:.1} ms ({:.0} requests/s)",
        wall.as_secs_f64() * 1e3,
        requests as f64 / wall.as_secs_f64()
    );
    println!(
        "GPU time: upload {:.2} ms, kernel {:.2} ms, download {:.2} ms; busy {busy:.2} ms over {span:.2} ms of GPU wall \
         time: overlap {:.2}x (1.00 = one stage at a time)",
        per('U'),
        per('K'),
        per('D'),
        busy / span
    );
    const COLS: usize = 100;
    println!("timeline ({:.2} ms per column; U upload, K kernel, D download, . idle):", span / COLS as f32);
    for w in 0..2 {
        let mut row = String::new();
        for c in 0..COLS {
            let (lo, hi) = (start + span * c as f32 / COLS as f32, start + span * (c + 1) as f32 / COLS as f32);
            let mut best = ('.', 0.0f32);
            for s in spans.iter().filter(|s| s.0 == w) {
                let overlap = s.3.min(hi) - s.2.max(lo);
                if overlap > best.1 {
                    best = (s.1, overlap);
                }
            }
            row.push(best.0);
        }
        println!("stream {w} |{row}|");
    }
}
