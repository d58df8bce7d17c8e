//! Two candle custom operations whose CUDA forward pass is a `cuda_kernel!` kernel launched on
//! candle's own stream and buffers, and whose CPU forward pass is plain Rust.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CudaStorage, CustomOp1, Layout, Shape};
use cuda_embed::{cuda_kernel, LaunchConfig};

cuda_kernel!(
    r#"
    // y = x * sigmoid(x), one thread per element.
    extern "C" __global__ void silu_f32(const float* x, float* y, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) {
            float v = x[i];
            y[i] = v / (1.0f + expf(-v));
        }
    }

    #define SOFTMAX_THREADS 256

    // Softmax of each row of a rows x cols row-major matrix; one block of SOFTMAX_THREADS
    // threads per row: a max reduction, then a sum of exponentials, then the scaled write.
    extern "C" __global__ void softmax_rows_f32(const float* x, float* y, int cols) {
        __shared__ float red[SOFTMAX_THREADS];
        const float* row = x + (size_t)blockIdx.x * cols;
        float* out = y + (size_t)blockIdx.x * cols;
        float m = __int_as_float(0xff800000);  // -infinity
        for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
        red[threadIdx.x] = m;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
            __syncthreads();
        }
        m = red[0];
        __syncthreads();
        float sum = 0.0f;
        for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(row[c] - m);
        red[threadIdx.x] = sum;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
            __syncthreads();
        }
        float inv = 1.0f / red[0];
        for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(row[c] - m) * inv;
    }
"#
);

/// Threads per block of `softmax_rows_f32` (its `SOFTMAX_THREADS`).
const SOFTMAX_THREADS: u32 = 256;

/// The `[start, end)` element range of a contiguous layout, or an error naming the operation.
fn contiguous(op: &str, layout: &Layout) -> candle_core::Result<(usize, usize)> {
    layout.contiguous_offsets().ok_or_else(|| {
        candle_core::Error::msg(format!("{op}: the input must be contiguous (call .contiguous() first)"))
    })
}

/// The f32 data of a CPU storage, or an error naming the operation.
fn cpu_f32<'a>(op: &str, storage: &'a CpuStorage) -> candle_core::Result<&'a [f32]> {
    match storage {
        CpuStorage::F32(v) => Ok(v),
        other => Err(candle_core::Error::msg(format!("{op}: only f32 is implemented, got {:?}", other.dtype()))),
    }
}

/// `x * sigmoid(x)` (SiLU), fused into one kernel on the GPU.
pub struct Silu;

impl CustomOp1 for Silu {
    fn name(&self) -> &'static str {
        "cuda-embed-silu"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let (start, end) = contiguous(self.name(), layout)?;
        let x = &cpu_f32(self.name(), storage)?[start..end];
        let y = x.iter().map(|&v| v / (1.0 + (-v).exp())).collect();
        Ok((CpuStorage::F32(y), layout.shape().clone()))
    }

    fn cuda_fwd(&self, storage: &CudaStorage, layout: &Layout) -> candle_core::Result<(CudaStorage, Shape)> {
        let (start, end) = contiguous(self.name(), layout)?;
        let n = end - start;
        let dev = &storage.device;
        // candle's own stream and buffer: the kernel reads the input in place (a view at the
        // layout's offset, no copy) and writes a buffer candle allocated on that stream.
        let stream = dev.cuda_stream();
        let x = storage.as_cuda_slice::<f32>()?.slice(start..end);
        // SAFETY: every element is written by the kernel below before anyone reads it.
        let mut y = unsafe { dev.alloc::<f32>(n) }?;
        if n > 0 {
            let cfg = LaunchConfig::for_num_elems(u32::try_from(n).map_err(candle_core::Error::wrap)?);
            // SAFETY: the kernel reads x[0..n) and writes y[0..n); both hold n f32 elements.
            unsafe { silu_f32::launch(&stream, cfg, &x, &mut y, n) }.map_err(candle_core::Error::wrap)?;
        }
        Ok((CudaStorage::wrap_cuda_slice(y, dev.clone()), layout.shape().clone()))
    }
}

/// Softmax over the last dimension (each row of the tensor viewed as `rows x cols`).
pub struct SoftmaxLastDim;

impl SoftmaxLastDim {
    /// `(rows, cols)` of the tensor seen as a matrix whose rows are its last dimension.
    fn rows_cols(layout: &Layout) -> candle_core::Result<(usize, usize)> {
        let dims = layout.dims();
        let cols = *dims.last().ok_or_else(|| candle_core::Error::msg("softmax of a scalar"))?;
        Ok((layout.shape().elem_count().checked_div(cols).unwrap_or(0), cols))
    }
}

impl CustomOp1 for SoftmaxLastDim {
    fn name(&self) -> &'static str {
        "cuda-embed-softmax-last-dim"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let (start, end) = contiguous(self.name(), layout)?;
        let x = &cpu_f32(self.name(), storage)?[start..end];
        let (_, cols) = Self::rows_cols(layout)?;
        let mut y = Vec::with_capacity(x.len());
        for row in x.chunks(cols.max(1)) {
            let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let sum: f32 = row.iter().map(|&v| (v - m).exp()).sum();
            y.extend(row.iter().map(|&v| (v - m).exp() / sum));
        }
        Ok((CpuStorage::F32(y), layout.shape().clone()))
    }

    fn cuda_fwd(&self, storage: &CudaStorage, layout: &Layout) -> candle_core::Result<(CudaStorage, Shape)> {
        let (start, end) = contiguous(self.name(), layout)?;
        let (rows, cols) = Self::rows_cols(layout)?;
        let dev = &storage.device;
        let stream = dev.cuda_stream();
        let x = storage.as_cuda_slice::<f32>()?.slice(start..end);
        // SAFETY: the kernel writes every element of every row before anyone reads it.
        let mut y = unsafe { dev.alloc::<f32>(end - start) }?;
        if rows > 0 && cols > 0 {
            let cfg = LaunchConfig {
                grid_dim: (u32::try_from(rows).map_err(candle_core::Error::wrap)?, 1, 1),
                block_dim: (SOFTMAX_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let cols = i32::try_from(cols).map_err(candle_core::Error::wrap)?;
            // SAFETY: block r reads row r of x and writes row r of y, rows * cols elements each,
            // which is what both buffers hold; blockDim.x is SOFTMAX_THREADS (the shared array).
            unsafe { softmax_rows_f32::launch(&stream, cfg, &x, &mut y, cols) }.map_err(candle_core::Error::wrap)?;
        }
        Ok((CudaStorage::wrap_cuda_slice(y, dev.clone()), layout.shape().clone()))
    }
}
