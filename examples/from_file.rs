//! A kernel from a `.cu` file with a header, compile options from the macro. Editing the `.cu`
//! file or the header rebuilds the crate.
//!
//! Run with `cargo run --example from_file`. Without a GPU it prints why and exits with status 2.

use cuda_embed::{cuda_kernel, LaunchConfig};

cuda_kernel!(file = "examples/kernels/softplus.cu", defines = ["BETA=2.0f"], std = "c++17");

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let xs: Vec<f32> = (-50..50).map(|i| i as f32 / 10.0).collect();
    let x = stream.clone_htod(&xs)?;
    let mut y = stream.alloc_zeros::<f32>(xs.len())?;
    unsafe { softplus::launch(&stream, LaunchConfig::for_num_elems(xs.len() as u32), &x, &mut y, xs.len() as i32)? };
    let out = stream.clone_dtoh(&y)?;
    let worst = xs.iter().zip(&out).map(|(x, y)| ((2.0 * x).exp().ln_1p() / 2.0 - y).abs()).fold(0.0f32, f32::max);
    println!("softplus from examples/kernels/softplus.cu: max error {worst:e} ({:?})", softplus::module().build_info());
    if worst > 1e-5 {
        std::process::exit(1);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("from_file example: {e}");
        std::process::exit(2);
    }
}
