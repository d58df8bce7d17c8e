//! Bilinear image resize through a texture, checked against the CPU.
//!
//! A 640 x 360 procedural image goes into a `CudaArray<f32>`; a kernel samples it through a
//! texture with linear filtering and normalised coordinates at every pixel of a 1600 x 900 output
//! (2.5x), and the result is compared with a CPU bilinear interpolation. The texture hardware
//! computes the weights in 9-bit fixed point, so the two agree to within 2/256 of the image's
//! range, not bit for bit.
//!
//! Run with `cargo run --example texture`. Without a GPU it prints why and exits with status 2.

use cuda_embed::texture::{AddressMode, FilterMode};
use cuda_embed::{cuda_kernel, CudaArray, LaunchConfig, Texture, TextureDesc};

cuda_kernel!(
    r#"
    extern "C" __global__ void resize(cudaTextureObject_t src, float* dst, int w, int h) {
        int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
        if (x >= w || y >= h) return;
        // Normalised coordinates of the output pixel's centre: the texture spans [0, 1).
        dst[y * w + x] = tex2D<float>(src, (x + 0.5f) / w, (y + 0.5f) / h);
    }
"#
);

/// CUDA's bilinear filter with clamping, at unnormalised `(x, y)` of `img` (`w` x `h`).
fn bilinear(img: &[f32], w: usize, h: usize, x: f64, y: f64) -> f32 {
    let (xb, yb) = (x - 0.5, y - 0.5);
    let (i0, j0) = (xb.floor(), yb.floor());
    let (a, b) = (xb - i0, yb - j0);
    let at = |i: i64, j: i64| img[(j.clamp(0, h as i64 - 1) as usize) * w + i.clamp(0, w as i64 - 1) as usize] as f64;
    let (i, j) = (i0 as i64, j0 as i64);
    ((1.0 - a) * (1.0 - b) * at(i, j)
        + a * (1.0 - b) * at(i + 1, j)
        + (1.0 - a) * b * at(i, j + 1)
        + a * b * at(i + 1, j + 1)) as f32
}

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let (sw, sh) = (640usize, 360usize);
    let (dw, dh) = (1600usize, 900usize);
    let img: Vec<f32> = (0..sw * sh)
        .map(|i| {
            let (x, y) = ((i % sw) as f32, (i / sw) as f32);
            0.5 + 0.25 * (x * 0.07).sin() * (y * 0.05).cos() + 0.25 * ((x + y) as u32 % 17) as f32 / 17.0
        })
        .collect();
    let mut array = CudaArray::<f32>::new(&ctx, (sw, sh))?;
    array.copy_from_host(&stream, &img)?;
    let desc = TextureDesc::new().filter(FilterMode::Linear).address(AddressMode::Clamp).normalized_coords(true);
    let tex = Texture::new(&array, &desc)?;
    let mut dst = stream.alloc_zeros::<f32>(dw * dh)?;
    let cfg = LaunchConfig {
        grid_dim: (dw.div_ceil(16) as u32, dh.div_ceil(16) as u32, 1),
        block_dim: (16, 16, 1),
        shared_mem_bytes: 0,
    };
    unsafe { resize::launch(&stream, cfg, &tex, &mut dst, dw as i32, dh as i32)? };
    let out = stream.clone_dtoh(&dst)?;
    let (lo, hi) = img.iter().fold((f32::MAX, f32::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
    let tolerance = 2.0 / 256.0 * (hi - lo);
    let mut worst = 0.0f32;
    for (i, g) in out.iter().enumerate() {
        let (x, y) = ((i % dw) as f64, (i / dw) as f64);
        let c = bilinear(&img, sw, sh, (x + 0.5) / dw as f64 * sw as f64, (y + 0.5) / dh as f64 * sh as f64);
        worst = worst.max((g - c).abs());
    }
    println!(
        "resize {sw}x{sh} -> {dw}x{dh} through a linear-filtered texture on {}: largest difference from the CPU {worst:.6} (allowed {tolerance:.6}, 2/256 of the range)",
        ctx.name()?
    );
    if worst > tolerance {
        std::process::exit(1);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("texture example: {e}");
        std::process::exit(2);
    }
}
