//! A kernel whose source is built while the program runs (the PyCUDA/CuPy `RawModule` pattern):
//! a polynomial with coefficients chosen at run time is written out as C++ (Horner's rule, fully
//! unrolled), compiled by NVRTC for this GPU as a template for `float` and `double`, cached on
//! disk, and launched with checked argument lists.
//!
//! Run with `cargo run --example runtime_program` (twice: the second run loads the cubin from the
//! disk cache). Without a GPU it prints why and exits with status 2.

use cuda_embed::{Arg, LaunchConfig, Program};

const BLOCK: u32 = 128;

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();

    // Coefficients known only at run time (here: from the command line, else a default).
    let coefficients: Vec<f64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let coefficients = if coefficients.is_empty() { vec![1.0, -0.5, 0.25, 2.0] } else { coefficients };
    let horner = coefficients.iter().rev().fold(String::new(), |acc, c| {
        if acc.is_empty() {
            format!("T({c:?})")
        } else {
            format!("T({c:?}) + x * ({acc})")
        }
    });
    let source = format!(
        r#"
        template <class T> __global__ void __launch_bounds__(BLOCK) poly(const T* xs, T* ys, int n) {{
            int i = blockIdx.x * BLOCK + threadIdx.x;
            if (i < n) {{ T x = xs[i]; ys[i] = {horner}; }}
        }}"#
    );
    let program = Program::new(source)
        .name("poly.cu")
        .define("BLOCK", BLOCK)
        .name_expression("poly<float>")
        .name_expression("poly<double>");

    let t0 = std::time::Instant::now();
    let module = program.load(&ctx)?; // NVRTC for this GPU, or a disk-cache hit
    let load_ms = t0.elapsed().as_secs_f64() * 1e3;

    let n = 100_000i32;
    let cfg =
        LaunchConfig { grid_dim: ((n as u32).div_ceil(BLOCK), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
    let eval = |x: f64| coefficients.iter().rev().fold(0.0, |acc, c| acc * x + c);

    let xs: Vec<f64> = (0..n).map(|i| i as f64 / n as f64 * 2.0 - 1.0).collect();
    let x = stream.clone_htod(&xs)?;
    let mut y = stream.alloc_zeros::<f64>(n as usize)?;
    let poly = module.kernel("poly<double>")?;
    // SAFETY: the kernel reads n elements of x and writes n of y; both hold n.
    unsafe { poly.launch(&stream, cfg, &mut [Arg::slice(&x), Arg::slice_mut(&mut y), Arg::value(&n)])? };
    let out = stream.clone_dtoh(&y)?;
    let wrong_f64 = out.iter().zip(&xs).filter(|(o, x)| (**o - eval(**x)).abs() > 1e-12).count();

    let xs32: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
    let x = stream.clone_htod(&xs32)?;
    let mut y = stream.alloc_zeros::<f32>(n as usize)?;
    let poly = module.kernel("poly<float>")?;
    // SAFETY: as above.
    unsafe { poly.launch(&stream, cfg, &mut [Arg::slice(&x), Arg::slice_mut(&mut y), Arg::value(&n)])? };
    let out = stream.clone_dtoh(&y)?;
    let wrong_f32 = out.iter().zip(&xs32).filter(|(o, x)| (f64::from(**o) - eval(f64::from(**x))).abs() > 1e-4).count();

    // A wrong argument list is an Error, not a launch.
    // SAFETY: rejected before the driver is called.
    let mismatch = unsafe { poly.launch(&stream, cfg, &mut [Arg::slice(&x), Arg::value(&n)]) };

    println!("coefficients {coefficients:?}: ys[i] = {horner}");
    println!(
        "poly on {} (sm_{}): loaded in {load_ms:.2} ms {}, {wrong_f64} wrong (f64), {wrong_f32} wrong (f32)",
        ctx.name()?,
        module.arch(),
        if module.from_cache() { "from the disk cache" } else { "after compiling with NVRTC" },
    );
    if let Some(file) = module.cache_file() {
        println!("cache file: {}", file.display());
    }
    println!("launch with 2 of 3 arguments: {}", mismatch.err().map_or("accepted (!)".into(), |e| e.to_string()));
    if wrong_f64 + wrong_f32 != 0 {
        std::process::exit(1);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("runtime_program example: {e}");
        std::process::exit(2);
    }
}
