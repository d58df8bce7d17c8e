//! Separate compilation: `rdc = true` (kernels that launch kernels), `link = [...]` (a
//! `__device__` function and variable of another file) and `lto = true`. GPU tests are
//! `#[ignore]`d (run them on a GPU machine).

#[path = "common/elf.rs"]
mod elf;

use cuda_embed::{cuda_kernel, Graph, LaunchConfig};

cuda_kernel!(
    r#"
    __global__ void child(float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] += 1.f;
    }
    extern "C" __global__ void parent(float* y, int n) {
        if (threadIdx.x == 0) child<<<(n + 255) / 256, 256>>>(y, n);
    }

    __global__ void set_to(int* flag, int v) { *flag = v; }
    // The tail launch runs after this grid completes, so it writes last; the fire-and-forget
    // launch runs concurrently with the rest of the parent.
    extern "C" __global__ void tail_parent(int* flag, int* other) {
        if (threadIdx.x == 0 && blockIdx.x == 0) {
            set_to<<<1, 1, 0, cudaStreamTailLaunch>>>(flag, 2);
            set_to<<<1, 1, 0, cudaStreamFireAndForget>>>(other, 7);
            *flag = 1;
        }
    }
"#,
    rdc = true,
);

mod linked {
    cuda_embed::cuda_kernel!(file = "tests/kernels/link/main.cu", link = ["tests/kernels/link/math.cu"]);
}

mod linked_lto {
    cuda_embed::cuda_kernel!(file = "tests/kernels/link/main.cu", link = ["tests/kernels/link/math.cu"], lto = true);
}

/// Template kernels of a linked file: the instances listed here are instantiated in the file
/// that defines the template, through nvcc and through build-time NVRTC.
mod linked_templates {
    cuda_embed::cuda_kernel!(
        file = "tests/kernels/link/main.cu",
        link = ["tests/kernels/link/math.cu", "tests/kernels/link/templates.cu"],
        instances = ["scale_square<float, 3>", "scale_square<int, 2>"],
    );

    pub mod by_nvrtc {
        cuda_embed::cuda_kernel!(
            file = "tests/kernels/link/main.cu",
            link = ["tests/kernels/link/math.cu", "tests/kernels/link/templates.cu"],
            instances = ["scale_square<float, 3>"],
            compiler = "nvrtc-build",
        );
    }

    /// With link-time optimisation: the instances and every other kernel of the three files stay
    /// in the image (nvlink dropped all but the instances before it was given
    /// `-ignore-host-info`).
    pub mod lto {
        cuda_embed::cuda_kernel!(
            file = "tests/kernels/link/main.cu",
            link = ["tests/kernels/link/math.cu", "tests/kernels/link/templates.cu"],
            instances = ["scale_square<float, 3>", "scale_square<int, 2>"],
            lto = true,
        );

        pub mod by_nvrtc {
            cuda_embed::cuda_kernel!(
                file = "tests/kernels/link/main.cu",
                link = ["tests/kernels/link/math.cu", "tests/kernels/link/templates.cu"],
                instances = ["scale_square<float, 3>"],
                lto = true,
                compiler = "nvrtc-build",
            );
        }

        pub mod at_first_use {
            cuda_embed::cuda_kernel!(
                file = "tests/kernels/link/main.cu",
                link = ["tests/kernels/link/math.cu", "tests/kernels/link/templates.cu"],
                instances = ["scale_square<float, 3>"],
                lto = true,
                compiler = "nvrtc",
            );
        }
    }

    pub mod at_first_use {
        cuda_embed::cuda_kernel!(
            file = "tests/kernels/link/main.cu",
            link = ["tests/kernels/link/math.cu", "tests/kernels/link/templates.cu"],
            instances = ["scale_square<float, 3>"],
            compiler = "nvrtc",
        );
    }
}

/// A kernel the module's source only declares and a linked file defines: the launcher launches
/// the definition (the signature is checked against the linked file's compiled entry).
mod declared_here {
    cuda_embed::cuda_kernel!(
        r#"
        extern __device__ unsigned int calls;
        extern "C" __global__ void add_calls(float* y, int n);
        extern "C" __global__ void reset_calls() { calls = 0; }
    "#,
        link = ["tests/kernels/link/math.cu"],
    );
}

/// The same modules linked without nvcc: build-time NVRTC compiles the units and nvJitLink links
/// them with libcudadevrt (a cubin per architecture is embedded).
mod by_nvrtc {
    cuda_embed::cuda_kernel!(file = "tests/kernels/link/parent.cu", rdc = true, compiler = "nvrtc-build");

    pub mod linked {
        cuda_embed::cuda_kernel!(
            file = "tests/kernels/link/main.cu",
            link = ["tests/kernels/link/math.cu"],
            compiler = "nvrtc-build"
        );
    }

    pub mod linked_lto {
        cuda_embed::cuda_kernel!(
            file = "tests/kernels/link/main.cu",
            link = ["tests/kernels/link/math.cu"],
            lto = true,
            compiler = "nvrtc-build"
        );
    }
}

/// The same modules with no compiler at build time: each unit's source is embedded, compiled by
/// NVRTC for the device and linked with libcudadevrt at first use (the driver's linker; nvJitLink
/// with LTO).
mod at_first_use {
    cuda_embed::cuda_kernel!(file = "tests/kernels/link/parent.cu", rdc = true, compiler = "nvrtc");

    pub mod linked_lto {
        cuda_embed::cuda_kernel!(
            file = "tests/kernels/link/main.cu",
            link = ["tests/kernels/link/math.cu"],
            lto = true,
            compiler = "nvrtc"
        );
    }
}

#[test]
fn linked_files_give_typed_launchers_and_globals() {
    assert_eq!(declared_here::add_calls::NAME, "add_calls");
    assert_eq!(declared_here::reset_calls::NAME, "reset_calls");
    assert_eq!(linked::square_all::NAME, "square_all");
    // A kernel and a `__device__` variable defined in the linked file, not the module's source.
    assert_eq!(linked::add_calls::NAME, "add_calls");
    assert_eq!(linked::calls.name(), "calls");
    let _: &cuda_embed::Global<u32> = &linked::calls;
    assert_eq!(linked_lto::poly_loop::NAME, "poly_loop");
    assert_eq!(child::NAME, "child");
    // Linked by build-time NVRTC and nvJitLink: the same launchers and globals.
    assert_eq!(by_nvrtc::parent::NAME, "parent");
    assert_eq!(by_nvrtc::linked::add_calls::NAME, "add_calls");
    let _: &cuda_embed::Global<u32> = &by_nvrtc::linked_lto::calls;
    // Linked at first use (no compiler at build time): the same launchers.
    assert_eq!(at_first_use::parent::NAME, "parent");
    let _: &cuda_embed::Global<u32> = &at_first_use::linked_lto::calls;
    // Instances of a linked file's template.
    assert_eq!(linked_templates::scale_square::kernel::<f32, 3>().name(), "scale_square<float, 3>");
    assert_eq!(linked_templates::scale_square::kernel::<i32, 2>().name(), "scale_square<int, 2>");
    assert_eq!(linked_templates::by_nvrtc::scale_square::kernel::<f32, 3>().name(), "scale_square<float, 3>");
    assert_eq!(linked_templates::at_first_use::scale_square::kernel::<f32, 3>().name(), "scale_square<float, 3>");
    assert_eq!(linked_templates::lto::scale_square::kernel::<i32, 2>().name(), "scale_square<int, 2>");
    assert_eq!(linked_templates::lto::square_all::NAME, "square_all");
    assert_eq!(linked_templates::lto::by_nvrtc::scale_square::kernel::<f32, 3>().name(), "scale_square<float, 3>");
    assert_eq!(linked_templates::lto::at_first_use::scale_square::kernel::<f32, 3>().name(), "scale_square<float, 3>");
}

/// The LTO image of a module with instances of a linked file's template holds every kernel the
/// module launches, for every architecture (before nvlink was given `-ignore-host-info` it held
/// only the two instances, and loading the module failed on `square_all`).
#[test]
fn the_lto_image_with_linked_template_instances_holds_every_kernel() {
    let module = linked_templates::lto::square_all::module();
    let cuda_embed::BuildPath::Nvcc { .. } = module.build_info() else {
        panic!("tests/link.rs is built with nvcc (run under scripts/with-cuda): {:?}", module.build_info());
    };
    let spec = module.spec();
    let fatbin = spec.image.fatbin_bytes().expect("nvcc embeds a fatbin");
    let symbols: Vec<&str> = spec.kernels.iter().map(|k| k.symbol.expect("nvcc knows each symbol")).collect();
    for s in ["square_all", "poly_loop", "add_calls", "_Z12scale_squareIfLi3EEvPT_i", "_Z12scale_squareIiLi2EEvPT_i"] {
        assert!(symbols.contains(&s), "{s} in {symbols:?}");
    }
    let images = elf::kernels_in_images(fatbin);
    assert!(!images.is_empty(), "the fatbin holds cubins");
    for kernels in &images {
        for s in &symbols {
            assert!(kernels.iter().any(|k| k == s), "`{s}` is not in the image: {kernels:?}");
        }
    }
}

/// `linked::square_all` counts its calls in a `__device__` variable one test reads: the tests that
/// launch it take this lock, so that tests running in parallel threads do not add to the count.
static SQUARE_ALL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn square_all_lock() -> std::sync::MutexGuard<'static, ()> {
    SQUARE_ALL.lock().unwrap_or_else(|e| e.into_inner())
}

fn stream() -> std::sync::Arc<cuda_embed::CudaStream> {
    cuda_embed::context(0).expect("these tests need a CUDA GPU").default_stream()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_parent_kernel_launches_its_child_on_the_gpu() {
    let stream = stream();
    let n = 10_000usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = stream.clone_htod(&xs).unwrap();
    // SAFETY: the child grid covers exactly n elements.
    unsafe {
        parent::launch(
            &stream,
            LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 },
            &mut y,
            n as i32,
        )
        .unwrap()
    };
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(xs.iter().zip(&got).all(|(x, g)| *g == x + 1.0), "{:?}", &got[..8]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tail_and_fire_and_forget_launches() {
    let stream = stream();
    let mut flag = stream.alloc_zeros::<i32>(1).unwrap();
    let mut other = stream.alloc_zeros::<i32>(1).unwrap();
    // SAFETY: one thread writes one int of each buffer.
    unsafe { tail_parent::launch(&stream, LaunchConfig::for_num_elems(1), &mut flag, &mut other).unwrap() };
    assert_eq!(stream.clone_dtoh(&flag).unwrap(), [2], "the tail launch runs after the parent's own write");
    assert_eq!(stream.clone_dtoh(&other).unwrap(), [7]);
}

fn cross_file(square_all: impl Fn(&cuda_embed::CudaStream, &mut cuda_embed::CudaSlice<f32>, i32), lto: bool) {
    let stream = stream();
    let n = 1000usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let mut y = stream.clone_htod(&xs).unwrap();
    square_all(&stream, &mut y, n as i32);
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(xs.iter().zip(&got).all(|(x, g)| *g == x * x), "lto {lto}: {:?}", &got[..8]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_device_function_of_another_file_with_and_without_lto() {
    let _serial = square_all_lock();
    let cfg = LaunchConfig::for_num_elems(1000);
    // SAFETY: n is the buffer's length.
    cross_file(|s, y, n| unsafe { linked::square_all::launch(s, cfg, y, n).unwrap() }, false);
    cross_file(|s, y, n| unsafe { linked_lto::square_all::launch(s, cfg, y, n).unwrap() }, true);
    let stream = stream();
    let x = stream.clone_htod(&[2.0f32; 64]).unwrap();
    let mut y = stream.alloc_zeros::<f32>(64).unwrap();
    // SAFETY: 64 elements.
    unsafe { linked_lto::poly_loop::launch(&stream, LaunchConfig::for_num_elems(64), &x, &mut y, 64, 3).unwrap() };
    // acc = ((0*2+.5)*2+.5)*2+.5 = 3.5
    assert_eq!(stream.clone_dtoh(&y).unwrap(), vec![3.5f32; 64]);
}

/// The instances of the linked file's template `scale_square` in the module at `$m` (and its
/// `by_nvrtc` and `at_first_use` twins) compute what they should: `f32` with 3 on every build
/// path, `i32` with 2 from nvcc's image. The test of each module (with and without LTO) runs it.
macro_rules! template_instances_run {
    ($stream:expr, $($m:ident)::+) => {{
        let stream = $stream;
        let n = 500usize;
        let cfg = LaunchConfig::for_num_elems(n as u32);
        let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
        let want: Vec<f32> = xs.iter().map(|x| 3.0 * x * x).collect();
        let run = |launch: &dyn Fn(&mut cuda_embed::CudaSlice<f32>), how: &str| {
            let mut y = stream.clone_htod(&xs).unwrap();
            launch(&mut y);
            assert_eq!(stream.clone_dtoh(&y).unwrap(), want, "{how}");
        };
        // SAFETY (every launch below): the grid covers n elements and the buffers hold n.
        run(&|y| unsafe { $($m)::+::scale_square::launch::<f32, 3>(&stream, cfg, y, n as i32).unwrap() }, "nvcc");
        run(
            &|y| unsafe { $($m)::+::by_nvrtc::scale_square::launch::<f32, 3>(&stream, cfg, y, n as i32).unwrap() },
            "build-time NVRTC",
        );
        run(
            &|y| unsafe { $($m)::+::at_first_use::scale_square::launch::<f32, 3>(&stream, cfg, y, n as i32).unwrap() },
            "at first use",
        );
        let ints: Vec<i32> = (0..n as i32).map(|i| i % 50).collect();
        let mut y = stream.clone_htod(&ints).unwrap();
        // SAFETY: as above.
        unsafe { $($m)::+::scale_square::launch::<i32, 2>(&stream, cfg, &mut y, n as i32).unwrap() };
        assert_eq!(stream.clone_dtoh(&y).unwrap(), ints.iter().map(|i| 2 * i * i).collect::<Vec<i32>>());
        (stream, n, cfg, xs)
    }};
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn instances_of_a_linked_files_template_run() {
    template_instances_run!(stream(), linked_templates);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn instances_of_a_linked_files_template_run_with_lto() {
    let (stream, n, cfg, xs) = template_instances_run!(stream(), linked_templates::lto);
    use linked_templates::lto;
    // The module's other kernels, the one the image once lost (`square_all`) first; each module has
    // its own `calls`, so the count is this module's alone.
    lto::calls.set(&stream, 0).unwrap();
    let mut y = stream.clone_htod(&xs).unwrap();
    // SAFETY (every launch below): the grid covers n elements and the buffers hold n.
    unsafe { lto::square_all::launch(&stream, cfg, &mut y, n as i32).unwrap() };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), xs.iter().map(|x| x * x).collect::<Vec<f32>>());
    assert_eq!(lto::calls.get(&stream).unwrap(), n as u32);
    // SAFETY: as above.
    unsafe { lto::add_calls::launch(&stream, cfg, &mut y, n as i32).unwrap() };
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(xs.iter().zip(&got).all(|(x, g)| *g == x * x + n as f32), "{:?}", &got[..4]);
    let mut y = stream.clone_htod(&xs).unwrap();
    // SAFETY: as above.
    unsafe { lto::at_first_use::square_all::launch(&stream, cfg, &mut y, n as i32).unwrap() };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), xs.iter().map(|x| x * x).collect::<Vec<f32>>(), "first use");
    let x = stream.clone_htod(&xs).unwrap();
    let mut y = stream.alloc_zeros::<f32>(n).unwrap();
    // SAFETY: as above.
    unsafe { lto::by_nvrtc::poly_loop::launch(&stream, cfg, &x, &mut y, n as i32, 1).unwrap() };
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|v| *v == 0.5), "NVRTC: one call of axpb(0, x, 0.5)");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_device_variable_defined_in_one_file_and_used_in_another() {
    let _serial = square_all_lock();
    let stream = stream();
    linked::calls.set(&stream, 0).unwrap();
    let n = 300usize;
    let mut y = stream.clone_htod(&vec![1.0f32; n]).unwrap();
    let cfg = LaunchConfig::for_num_elems(n as u32);
    // SAFETY: n elements.
    unsafe { linked::square_all::launch(&stream, cfg, &mut y, n as i32).unwrap() };
    // main.cu counted the calls into math.cu's variable; the host reads it through its handle and
    // math.cu's own kernel reads it too.
    assert_eq!(linked::calls.get(&stream).unwrap(), n as u32);
    // SAFETY: n elements.
    unsafe { linked::add_calls::launch(&stream, cfg, &mut y, n as i32).unwrap() };
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|v| *v == 1.0 + n as f32));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_linked_kernel_as_a_graph_node_and_timed_and_cooperative() {
    let _serial = square_all_lock();
    let stream = stream();
    let ctx = cuda_embed::context(0).unwrap();
    let n = 512usize;
    let y = stream.clone_htod(&vec![3.0f32; n]).unwrap();
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let mut g = Graph::new(&ctx).unwrap();
    linked::square_all::node(&mut g, cfg, &y, n as i32).unwrap();
    linked::add_calls::node(&mut g, cfg, &y, n as i32).unwrap();
    linked::calls.set(&stream, 0).unwrap();
    let exec = g.instantiate().unwrap();
    // SAFETY: n elements.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|v| *v == 9.0 + n as f32));
    let mut y = stream.clone_htod(&vec![2.0f32; n]).unwrap();
    // SAFETY: n elements.
    let ms = unsafe { linked_lto::square_all::launch_timed(&stream, cfg, &mut y, n as i32).unwrap() };
    assert!(ms >= 0.0);
    // SAFETY: n elements; two blocks fit on any GPU at once.
    unsafe { linked::square_all::launch_cooperative(&stream, cfg, &mut y, n as i32).unwrap() };
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|v| *v == 16.0));
    // The parent of the rdc module, timed: a launch from the device counts in the parent's time.
    let mut z = stream.alloc_zeros::<f32>(n).unwrap();
    // SAFETY: the child covers n elements.
    unsafe { parent::launch_timed(&stream, LaunchConfig::for_num_elems(32), &mut z, n as i32).unwrap() };
    assert!(stream.clone_dtoh(&z).unwrap().iter().all(|v| *v == 1.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn modules_linked_by_build_time_nvrtc_run() {
    let _serial = square_all_lock();
    let stream = stream();
    // A kernel launching a kernel.
    let n = 5_000usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = stream.clone_htod(&xs).unwrap();
    let one_block = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: the child grid covers exactly n elements.
    unsafe { by_nvrtc::parent::launch(&stream, one_block, &mut y, n as i32).unwrap() };
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(xs.iter().zip(&got).all(|(x, g)| *g == x + 1.0), "{:?}", &got[..8]);
    // A `__device__` function and variable of another file, with and without LTO.
    let cfg = LaunchConfig::for_num_elems(1000);
    // SAFETY: n is the buffer's length.
    cross_file(|s, y, n| unsafe { by_nvrtc::linked::square_all::launch(s, cfg, y, n).unwrap() }, false);
    // SAFETY: as above.
    cross_file(|s, y, n| unsafe { by_nvrtc::linked_lto::square_all::launch(s, cfg, y, n).unwrap() }, true);
    by_nvrtc::linked::calls.set(&stream, 0).unwrap();
    let mut y = stream.clone_htod(&vec![1.0f32; 300]).unwrap();
    // SAFETY: 300 elements.
    unsafe { by_nvrtc::linked::square_all::launch(&stream, LaunchConfig::for_num_elems(300), &mut y, 300).unwrap() };
    assert_eq!(by_nvrtc::linked::calls.get(&stream).unwrap(), 300);
    let x = stream.clone_htod(&[2.0f32; 64]).unwrap();
    let mut y = stream.alloc_zeros::<f32>(64).unwrap();
    // SAFETY: 64 elements.
    unsafe {
        by_nvrtc::linked_lto::poly_loop::launch(&stream, LaunchConfig::for_num_elems(64), &x, &mut y, 64, 3).unwrap()
    };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), vec![3.5f32; 64]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn modules_linked_at_first_use_run() {
    let stream = stream();
    let n = 5_000usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = stream.clone_htod(&xs).unwrap();
    let one_block = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: the child grid covers exactly n elements.
    unsafe { at_first_use::parent::launch(&stream, one_block, &mut y, n as i32).unwrap() };
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(xs.iter().zip(&got).all(|(x, g)| *g == x + 1.0), "{:?}", &got[..8]);
    let build = at_first_use::parent::module().build_info().to_string();
    assert!(build.contains("NVRTC at first use"), "{build}");
    // LTO across files, and a `__device__` variable of the linked file.
    let cfg = LaunchConfig::for_num_elems(1000);
    // SAFETY: n is the buffer's length.
    cross_file(|s, y, n| unsafe { at_first_use::linked_lto::square_all::launch(s, cfg, y, n).unwrap() }, true);
    at_first_use::linked_lto::calls.set(&stream, 0).unwrap();
    let mut y = stream.clone_htod(&vec![1.0f32; 300]).unwrap();
    // SAFETY: 300 elements.
    unsafe {
        at_first_use::linked_lto::square_all::launch(&stream, LaunchConfig::for_num_elems(300), &mut y, 300).unwrap()
    };
    assert_eq!(at_first_use::linked_lto::calls.get(&stream).unwrap(), 300);
}

/// The linked module loads on every device (lazily, one module per device); with one GPU only
/// device 0 is checked, and the test says so.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_linked_module_on_every_device() {
    let devices = cuda_embed::CudaContext::device_count().unwrap_or(0) as usize;
    assert!(devices >= 1, "needs a CUDA GPU");
    if devices < 2 {
        eprintln!("only one GPU: the linked module is checked on device 0 alone");
    }
    for d in 0..devices {
        let stream = cuda_embed::context(d).unwrap().default_stream();
        let mut y = stream.clone_htod(&[3.0f32; 64]).unwrap();
        // SAFETY: 64 elements.
        unsafe { linked_lto::square_all::launch(&stream, LaunchConfig::for_num_elems(64), &mut y, 64).unwrap() };
        assert_eq!(stream.clone_dtoh(&y).unwrap(), vec![9.0f32; 64], "device {d}");
    }
}

mod run_time {
    use cuda_embed::link::{CodeKind, Linker, ObjectCode};
    use cuda_embed::{Arg, LaunchConfig, Program};

    const MAIN: &str = r#"
        __device__ float sq(float x);
        __global__ void child(float* y, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = sq(y[i]);
        }
        extern "C" __global__ void parent(float* y, int n) {
            if (threadIdx.x == 0) child<<<(n + 127) / 128, 128>>>(y, n);
        }
    "#;
    const MATH: &str = "__device__ float sq(float x) { return x * x; }\n";

    fn arch(ctx: &cuda_embed::CudaContext) -> u32 {
        let (major, minor) = ctx.compute_capability().unwrap();
        (major * 10 + minor) as u32
    }

    fn run(module: &cuda_embed::ProgramModule, stream: &std::sync::Arc<cuda_embed::CudaStream>) -> Vec<f32> {
        let k = module.kernel_checked("parent").unwrap();
        let n = 1000i32;
        let mut y = stream.clone_htod(&(0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the child covers exactly n elements of y.
        unsafe { k.launch(stream, cfg, &mut [Arg::slice_mut(&mut y), Arg::value(&n)]).unwrap() };
        stream.clone_dtoh(&y).unwrap()
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn ptx_objects_and_the_device_runtime_link_at_run_time() {
        let ctx = cuda_embed::context(0).unwrap();
        let stream = ctx.default_stream();
        let cache = tempfile::tempdir().unwrap();
        let arch = arch(&ctx);
        let main = Program::new(MAIN).name("main.cu").compile_to(CodeKind::Ptx, arch).unwrap();
        let math = Program::new(MATH).name("math.cu").compile_to(CodeKind::Cubin, arch).unwrap();
        let linker = Linker::new("dynamic")
            .object(main)
            .object(math)
            .object(ObjectCode::device_runtime().unwrap())
            .cache_dir(cache.path());
        let module = linker.load(&ctx).unwrap();
        assert!(!module.from_cache());
        let got = run(&module, &stream);
        assert!(got.iter().enumerate().all(|(i, v)| *v == (i * i) as f32), "{:?}", &got[..8]);
        // The second link is a disk-cache hit.
        assert!(linker.load(&ctx).unwrap().from_cache());
        // A missing definition: the linker's log in the error.
        let alone = Program::new(MAIN).name("main.cu").compile_to(CodeKind::Ptx, arch).unwrap();
        let e = Linker::new("broken")
            .object(alone)
            .object(ObjectCode::device_runtime().unwrap())
            .cache_dir(cache.path())
            .load(&ctx)
            .unwrap_err()
            .to_string();
        assert!(e.contains("linker `broken`") && e.contains("_Z2sqf"), "{e}");
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn lto_ir_objects_link_through_nvjitlink() {
        let ctx = cuda_embed::context(0).unwrap();
        let stream = ctx.default_stream();
        let cache = tempfile::tempdir().unwrap();
        let arch = arch(&ctx);
        let main = Program::new(MAIN).name("main.cu").compile_to(CodeKind::LtoIr, arch).unwrap();
        let math = Program::new(MATH).name("math.cu").compile_to(CodeKind::LtoIr, arch).unwrap();
        let module = Linker::new("lto")
            .object(main)
            .object(math)
            .object(ObjectCode::device_runtime().unwrap())
            .cache_dir(cache.path())
            .load(&ctx)
            .unwrap();
        let got = run(&module, &stream);
        assert!(got.iter().enumerate().all(|(i, v)| *v == (i * i) as f32), "{:?}", &got[..8]);
    }
}
