//! CuPy's `ElementwiseKernel` examples with `elementwise_kernel!`: `custom_add` (`z = x + y * 2`)
//! and a ReLU transform with a scalar threshold.
//!
//! Run: `cargo run --example elementwise` (needs a CUDA GPU).

use cuda_embed::elementwise_kernel;

// cp.ElementwiseKernel('float32 x, float32 y', 'float32 z', 'z = x + y * 2', 'custom_add')
elementwise_kernel!(
    custom_add,
    inputs = "T x, T y",
    outputs = "T z",
    operation = "z = x + y * 2",
    types = ["float", "double"],
);

// ReLU with a scalar: y = max(x, threshold) - threshold, for any listed element type.
elementwise_kernel!(
    relu,
    inputs = "T x, scalar T threshold",
    outputs = "T y",
    operation = "y = x > threshold ? x - threshold : T(0)",
    types = ["float", "double"],
);

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let x: Vec<f32> = (0..10).map(|k| k as f32 - 4.5).collect();
    let y: Vec<f32> = (0..10).map(|k| k as f32 * 0.5).collect();
    let xd = stream.clone_htod(&x)?;
    let yd = stream.clone_htod(&y)?;
    let mut zd = stream.alloc_zeros::<f32>(10)?;
    custom_add::launch(&stream, &xd, &yd, &mut zd)?;
    let z = stream.clone_dtoh(&zd)?;
    println!("custom_add: {z:?}");
    assert!(z.iter().zip(x.iter().zip(&y)).all(|(z, (x, y))| *z == x + y * 2.0));

    let mut rd = stream.alloc_zeros::<f32>(10)?;
    relu::launch(&stream, &xd, 1.0f32, &mut rd)?;
    let r = stream.clone_dtoh(&rd)?;
    println!("relu(x - 1): {r:?}");
    assert!(r.iter().zip(&x).all(|(r, x)| *r == (x - 1.0).max(0.0)));
    Ok(())
}
