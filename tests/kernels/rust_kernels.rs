// The Rust-syntax kernels shared by tests/rust_kernel.rs and benches/rust_kernel.rs (included
// with `include!`), each beside the same algorithm as a `cuda_kernel!` C++ kernel.

use cuda_embed::device::*;

/// y = a * x + y, bounds-checked (the default).
#[cuda_embed::kernel]
pub fn saxpy_checked(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// y = a * x + y, unchecked.
#[cuda_embed::kernel(bounds_checks = false)]
pub fn saxpy_rs(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// Sum of `x` into `out[0]`: grid-stride accumulation, a shared-memory tree per block of 256.
#[cuda_embed::kernel(bounds_checks = false)]
pub fn block_sum_rs(x: &[f32], out: &mut [f32]) {
    let tile = shared::<f32, 256>();
    let t = thread_idx().x as usize;
    let mut i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    let stride = (grid_dim().x * block_dim().x) as usize;
    let mut acc = 0.0;
    while i < x.len() {
        acc += x[i];
        i += stride;
    }
    tile[t] = acc;
    sync_threads();
    let mut s = 128;
    while s > 0 {
        if t < s {
            tile[t] += tile[t + s];
        }
        sync_threads();
        s /= 2;
    }
    if t == 0 {
        atomic_add(&mut out[0], tile[0]);
    }
}

/// Sum of `x` into `out[0]`: grid-stride accumulation, a shuffle tree per warp.
#[cuda_embed::kernel(bounds_checks = false)]
pub fn warp_sum_rs(x: &[f32], out: &mut [f32]) {
    let mut i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    let stride = (grid_dim().x * block_dim().x) as usize;
    let mut acc = 0.0f32;
    while i < x.len() {
        acc += x[i];
        i += stride;
    }
    let mut d = 16u32;
    while d > 0 {
        acc += shfl_down_sync(0xffffffff, acc, d);
        d /= 2;
    }
    if thread_idx().x % 32 == 0 {
        atomic_add(&mut out[0], acc);
    }
}

/// One Jacobi-style 5-point step on a `w` x `h` grid (interior points).
#[cuda_embed::kernel(bounds_checks = false)]
pub fn stencil_rs(w: u32, h: u32, a: &[f32], b: &mut [f32]) {
    let x = block_idx().x * block_dim().x + thread_idx().x;
    let y = block_idx().y * block_dim().y + thread_idx().y;
    if x >= 1 && y >= 1 && x + 1 < w && y + 1 < h {
        let i = (y * w + x) as usize;
        let wu = w as usize;
        b[i] = 0.25 * (a[i - 1] + a[i + 1] + a[i - wu] + a[i + wu]) - a[i];
    }
}

/// `b` (h x w... transposed) = transpose of `a` (`h` rows of `w`), through a 32 x 33 shared tile;
/// blocks of 32 x 8 threads.
#[cuda_embed::kernel(bounds_checks = false)]
pub fn transpose_rs(w: u32, h: u32, a: &[f32], b: &mut [f32]) {
    let tile = shared::<f32, { 32 * 33 }>();
    let bx = block_idx().x * 32;
    let by = block_idx().y * 32;
    let tx = thread_idx().x;
    let ty = thread_idx().y;
    for j in (0..32u32).step_by(8) {
        let x = bx + tx;
        let y = by + ty + j;
        if x < w && y < h {
            tile[((ty + j) * 33 + tx) as usize] = a[(y * w + x) as usize];
        }
    }
    sync_threads();
    for j in (0..32u32).step_by(8) {
        let x = by + tx;
        let y = bx + ty + j;
        if x < h && y < w {
            b[(y * h + x) as usize] = tile[(tx * 33 + ty + j) as usize];
        }
    }
}

cuda_embed::cuda_kernel!(
    r#"
    extern "C" __global__ void saxpy_cpp(float a, const float* __restrict__ x, float* __restrict__ y, size_t n) {
        size_t i = (size_t)(blockIdx.x * blockDim.x + threadIdx.x);
        if (i < n) y[i] = a * x[i] + y[i];
    }

    extern "C" __global__ void block_sum_cpp(const float* __restrict__ x, size_t n, float* __restrict__ out) {
        __shared__ float tile[256];
        size_t t = threadIdx.x;
        size_t i = (size_t)(blockIdx.x * blockDim.x + threadIdx.x);
        size_t stride = (size_t)(gridDim.x * blockDim.x);
        float acc = 0.0f;
        while (i < n) { acc += x[i]; i += stride; }
        tile[t] = acc;
        __syncthreads();
        for (size_t s = 128; s > 0; s /= 2) {
            if (t < s) tile[t] += tile[t + s];
            __syncthreads();
        }
        if (t == 0) atomicAdd(&out[0], tile[0]);
    }

    extern "C" __global__ void warp_sum_cpp(const float* __restrict__ x, size_t n, float* __restrict__ out) {
        size_t i = (size_t)(blockIdx.x * blockDim.x + threadIdx.x);
        size_t stride = (size_t)(gridDim.x * blockDim.x);
        float acc = 0.0f;
        while (i < n) { acc += x[i]; i += stride; }
        for (unsigned d = 16; d > 0; d /= 2) acc += __shfl_down_sync(0xffffffffu, acc, d);
        if (threadIdx.x % 32 == 0) atomicAdd(&out[0], acc);
    }

    extern "C" __global__ void stencil_cpp(unsigned w, unsigned h, const float* __restrict__ a, float* __restrict__ b) {
        unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
        unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
        if (x >= 1 && y >= 1 && x + 1 < w && y + 1 < h) {
            size_t i = (size_t)(y * w + x);
            size_t wu = w;
            b[i] = 0.25f * (a[i - 1] + a[i + 1] + a[i - wu] + a[i + wu]) - a[i];
        }
    }

    extern "C" __global__ void transpose_cpp(unsigned w, unsigned h, const float* __restrict__ a, float* __restrict__ b) {
        __shared__ float tile[32 * 33];
        unsigned bx = blockIdx.x * 32, by = blockIdx.y * 32, tx = threadIdx.x, ty = threadIdx.y;
        for (unsigned j = 0; j < 32; j += 8) {
            unsigned x = bx + tx, y = by + ty + j;
            if (x < w && y < h) tile[(ty + j) * 33 + tx] = a[(size_t)(y * w + x)];
        }
        __syncthreads();
        for (unsigned j = 0; j < 32; j += 8) {
            unsigned x = by + tx, y = bx + ty + j;
            if (x < h && y < w) b[(size_t)(y * h + x)] = tile[tx * 33 + ty + j];
        }
    }
"#
);
