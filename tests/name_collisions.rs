//! Names in the user's code that the generated Rust items also use: parameters called like the
//! launchers' own arguments (`stream`, `cols`, `shape`, `graph`, `axes`) or like a Rust keyword
//! (`type`, `fn`, `match`), a global called `MODULE`, a kernel and a global of one name in two
//! namespaces, a template parameter `T1` beside a `void*` parameter. Each must compile (the CPU
//! test) and compute what it says (the GPU tests, `#[ignore]`d without a GPU).

use cuda_embed::{cuda_kernel, elementwise_kernel, reduction_kernel, LaunchConfig};

mod common;
use common::gpu;

// Every parameter name collides with something of the generated module: its launchers' arguments
// (`stream`, `cols`, `shape`, `graph`, `axes`), Rust keywords (`type`, `fn`, `match`, `loop`,
// `ref`), the module's own items (`ORIGIN`), a scalar input beside them.
reduction_kernel!(
    clashing_sum,
    inputs = "T type, T stream, T cols, T shape, T graph, T axes, T fn, T ORIGIN, scalar T match",
    outputs = "T loop, T ref",
    map = "type + stream + cols + shape + graph + axes + fn + ORIGIN + match",
    reduce = "a + b",
    identity = "0",
    post_map = "loop = a; ref = 2 * a",
    types = ["float"],
);

// The same without a placeholder, and with two placeholders (the `Listed` trait's own `__run`).
reduction_kernel!(
    clashing_plain,
    inputs = "float type, float cols",
    outputs = "float shape",
    map = "type * cols",
    reduce = "a + b",
    identity = "0",
);

reduction_kernel!(
    clashing_two,
    inputs = "T stream, U cols",
    outputs = "T fn",
    map = "stream + (T)cols",
    reduce = "a + b",
    identity = "0",
    types = ["T=float, U=int"],
);

// Elementwise parameters named like the launchers' arguments and locals (`config`, `stream`),
// the module's own functions and statics (`kernel_ref`, `launch_impl`, `AUTO`) and keywords.
elementwise_kernel!(
    clashing_map,
    inputs = "T type, T kernel_ref, T launch_impl, T AUTO, T stream, scalar T match, T graph, T node, T axes",
    outputs = "T fn, T config",
    operation = "fn = type + kernel_ref + launch_impl + AUTO + stream + graph + node + axes; config = match * type",
    types = ["float"],
);

// A global named `MODULE` (the generated module handle's own name); a kernel and a global of one
// name in two namespaces; a template parameter `T1` beside a `void*` parameter (the launcher's
// generic for the `void*` was `T1` too).
cuda_kernel!(
    r#"
    __device__ float MODULE;
    namespace kernels {
        __global__ void offset(float* y, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] += MODULE;
        }
    }
    namespace values { __device__ float offset; }

    // Parameters named like the kernel module's own items and a Rust keyword.
    __global__ void fill(float* KERNEL, float NAME, int type) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < type) KERNEL[i] = NAME;
    }

    template <typename T0, typename T1>
    __global__ void copy_as(const T0* from, void* to, T1 scale, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) static_cast<T0*>(to)[i] = from[i] * static_cast<T0>(scale);
    }
    "#,
    instances = ["copy_as<float, int>"],
);

#[test]
fn every_clashing_name_compiles_and_keeps_its_own_name() {
    assert!(clashing_sum::ORIGIN.contains("clashing_sum"));
    assert!(clashing_plain::ORIGIN.contains("clashing_plain"));
    assert!(clashing_two::ORIGIN.contains("clashing_two"));
    assert_eq!(MODULE.name(), "MODULE");
    assert_eq!(offset::NAME, "kernels::offset");
    // The kernel's module and the global's static share the Rust name `offset`.
    let _: &cuda_embed::Global<f32> = &offset;
    assert_eq!(offset.name(), "values::offset");
    assert_eq!(copy_as::NAME, "copy_as");
    assert_eq!(fill::NAME, "fill");
    let _ = clashing_map::kernel_ref::<f32>;
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reductions_with_clashing_parameter_names() -> cuda_embed::Result<()> {
    let stream = gpu();
    let n = 1000usize;
    let xs: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let x = stream.clone_htod(&xs)?;
    let want: f32 = 8.0 * xs.iter().sum::<f32>() + n as f32 * 0.5;
    let mut l = stream.alloc_zeros::<f32>(1)?;
    let mut r = stream.alloc_zeros::<f32>(1)?;
    clashing_sum::launch(&stream, &x, &x, &x, &x, &x, &x, &x, &x, 0.5, &mut l, &mut r)?;
    assert_eq!(stream.clone_dtoh(&l)?, [want]);
    assert_eq!(stream.clone_dtoh(&r)?, [2.0 * want]);
    // Rows of 10: the launcher's own `cols` argument beside the parameter `cols`.
    let mut lr = stream.alloc_zeros::<f32>(n / 10)?;
    let mut rr = stream.alloc_zeros::<f32>(n / 10)?;
    clashing_sum::launch_rows(&stream, &x, &x, &x, &x, &x, &x, &x, &x, 0.0, 10, &mut lr, &mut rr)?;
    let rows: Vec<f32> = xs.chunks(10).map(|c| 8.0 * c.iter().sum::<f32>()).collect();
    assert_eq!(stream.clone_dtoh(&lr)?, rows);
    let mut shape = stream.alloc_zeros::<f32>(1)?;
    clashing_plain::launch(&stream, &x, &x, &mut shape)?;
    assert_eq!(stream.clone_dtoh(&shape)?, [xs.iter().map(|v| v * v).sum::<f32>()]);
    let ints = stream.clone_htod(&vec![1i32; n])?;
    let mut f = stream.alloc_zeros::<f32>(1)?;
    clashing_two::launch::<f32, i32>(&stream, &x, &ints, &mut f)?;
    assert_eq!(stream.clone_dtoh(&f)?, [xs.iter().sum::<f32>() + n as f32]);
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_with_clashing_parameter_names() -> cuda_embed::Result<()> {
    let stream = gpu();
    let xs: Vec<f32> = (0..300).map(|i| i as f32).collect();
    let x = stream.clone_htod(&xs)?;
    let mut f = stream.alloc_zeros::<f32>(xs.len())?;
    let mut c = stream.alloc_zeros::<f32>(xs.len())?;
    clashing_map::launch(&stream, &x, &x, &x, &x, &x, 3.0, &x, &x, &x, &mut f, &mut c)?;
    assert_eq!(stream.clone_dtoh(&f)?, xs.iter().map(|v| 8.0 * v).collect::<Vec<_>>());
    assert_eq!(stream.clone_dtoh(&c)?, xs.iter().map(|v| 3.0 * v).collect::<Vec<_>>());
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_and_globals_with_clashing_names() -> cuda_embed::Result<()> {
    let stream = gpu();
    let n = 100usize;
    MODULE.set(&stream, 1.5)?;
    offset.set(&stream, -4.0)?;
    let mut y = stream.alloc_zeros::<f32>(n)?;
    unsafe { offset::launch(&stream, LaunchConfig::for_num_elems(n as u32), &mut y, n as i32)? };
    assert_eq!(stream.clone_dtoh(&y)?, vec![1.5; n]);
    assert_eq!(offset.get(&stream)?, -4.0);
    unsafe { fill::launch(&stream, LaunchConfig::for_num_elems(n as u32), &mut y, 2.5, n as i32)? };
    assert_eq!(stream.clone_dtoh(&y)?, vec![2.5; n]);
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = stream.clone_htod(&xs)?;
    let mut to = stream.alloc_zeros::<f32>(n)?;
    unsafe {
        copy_as::launch::<f32, i32, _>(&stream, LaunchConfig::for_num_elems(n as u32), &x, &mut to, 3, n as i32)?
    };
    assert_eq!(stream.clone_dtoh(&to)?, xs.iter().map(|v| 3.0 * v).collect::<Vec<_>>());
    Ok(())
}
