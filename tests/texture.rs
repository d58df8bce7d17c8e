//! Textures and surfaces on the GPU, checked against the CPU.
//!
//! Linear filtering is compared with a CPU bilinear interpolation that follows the CUDA
//! programming guide's definition (`x - 0.5`, the address mode applied to the texel indices). The
//! hardware computes each axis' weight in 9-bit fixed point (8 bits of fraction), so each weight
//! may be off by up to 1/256 and a 2-D result by up to 2/256 of the texels' range; the tests
//! allow that (`TOLERANCE`) and print the largest error seen. Point sampling, `tex1Dfetch` and
//! surfaces are compared exactly.
//!
//! GPU tests are `#[ignore = "needs a CUDA GPU"]`; the descriptor checks at the end need none.

use cuda_embed::texture::{AddressMode, FilterMode, ReadMode, Surface, Texture, TextureDesc};
use cuda_embed::{cuda_kernel, CudaArray, CudaContext, CudaStream, Error, Float2, LaunchConfig};
use std::sync::Arc;

/// Largest allowed difference from the exact bilinear interpolation, as a fraction of the
/// texels' range: two 8-bit-fraction weights.
const TOLERANCE: f32 = 2.0 / 256.0;

cuda_kernel!(
    r#"
    extern "C" __global__ void sample2d(cudaTextureObject_t t, const float2* at, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = tex2D<float>(t, at[i].x, at[i].y);
    }
    extern "C" __global__ void fetch1d(cudaTextureObject_t t, int* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = tex1Dfetch<int>(t, i);
    }
    extern "C" __global__ void sample3d(cudaTextureObject_t t, float* out, int w, int h, int d) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= w * h * d) return;
        int x = i % w, y = (i / w) % h, z = i / (w * h);
        out[i] = tex3D<float>(t, x + 0.5f, y + 0.5f, z + 0.5f);
    }
    extern "C" __global__ void write_surface(cudaSurfaceObject_t s, int w, int h) {
        int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
        if (x < w && y < h) surf2Dwrite(0.5f * (y * 1000 + x), s, x * (int)sizeof(float), y);
    }
    extern "C" __global__ void spin(long long cycles) {
        long long start = clock64();
        while (clock64() - start < cycles) {}
    }
    extern "C" __global__ void read_surface(cudaSurfaceObject_t s, float* out, int w, int h) {
        int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
        if (x < w && y < h) out[y * w + x] = surf2Dread<float>(s, x * (int)sizeof(float), y);
    }
"#
);

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("these tests need a CUDA GPU")
}

/// A small deterministic generator (no dependency): values in `[0, 1)`.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Clamp,
    Wrap,
    Border,
}

/// CUDA's bilinear filtering of `img` (`w` x `h`, row-major) at unnormalised `(x, y)`.
fn bilinear(img: &[f32], w: usize, h: usize, x: f32, y: f32, mode: Mode) -> f32 {
    let (xb, yb) = (x as f64 - 0.5, y as f64 - 0.5);
    let (i0, j0) = (xb.floor(), yb.floor());
    let (a, b) = (xb - i0, yb - j0);
    let at = |i: i64, j: i64| -> f64 {
        let (w, h) = (w as i64, h as i64);
        let (i, j) = match mode {
            Mode::Clamp => (i.clamp(0, w - 1), j.clamp(0, h - 1)),
            Mode::Wrap => (i.rem_euclid(w), j.rem_euclid(h)),
            Mode::Border => {
                if i < 0 || j < 0 || i >= w || j >= h {
                    return 0.0;
                }
                (i, j)
            }
        };
        img[(j * w + i) as usize] as f64
    };
    let (i, j) = (i0 as i64, j0 as i64);
    ((1.0 - a) * (1.0 - b) * at(i, j)
        + a * (1.0 - b) * at(i + 1, j)
        + (1.0 - a) * b * at(i, j + 1)
        + a * b * at(i + 1, j + 1)) as f32
}

/// Samples `tex` at `coords` on the GPU.
fn sample(stream: &Arc<CudaStream>, tex: &Texture, coords: &[Float2]) -> Vec<f32> {
    let at = stream.clone_htod(coords).unwrap();
    let mut out = stream.alloc_zeros::<f32>(coords.len()).unwrap();
    let n = coords.len() as i32;
    unsafe { sample2d::launch(stream, LaunchConfig::for_num_elems(n as u32), tex, &at, &mut out, n).unwrap() };
    stream.clone_dtoh(&out).unwrap()
}

/// The largest difference between `gpu` and the CPU filter at each coordinate (unnormalised),
/// asserted under `TOLERANCE` (the image's range is `[0, 1]`).
fn compare(label: &str, gpu: &[f32], cpu: impl Fn(usize) -> f32) {
    let mut worst = 0.0f32;
    for (i, g) in gpu.iter().enumerate() {
        let c = cpu(i);
        let d = (g - c).abs();
        assert!(d <= TOLERANCE, "{label}: sample {i}: GPU {g}, CPU {c} (difference {d} > {TOLERANCE})");
        worst = worst.max(d);
    }
    println!("{label}: {} samples, largest difference {worst:.6} (allowed {TOLERANCE:.6})", gpu.len());
}

fn image(w: usize, h: usize, seed: u64) -> Vec<f32> {
    let mut r = Lcg(seed);
    (0..w * h).map(|_| r.next()).collect()
}

fn coords(n: usize, lo: (f32, f32), hi: (f32, f32), seed: u64) -> Vec<Float2> {
    let mut r = Lcg(seed);
    (0..n).map(|_| Float2 { x: lo.0 + (hi.0 - lo.0) * r.next(), y: lo.1 + (hi.1 - lo.1) * r.next() }).collect()
}

/// An error cudarc recorded for its next call (one that could not be returned where it
/// happened) must not cut short the wait of a texture's and an array's drop: the handles are
/// destroyed only after the kernels queued to sample them have run, and the recorded error is
/// left for the caller's next cudarc call. (Before, the drops' `synchronize` returned that error
/// at once, destroyed the handles under the queued kernel, and swallowed the error.)
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_deferred_error_does_not_cut_the_drops_wait_short() {
    use cuda_embed::cudarc::driver::{sys::CUresult, DriverError};
    // A handle of its own: cudarc keeps a recorded error per handle, and `context()` hands every
    // caller one shared handle, so the other tests running meanwhile would take the error.
    let ctx = CudaContext::new(0).expect("these tests need a CUDA GPU");
    let stream = ctx.new_stream().unwrap();
    let (w, h) = (64usize, 32usize);
    let img = image(w, h, 5);
    let at: Vec<Float2> = (0..w * h).map(|i| Float2 { x: (i % w) as f32 + 0.5, y: (i / w) as f32 + 0.5 }).collect();
    let at = stream.clone_htod(&at).unwrap();
    let mut out = stream.alloc_zeros::<f32>(w * h).unwrap();
    {
        let mut array = CudaArray::<f32>::new(&ctx, (w, h)).unwrap();
        array.copy_from_host(&stream, &img).unwrap();
        let tex = Texture::new(&array, &TextureDesc::new()).unwrap();
        let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        let n = (w * h) as i32;
        // About 0.1 s of a busy stream, then the kernel that samples the texture.
        unsafe { spin::launch(&stream, one, 200_000_000).unwrap() };
        unsafe { sample2d::launch(&stream, LaunchConfig::for_num_elems(n as u32), &tex, &at, &mut out, n).unwrap() };
        ctx.record_err::<()>(Err(DriverError(CUresult::CUDA_ERROR_NOT_READY)));
        // `tex` and `array` are dropped here, while `sample2d` is still queued behind `spin`.
    }
    assert_eq!(ctx.check_err(), Err(DriverError(CUresult::CUDA_ERROR_NOT_READY)), "the recorded error is kept");
    assert_eq!(stream.clone_dtoh(&out).unwrap(), img, "the kernel sampled the texture before it was destroyed");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_filtering_with_clamp_and_border_matches_cpu_bilinear() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let (w, h) = (37, 23);
    let img = image(w, h, 1);
    let mut array = CudaArray::<f32>::new(&ctx, (w, h)).unwrap();
    array.copy_from_host(&stream, &img).unwrap();
    // Unnormalised coordinates, well outside the image on every side.
    let at = coords(20_000, (-4.0, -4.0), (w as f32 + 4.0, h as f32 + 4.0), 2);
    for (mode, address) in [(Mode::Clamp, AddressMode::Clamp), (Mode::Border, AddressMode::Border)] {
        let tex = Texture::new(&array, &TextureDesc::new().filter(FilterMode::Linear).address(address)).unwrap();
        let gpu = sample(&stream, &tex, &at);
        compare(&format!("2-D linear, {address:?}, unnormalised"), &gpu, |i| {
            bilinear(&img, w, h, at[i].x, at[i].y, mode)
        });
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_filtering_with_wrap_and_normalized_coordinates_matches_cpu_bilinear() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let (w, h) = (16, 10);
    let img = image(w, h, 3);
    let array = {
        let mut a = CudaArray::<f32>::new(&ctx, (w, h)).unwrap();
        a.copy_from_host(&stream, &img).unwrap();
        Arc::new(a)
    };
    let at = coords(20_000, (-1.5, -1.5), (2.5, 2.5), 4);
    let desc = TextureDesc::new().filter(FilterMode::Linear).address(AddressMode::Wrap).normalized_coords(true);
    // Shared ownership: the texture keeps the array alive by itself.
    let tex = Texture::shared(array.clone(), &desc).unwrap();
    drop(array);
    let gpu = sample(&stream, &tex, &at);
    compare("2-D linear, Wrap, normalised", &gpu, |i| {
        bilinear(&img, w, h, at[i].x * w as f32, at[i].y * h as f32, Mode::Wrap)
    });
    // Clamp with normalised coordinates: x = u * width.
    let clamp = TextureDesc::new().filter(FilterMode::Linear).normalized_coords(true);
    let mut a = CudaArray::<f32>::new(&ctx, (w, h)).unwrap();
    a.copy_from_host(&stream, &img).unwrap();
    let tex = Texture::new(&a, &clamp).unwrap();
    let gpu = sample(&stream, &tex, &at);
    compare("2-D linear, Clamp, normalised", &gpu, |i| {
        bilinear(&img, w, h, at[i].x * w as f32, at[i].y * h as f32, Mode::Clamp)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bytes_read_as_normalized_floats_filter_linearly() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let (w, h) = (19, 11);
    let bytes: Vec<u8> = image(w, h, 5).iter().map(|v| (v * 255.0) as u8).collect();
    let mut array = CudaArray::<u8>::new(&ctx, (w, h)).unwrap();
    array.copy_from_host(&stream, &bytes).unwrap();
    assert_eq!(array.to_host_vec(&stream).unwrap(), bytes);
    let desc = TextureDesc::new().filter(FilterMode::Linear).read_mode(ReadMode::NormalizedFloat);
    let tex = Texture::new(&array, &desc).unwrap();
    let at = coords(10_000, (-1.0, -1.0), (w as f32 + 1.0, h as f32 + 1.0), 6);
    let gpu = sample(&stream, &tex, &at);
    let img: Vec<f32> = bytes.iter().map(|b| *b as f32 / 255.0).collect();
    compare("2-D linear, u8 as normalised float", &gpu, |i| bilinear(&img, w, h, at[i].x, at[i].y, Mode::Clamp));
}

/// The first element of `buf` at the device's texture alignment (cudarc's allocator may give
/// less alignment than textures over linear memory need).
fn aligned_offset<T>(ctx: &CudaContext, buf: &cuda_embed::CudaSlice<T>, stream: &Arc<CudaStream>) -> usize {
    use cuda_embed::cudarc::driver::{sys::CUdevice_attribute, DevicePtr};
    let align = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT).unwrap() as u64;
    let (ptr, _record) = buf.device_ptr(stream);
    (((align - ptr % align) % align) as usize) / std::mem::size_of::<T>()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_texture_over_a_slice_fetches_exactly() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = 100_000usize;
    let data: Vec<i32> = (0..n as i32).map(|i| i.wrapping_mul(2_654_435_761u32 as i32)).collect();
    let mut buf = stream.alloc_zeros::<i32>(n + 1024).unwrap();
    stream.memcpy_htod(&data, &mut buf.slice_mut(0..n)).unwrap();
    let fresh = Texture::linear(&buf, ReadMode::ElementType);
    println!("texture over a fresh allocation: {:?}", fresh.as_ref().map(|_| "ok"));
    drop(fresh);
    let off = aligned_offset(&ctx, &buf, &stream);
    stream.memcpy_htod(&data, &mut buf.slice_mut(off..off + n)).unwrap();
    let aligned = buf.slice(off..off + n);
    let tex = Texture::linear(&aligned, ReadMode::ElementType).unwrap();
    // Four past the end: a linear texture reads zero there.
    let mut out = stream.alloc_zeros::<i32>(n + 4).unwrap();
    let m = (n + 4) as i32;
    unsafe { fetch1d::launch(&stream, LaunchConfig::for_num_elems(m as u32), &tex, &mut out, m).unwrap() };
    let got = stream.clone_dtoh(&out).unwrap();
    assert_eq!(&got[..n], &data[..]);
    assert_eq!(&got[n..], &[0; 4]);
    // The same through the `Kernel` value and a tuple of arguments.
    let mut out2 = stream.alloc_zeros::<i32>(n).unwrap();
    unsafe {
        fetch1d::KERNEL.launch(&stream, LaunchConfig::for_num_elems(n as u32), (&tex, &mut out2, n as i32)).unwrap()
    };
    assert_eq!(stream.clone_dtoh(&out2).unwrap(), data);
    println!("1-D linear texture over a CudaSlice<i32>: {n} exact fetches");

    // A misaligned view is refused with the alignment named.
    let view = buf.slice(off + 1..off + n);
    let e = Texture::linear(&view, ReadMode::ElementType).unwrap_err();
    assert!(matches!(e, Error::Texture { .. }), "{e}");
    assert!(e.to_string().contains("texture alignment"), "{e}");
    println!("misaligned view: {e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pitched_2d_texture_filters_like_an_array() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let (w, h) = (21, 13);
    let pitch = 32; // 128 bytes per row: a multiple of the pitch alignment
    let img = image(w, h, 7);
    let mut buf = stream.alloc_zeros::<f32>(pitch * h + 1024).unwrap();
    let off = aligned_offset(&ctx, &buf, &stream);
    let mut rows = vec![0.0f32; buf.len()];
    for y in 0..h {
        rows[off + y * pitch..off + y * pitch + w].copy_from_slice(&img[y * w..(y + 1) * w]);
    }
    stream.memcpy_htod(&rows, &mut buf).unwrap();
    let view = buf.slice(off..off + pitch * h);
    // Sizes whose element count overflows are refused (they used to wrap into a small need).
    let huge = usize::MAX / 2 + 1;
    assert!(Texture::pitched(&view, 4, 3, huge, &TextureDesc::new()).is_err());
    assert!(Texture::pitched(&view, huge, 3, huge, &TextureDesc::new()).is_err());
    let tex = Texture::pitched(&view, w, h, pitch, &TextureDesc::new().filter(FilterMode::Linear)).unwrap();
    let at = coords(10_000, (-2.0, -2.0), (w as f32 + 2.0, h as f32 + 2.0), 8);
    let gpu = sample(&stream, &tex, &at);
    compare("pitched 2-D linear, Clamp", &gpu, |i| bilinear(&img, w, h, at[i].x, at[i].y, Mode::Clamp));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn point_sampling_a_3d_array_is_exact() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let (w, h, d) = (9, 7, 5);
    let vol: Vec<f32> = (0..w * h * d).map(|i| i as f32 * 0.25 - 3.0).collect();
    let mut array = CudaArray::<f32>::new(&ctx, (w, h, d)).unwrap();
    assert_eq!(array.extent().dims(), 3);
    // Through device memory this time: host -> buffer -> array -> buffer -> host.
    let src = stream.clone_htod(&vol).unwrap();
    array.copy_from_device(&stream, &src).unwrap();
    let mut back = stream.alloc_zeros::<f32>(vol.len()).unwrap();
    array.copy_to_device(&stream, &mut back).unwrap();
    assert_eq!(stream.clone_dtoh(&back).unwrap(), vol);
    let tex = Texture::new(&array, &TextureDesc::new()).unwrap();
    let mut out = stream.alloc_zeros::<f32>(vol.len()).unwrap();
    let n = vol.len() as u32;
    unsafe {
        sample3d::launch(&stream, LaunchConfig::for_num_elems(n), &tex, &mut out, w as i32, h as i32, d as i32).unwrap()
    };
    assert_eq!(stream.clone_dtoh(&out).unwrap(), vol);
    println!("3-D point sampling: {} voxels exact", vol.len());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn surface_writes_read_back_through_copies_surfaces_and_textures() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let (w, h) = (33usize, 17usize);
    let array = CudaArray::<f32>::with_surface(&ctx, (w, h)).unwrap();
    let surface = Surface::new(&array).unwrap();
    let cfg = LaunchConfig { grid_dim: (1, h as u32, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
    unsafe { write_surface::launch(&stream, cfg, &surface, w as i32, h as i32).unwrap() };
    let want: Vec<f32> = (0..w * h).map(|i| 0.5 * ((i / w) * 1000 + i % w) as f32).collect();
    assert_eq!(array.to_host_vec(&stream).unwrap(), want);
    let mut out = stream.alloc_zeros::<f32>(w * h).unwrap();
    unsafe { read_surface::launch(&stream, cfg, surface.handle(), &mut out, w as i32, h as i32).unwrap() };
    assert_eq!(stream.clone_dtoh(&out).unwrap(), want);
    // A texture over the same array sees what the surface wrote (a later launch).
    let tex = Texture::new(&array, &TextureDesc::new()).unwrap();
    let at: Vec<Float2> = (0..w * h).map(|i| Float2 { x: (i % w) as f32 + 0.5, y: (i / w) as f32 + 0.5 }).collect();
    assert_eq!(sample(&stream, &tex, &at), want);
    println!("surface: {w} x {h} written, read back by copy, surf2Dread and tex2D");

    // An array made without the surface flag cannot be a surface.
    let plain = CudaArray::<f32>::new(&ctx, (4, 4)).unwrap();
    let e = Surface::new(&plain).unwrap_err().to_string();
    assert!(e.contains("CudaArray::with_surface"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sizes_and_lengths_are_checked_before_the_driver() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let e = CudaArray::<f32>::new(&ctx, (1 << 30, 4)).unwrap_err().to_string();
    assert!(e.contains("width 1073741824 is over this device's 2-D texture limit"), "{e}");
    let mut a = CudaArray::<f32>::new(&ctx, (8, 8)).unwrap();
    let e = a.copy_from_host(&stream, &[0.0; 10]).unwrap_err().to_string();
    assert!(e.contains("the host slice has 10 elements, the array 64 (8 x 8)"), "{e}");
    let e = Texture::new(&a, &TextureDesc::new().address(AddressMode::Wrap)).unwrap_err().to_string();
    assert!(e.contains("needs normalised coordinates"), "{e}");
    println!("{e}");
}

// Without a GPU: the descriptor rules, through the facade.

#[test]
fn linear_filtering_of_an_integer_read_type_is_an_error_that_says_what_to_do() {
    let e = TextureDesc::new().filter(FilterMode::Linear).check::<u16>(2).unwrap_err();
    assert!(matches!(e, Error::Texture { .. }));
    let m = e.to_string();
    assert!(
        m.starts_with("cannot create a 2-D texture of `unsigned short`: linear filtering needs a float read type"),
        "{m}"
    );
    assert!(m.contains(".read_mode(ReadMode::NormalizedFloat)"), "{m}");
    TextureDesc::new().filter(FilterMode::Linear).read_mode(ReadMode::NormalizedFloat).check::<u16>(2).unwrap();
}

#[test]
fn without_a_driver_nothing_panics() {
    if cuda_embed::driver_available() {
        return;
    }
    assert!(cuda_embed::context(0).is_err());
}
