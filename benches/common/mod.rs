//! Timing shared by the bench binaries (each includes this file as `mod common;`).
#![allow(dead_code)]

use cuda_embed::cudarc::driver::{sys, CudaStream};
use std::sync::Arc;

/// The median of `v` (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median GPU milliseconds per call of `f`: `warmup` calls first, then `reps` repetitions of CUDA
/// events around `inner` back-to-back calls.
pub fn gpu_ms(
    stream: &Arc<CudaStream>,
    (warmup, reps, inner): (usize, usize, usize),
    mut f: impl FnMut() -> cuda_embed::Result<()>,
) -> cuda_embed::Result<f64> {
    for _ in 0..warmup {
        f()?;
    }
    let ctx = stream.context();
    let mut v = Vec::with_capacity(reps);
    for _ in 0..reps {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let (a, b) = (ctx.new_event(flags)?, ctx.new_event(flags)?);
        a.record(stream)?;
        for _ in 0..inner {
            f()?;
        }
        b.record(stream)?;
        b.synchronize()?;
        v.push(a.elapsed_ms(&b)? as f64 / inner as f64);
    }
    Ok(median(v))
}

/// The `p` quantile (0 to 1) of sorted `v`, interpolated linearly between neighbours.
fn quantile(sorted: &[f64], p: f64) -> f64 {
    let x = p * (sorted.len() - 1) as f64;
    let (i, frac) = (x.floor() as usize, x - x.floor());
    match sorted.get(i + 1) {
        Some(next) => sorted[i] + frac * (next - sorted[i]),
        None => sorted[i],
    }
}

/// The paired estimator: in round `i` a method and its reference ran back to back, so
/// `ours[i] / reference[i]` is one round's ratio, free of drift slower than a round. Summarised
/// by the median ratio, the interquartile range of the single rounds' ratios (how much one round
/// says) and a distribution-free 95% confidence interval of the median (how well the median is
/// known: the order statistics at ranks n/2 - 0.98 sqrt(n) and 1 + n/2 + 0.98 sqrt(n)).
pub struct Paired {
    pub median: f64,
    pub q1: f64,
    pub q3: f64,
    pub ci: (f64, f64),
    pub rounds: usize,
}

impl Paired {
    /// Per-round ratios `ours[i] / reference[i]` (same number of rounds in both).
    pub fn new(ours: &[f64], reference: &[f64]) -> Paired {
        assert_eq!(ours.len(), reference.len(), "paired rounds");
        assert!(!ours.is_empty(), "no rounds");
        let mut r: Vec<f64> = ours.iter().zip(reference).map(|(o, r)| o / r).collect();
        r.sort_by(|a, b| a.total_cmp(b));
        let n = r.len();
        let half = 0.98 * (n as f64).sqrt();
        let lo = ((n as f64 / 2.0 - half).floor().max(1.0) as usize).min(n) - 1;
        let hi = ((1.0 + n as f64 / 2.0 + half).ceil() as usize).clamp(1, n) - 1;
        Paired {
            median: quantile(&r, 0.5),
            q1: quantile(&r, 0.25),
            q3: quantile(&r, 0.75),
            ci: (r[lo], r[hi]),
            rounds: n,
        }
    }

    /// Three table cells: the median ratio, the IQR, the confidence interval
    /// (`**1.0123x** | 1.0050-1.0200 | 1.0110-1.0135`).
    pub fn cell(&self) -> String {
        format!("**{:.4}x** | {:.4}-{:.4} | {:.4}-{:.4}", self.median, self.q1, self.q3, self.ci.0, self.ci.1)
    }
}

/// The header of a table of [`Paired::cell`]s.
pub fn paired_header(what: &str, rounds: usize) -> String {
    format!(
        "| {what} | paired: median of {rounds} per-round ratios | IQR of the rounds | 95% CI of the median |\n|---|---|---|---|"
    )
}

/// `name` from the environment as a count, else `default` (bench sizes the lead can change on
/// the GPU machine without a rebuild).
pub fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!("{name}={v:?} is not a count; using {default}");
            default
        }),
        Err(_) => default,
    }
}

/// Pins the calling thread to one CPU (`sched_setaffinity`, glibc's own symbol: no new
/// dependency), so the timed loop is not moved between cores mid-round: the CPU it is running
/// on, or `BENCH_CPU=N`; `BENCH_PIN=0` leaves it unpinned. Threads started before (the
/// driver's) keep their affinity. Returns a line saying what was done, for the output.
pub fn pin_to_one_cpu() -> String {
    if std::env::var("BENCH_PIN").is_ok_and(|v| v == "0") {
        return "CPU pinning: off (BENCH_PIN=0)".into();
    }
    pin::pin()
}

#[cfg(target_os = "linux")]
mod pin {
    use std::ffi::c_int;

    /// glibc's `cpu_set_t`: 1024 CPUs, one bit each.
    #[repr(C)]
    struct CpuSet([u64; 16]);

    extern "C" {
        fn sched_getcpu() -> c_int;
        fn sched_setaffinity(pid: c_int, size: usize, set: *const CpuSet) -> c_int;
    }

    pub fn pin() -> String {
        let cpu = match std::env::var("BENCH_CPU") {
            Ok(v) => match v.trim().parse::<usize>() {
                Ok(n) => n,
                Err(_) => return format!("CPU pinning: not done (BENCH_CPU={v:?} is not a CPU number)"),
            },
            // SAFETY: no arguments; returns the CPU number or -1.
            Err(_) => match unsafe { sched_getcpu() } {
                n if n >= 0 => n as usize,
                _ => return format!("CPU pinning: not done (sched_getcpu: {})", std::io::Error::last_os_error()),
            },
        };
        if cpu >= 1024 {
            return format!("CPU pinning: not done (CPU {cpu} is past the 1024 of cpu_set_t)");
        }
        let mut set = CpuSet([0; 16]);
        set.0[cpu / 64] |= 1 << (cpu % 64);
        // SAFETY: pid 0 is the calling thread; `set` is a live cpu_set_t of the size passed.
        if unsafe { sched_setaffinity(0, std::mem::size_of::<CpuSet>(), &set) } != 0 {
            return format!("CPU pinning: not done (sched_setaffinity: {})", std::io::Error::last_os_error());
        }
        format!(
            "CPU pinning: the timing thread runs on CPU {cpu} only (sched_setaffinity after the context exists: \
             threads the driver started before keep their affinity, threads started later inherit this one)"
        )
    }
}

#[cfg(not(target_os = "linux"))]
mod pin {
    pub fn pin() -> String {
        "CPU pinning: not done (not Linux)".into()
    }
}
