//! # candle interop: a candle `CustomOp1` whose CUDA forward pass is a `cuda_kernel!` kernel
//!
//! [`ops::Silu`] (`x * sigmoid(x)`) and [`ops::SoftmaxLastDim`] implement candle's `CustomOp1`:
//! `cpu_fwd` is plain Rust, `cuda_fwd` launches a `cuda_kernel!` launcher on candle's own stream
//! (`CudaDevice::cuda_stream()`) with candle's own `CudaSlice<f32>` (a view at the layout's
//! offset, no copy) and returns a buffer candle allocated, wrapped as a `CudaStorage`.
//!
//! `main` runs both operations on a few shapes (and on a narrowed tensor, so the input starts at
//! an offset) on the GPU and checks them against candle's CPU results: candle's built-in `silu`
//! and a softmax composed of candle ops, and the operations' own `cpu_fwd`. It prints the largest
//! error of each and exits 1 when one is over its tolerance, 2 (with a message) when there is no
//! CUDA GPU.
//!
//! ## Building
//!
//! candle-core 0.11.1 (`cuda` feature) makes cudarc link the CUDA libraries at build time
//! (`dynamic-linking`) and take the CUDA version from nvcc (`cuda-version-from-build-system`).
//! cudarc accepts one linking mode, so this crate depends on cuda-embed with
//! `default-features = false, features = ["dynamic-linking"]` (cuda-embed's default is
//! `dynamic-loading` + `cuda-13000`). From the repository root:
//!
//! ```text
//! scripts/candle-example build --release     # or: scripts/candle-example run --release
//! ```
//!
//! which runs cargo here under `scripts/with-cuda` with `CUDA_COMPUTE_CAP=90` (candle-kernels
//! compiles all of candle's kernels with nvcc for that one architecture; a clean release build
//! took 41 minutes on a 2-core machine shared with other builds, 17 of them in candle-kernels).
//! The linker needs `libcuda.so`, `libcublas.so`, `libcublasLt.so`, `libcurand.so`,
//! `libnvrtc.so` and `libcudart.so`: a CUDA toolkit provides them; where it does not, `build.rs`
//! links against the real NVRTC/cudart of the pinned compiler wheels and builds link-only stubs
//! for the others (it says so in a cargo warning). At run time the real libraries are loaded (the
//! driver's and the toolkit's); `gpu-run.sh` runs a copied binary on a GPU machine without Rust.

mod ops;

use std::process::ExitCode;

use candle_core::{Device, Tensor, D};

/// Deterministic inputs in [-8, 8): a small linear congruential generator.
fn input(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..rows * cols)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 16.0 - 8.0
        })
        .collect()
}

/// The largest absolute difference between two tensors of the same shape (moved to the CPU).
fn max_err(a: &Tensor, b: &Tensor) -> candle_core::Result<f32> {
    let a = a.to_device(&Device::Cpu)?.flatten_all()?.to_vec1::<f32>()?;
    let b = b.to_device(&Device::Cpu)?.flatten_all()?.to_vec1::<f32>()?;
    if a.len() != b.len() {
        candle_core::bail!("length {} against {}", a.len(), b.len());
    }
    Ok(a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max))
}

/// Softmax over the last dimension from candle's own tensor operations (the reference).
fn candle_softmax(x: &Tensor) -> candle_core::Result<Tensor> {
    let m = x.max_keepdim(D::Minus1)?;
    let e = x.broadcast_sub(&m)?.exp()?;
    e.broadcast_div(&e.sum_keepdim(D::Minus1)?)
}

/// One shape: both operations on the GPU against the CPU references. Returns whether all errors
/// are within tolerance.
fn check(gpu: &Device, rows: usize, cols: usize, narrow: bool) -> candle_core::Result<bool> {
    let data = input(rows, cols, (rows * 31 + cols) as u64);
    let mut cpu_x = Tensor::from_vec(data, (rows, cols), &Device::Cpu)?;
    let mut gpu_x = cpu_x.to_device(gpu)?;
    if narrow {
        // Drop the first row: the tensor stays contiguous but starts at an offset into the
        // buffer, which the GPU path reads in place through a view.
        cpu_x = cpu_x.narrow(0, 1, rows - 1)?;
        gpu_x = gpu_x.narrow(0, 1, rows - 1)?;
    }
    let label = format!("{}x{}{}", cpu_x.dim(0)?, cols, if narrow { " (narrowed)" } else { "" });

    let silu_gpu = gpu_x.apply_op1_no_bwd(&ops::Silu)?;
    let silu_ref = cpu_x.silu()?; // candle's built-in, on the CPU
    let silu_own = cpu_x.apply_op1_no_bwd(&ops::Silu)?; // the op's cpu_fwd
    let silu_candle_gpu = gpu_x.silu()?; // candle's built-in, on the GPU
    let e_silu = max_err(&silu_gpu, &silu_ref)?;
    let e_silu_own = max_err(&silu_gpu, &silu_own)?;
    let e_silu_gpu = max_err(&silu_gpu, &silu_candle_gpu)?;

    let sm_gpu = gpu_x.apply_op1_no_bwd(&ops::SoftmaxLastDim)?;
    let sm_ref = candle_softmax(&cpu_x)?;
    let sm_own = cpu_x.apply_op1_no_bwd(&ops::SoftmaxLastDim)?;
    let e_sm = max_err(&sm_gpu, &sm_ref)?;
    let e_sm_own = max_err(&sm_gpu, &sm_own)?;
    // Each softmax row sums to one.
    let row_sums = sm_gpu.sum_keepdim(D::Minus1)?.to_device(&Device::Cpu)?.flatten_all()?.to_vec1::<f32>()?;
    let e_sum = row_sums.iter().map(|s| (s - 1.0).abs()).fold(0.0, f32::max);

    // SiLU of values in [-8, 8) is below 8 in magnitude; expf on the GPU is within 2 ulp.
    let ok =
        e_silu <= 1e-5 && e_silu_own <= 1e-5 && e_silu_gpu <= 1e-5 && e_sm <= 1e-6 && e_sm_own <= 1e-6 && e_sum <= 1e-5;
    println!(
        "{label:>20} | silu: {e_silu:.2e} (candle cpu) {e_silu_own:.2e} (cpu_fwd) {e_silu_gpu:.2e} (candle gpu) \
         | softmax: {e_sm:.2e} (candle cpu) {e_sm_own:.2e} (cpu_fwd), row sums {e_sum:.2e} | {}",
        if ok { "ok" } else { "OVER TOLERANCE" }
    );
    Ok(ok)
}

fn main() -> ExitCode {
    let gpu = match Device::new_cuda(0) {
        Ok(d) => d,
        Err(e) => {
            // candle's error carries a backtrace after the first line.
            let e = e.to_string();
            eprintln!(
                "candle example: no CUDA GPU available ({}); this example needs one",
                e.lines().next().unwrap_or("")
            );
            return ExitCode::from(2);
        }
    };
    println!("kernel module: {}", ops::silu_f32::module().build_info());
    println!("max |GPU custom op - reference| per shape:");
    let shapes =
        [(1, 1000, false), (7, 33, false), (64, 1024, false), (3, 5000, false), (128, 4096, true), (1000, 77, true)];
    let mut all_ok = true;
    for (rows, cols, narrow) in shapes {
        match check(&gpu, rows, cols, narrow) {
            Ok(ok) => all_ok &= ok,
            Err(e) => {
                eprintln!("candle example: {rows}x{cols} failed: {e}");
                return ExitCode::from(1);
            }
        }
    }
    if all_ok {
        println!("all shapes within tolerance");
        ExitCode::SUCCESS
    } else {
        println!("some shapes over tolerance");
        ExitCode::from(1)
    }
}
