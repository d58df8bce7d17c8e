//! NVTX ranges in a profile: three steps, each a user range (`cuda_embed::nvtx::range("step")`)
//! around two launches; with the `nvtx` feature each launch also pushes a range named by the
//! kernel and its `cuda_kernel!`'s file:line, and the graph launch one named `graph (2 nodes)`.
//!
//! ```text
//! cargo build --release --features nvtx --example nvtx_ranges
//! nsys profile -t cuda,nvtx --stats=true target/release/examples/nvtx_ranges   # NVTX summary
//! ncu --nvtx --nvtx-include "step/" target/release/examples/nvtx_ranges         # kernels in "step"
//! ```
//!
//! Without the feature it runs the same and says that no ranges were made. With CUDA 13, which has
//! no `libnvToolsExt`, build one from the `nvtx3` headers first (docs/guide.md, "Profiling").

use cuda_embed::{cuda_kernel, Graph, LaunchConfig};

cuda_kernel!(
    r#"
    extern "C" __global__ void scale(float* y, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] *= a;
    }
"#
);

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let n = 1 << 20;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let mut y = stream.clone_htod(&vec![1.0f32; n])?;
    for _ in 0..3 {
        let _step = cuda_embed::nvtx::range("step");
        // SAFETY: n threads over n elements.
        unsafe {
            scale::launch(&stream, cfg, &mut y, 2.0, n as i32)?;
            scale::launch(&stream, cfg, &mut y, 0.5, n as i32)?;
        }
    }
    {
        let mut g = Graph::new(&ctx)?;
        scale::node(&mut g, cfg, &y, 3.0, n as i32)?;
        scale::node(&mut g, cfg, &y, 0.5, n as i32)?;
        let exec = g.instantiate()?;
        let _graph = cuda_embed::nvtx::range("graph step");
        // SAFETY: as above.
        unsafe { exec.launch(&stream)? };
        exec.synchronize(&stream)?;
    }
    let out = stream.clone_dtoh(&y)?;
    assert!(out.iter().all(|&v| v == 1.5), "{:?}", &out[..4]);
    println!(
        "ok; NVTX ranges {}",
        if cuda_embed::nvtx::available() {
            "made (libnvToolsExt opened)"
        } else if cfg!(feature = "nvtx") {
            "skipped: libnvToolsExt could not be opened"
        } else {
            "not made: build with `--features nvtx`"
        }
    );
    Ok(())
}
