//! Several GPUs: 32 threads x every device x 10 kernels (two modules of five), each module loaded
//! exactly once per device, every result checked. Needs at least 2 GPUs; on fewer it says so and
//! fails only when CUDA_EMBED_REQUIRE_MULTI_GPU is set.

use cuda_embed::args::Out;
use cuda_embed::{cuda_kernel, Kernel, LaunchConfig};
use std::sync::{Arc, Barrier};

cuda_kernel!(
    r#"
    extern "C" __global__ void a0(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + 1 * i; }
    extern "C" __global__ void a1(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + 2 * i; }
    extern "C" __global__ void a2(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + 3 * i; }
    extern "C" __global__ void a3(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + 4 * i; }
    extern "C" __global__ void a4(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + 5 * i; }
"#
);

cuda_kernel!(
    r#"
    extern "C" __global__ void b0(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + 6 * i; }
    extern "C" __global__ void b1(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + 7 * i; }
    extern "C" __global__ void b2(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + 8 * i; }
    extern "C" __global__ void b3(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + 9 * i; }
    extern "C" __global__ void b4(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + 10 * i; }
"#
);

type Writer = Kernel<(Out<i32>, i32, i32)>;

#[test]
#[ignore = "needs 2 CUDA GPUs"]
fn many_threads_many_devices_load_each_module_once_per_device() {
    let devices = cuda_embed::CudaContext::device_count().unwrap_or(0) as usize;
    if devices < 2 {
        assert!(std::env::var_os("CUDA_EMBED_REQUIRE_MULTI_GPU").is_none(), "{devices} GPU(s), 2 required");
        eprintln!("multi_gpu: {devices} GPU(s); this test needs 2 — not run");
        return;
    }
    // Kernel values of one signature from two modules, stored together.
    let kernels: Vec<(Writer, i32)> = vec![
        (a0::KERNEL, 1),
        (a1::KERNEL, 2),
        (a2::KERNEL, 3),
        (a3::KERNEL, 4),
        (a4::KERNEL, 5),
        (b0::KERNEL, 6),
        (b1::KERNEL, 7),
        (b2::KERNEL, 8),
        (b3::KERNEL, 9),
        (b4::KERNEL, 10),
    ];
    let contexts: Vec<_> = (0..devices).map(|d| cuda_embed::context(d).unwrap()).collect();
    let threads = 32;
    let barrier = Arc::new(Barrier::new(threads * devices));
    let mut handles = Vec::new();
    for ctx in &contexts {
        for t in 0..threads {
            let ctx = ctx.clone();
            let barrier = barrier.clone();
            let kernels = kernels.clone();
            handles.push(std::thread::spawn(move || {
                let stream = ctx.new_stream().unwrap();
                let n = 1000;
                let mut out = stream.alloc_zeros::<i32>(n as usize).unwrap();
                barrier.wait();
                for (kernel, m) in kernels {
                    let base = (ctx.ordinal() * 1000 + t) as i32;
                    unsafe {
                        kernel.launch(&stream, LaunchConfig::for_num_elems(n as u32), (&mut out, base, n)).unwrap()
                    };
                    let got = stream.clone_dtoh(&out).unwrap();
                    assert!(
                        got.iter().enumerate().all(|(i, v)| *v == base + m * i as i32),
                        "device {} kernel {m}",
                        ctx.ordinal()
                    );
                }
            }));
        }
    }
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(a0::module().loads(), devices, "module a loaded once per device");
    assert_eq!(b0::module().loads(), devices, "module b loaded once per device");
    assert!(std::ptr::eq(a0::module(), a4::module()));
}
