//! The CUDA runtime's plain structs passed by value (`cudaPitchedPtr`, `cudaExtent`, `cudaPos`)
//! get the runtime's Rust twins ([`CudaPitchedPtr`], [`CudaExtent`], [`CudaPos`]) with no
//! hand-written Rust, also through a typedef and in a `__device__` variable; their fields are
//! checked against the toolkit's by the compiler probe. GPU tests are `#[ignore]`d (run them on a
//! GPU machine).

use cuda_embed::args::Out;
use cuda_embed::{cuda_kernel, CudaExtent, CudaPitchedPtr, CudaPos, Global, Kernel, LaunchConfig, RawDevicePtr};

cuda_kernel!(
    r#"
    typedef cudaExtent Box;   // through a typedef: the compiler probe names the toolkit struct
    __device__ cudaPos origin;

    extern "C" __global__ void fields(cudaPitchedPtr p, cudaExtent e, Box b, unsigned long long* out) {
        out[0] = (unsigned long long)p.ptr; out[1] = p.pitch; out[2] = p.xsize; out[3] = p.ysize;
        out[4] = e.width; out[5] = e.height; out[6] = e.depth;
        out[7] = b.width; out[8] = b.height; out[9] = b.depth;
        out[10] = origin.x; out[11] = origin.y; out[12] = origin.z;
    }

    // One thread per element of a width x height x depth float volume in pitched memory.
    extern "C" __global__ void fill_volume(cudaPitchedPtr p, cudaExtent e) {
        size_t x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
        if (x < e.width && y < e.height && z < e.depth) {
            char* slice = (char*)p.ptr + z * p.pitch * p.ysize;
            float* row = (float*)(slice + y * p.pitch);
            row[x] = (float)(z * 10000 + y * 100 + x);
        }
    }
"#
);

#[test]
fn toolkit_structs_map_to_the_runtime_twins() {
    let _: Kernel<(CudaPitchedPtr, CudaExtent, CudaExtent, Out<u64>)> = fields::KERNEL;
    let _: Kernel<(CudaPitchedPtr, CudaExtent)> = fill_volume::KERNEL;
    let _: &Global<CudaPos> = &origin;
    assert_eq!(std::mem::size_of::<CudaPitchedPtr>(), 32);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn toolkit_structs_arrive_in_the_kernel() {
    let ctx = cuda_embed::context(0).expect("needs a GPU");
    let stream = ctx.default_stream();
    let (w, h, d, pitch) = (60usize, 5usize, 3usize, 256usize);
    let vol = stream.alloc_zeros::<u8>(pitch * h * d).unwrap();
    let ptr = RawDevicePtr::of(&vol, &stream);
    let p = CudaPitchedPtr::new(ptr, pitch, w, h);
    let e = CudaExtent::new(w, h, d);
    origin.set(&stream, CudaPos::new(7, 8, 9)).unwrap();
    let mut out = stream.alloc_zeros::<u64>(13).unwrap();
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    unsafe { fields::launch(&stream, one, p, e, CudaExtent::new(1, 2, 3), &mut out).unwrap() };
    let got = stream.clone_dtoh(&out).unwrap();
    println!("fields seen by the kernel: {got:?} (ptr {:#x})", ptr.0);
    assert_eq!(got, [ptr.0, pitch as u64, w as u64, h as u64, 60, 5, 3, 1, 2, 3, 7, 8, 9]);
    assert_eq!(origin.get(&stream).unwrap(), CudaPos::new(7, 8, 9));

    let cfg = LaunchConfig { grid_dim: (h as u32, d as u32, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
    unsafe { fill_volume::launch(&stream, cfg, p, e).unwrap() };
    let bytes = stream.clone_dtoh(&vol).unwrap();
    for z in 0..d {
        for y in 0..h {
            let row = &bytes[(z * h + y) * pitch..][..pitch];
            let floats: Vec<f32> = row.chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            for (x, v) in floats.iter().enumerate() {
                let want = if x < w { (z * 10000 + y * 100 + x) as f32 } else { 0.0 };
                assert_eq!(*v, want, "x {x} y {y} z {z}");
            }
        }
    }
    println!(
        "fill_volume wrote a {w}x{h}x{d} float volume at pitch {pitch}: every element and the padding as expected"
    );
}
