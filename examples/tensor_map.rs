//! A TMA tiled copy: a 2-D `f32` matrix copied box by box through shared memory with
//! `cp.async.bulk.tensor` (Hopper, sm_90), the source and destination described by tensor maps
//! made from N-D views, then a column slice of it copied into the middle of a wider matrix (a
//! strided map on both sides). Checked against the CPU.
//!
//! Run: `scripts/with-cuda cargo run --release --example tensor_map` (needs an sm_90 GPU).

use cuda_embed::{cuda_kernel, LaunchConfig, NdView, NdViewMut, TensorMap, TensorMapMut};

// `const __grid_constant__ CUtensorMap src` takes `&TensorMap`, `... dst` takes `&mut TensorMapMut`.
cuda_kernel!(file = "examples/kernels/tma_copy.cu", archs = [90]);

const STAGES: u32 = 4;

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let s = ctx.default_stream();
    let (rows, cols) = (1000usize, 1024usize);
    let host: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    let x = s.clone_htod(&host)?;
    let mut y = s.alloc_zeros::<f32>(rows * cols)?;

    // 16 x 256 boxes (16 KiB); 1000 rows is not a multiple of 16: the last boxes are clipped.
    let (bh, bw) = (16u32, 256u32);
    let box_bytes = bh * bw * 4;
    let xv = NdView::new(&x, &[rows, cols])?;
    let mut yv = NdViewMut::new(&mut y, &[rows, cols])?;
    {
        let src = TensorMap::new(&xv, [bh, bw])?;
        let mut dst = TensorMapMut::new(&mut yv, [bh, bw])?;
        let (bx, by) = ((cols as u32).div_ceil(bw), (rows as u32).div_ceil(bh));
        let smem = STAGES * box_bytes + 128;
        tma_copy_2d::set_max_dynamic_shared_memory(&ctx, smem)?;
        let cfg = LaunchConfig { grid_dim: (64, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: smem };
        unsafe {
            tma_copy_2d::launch(&s, cfg, &src, &mut dst, bx as i32, (bx * by) as i32, bw as i32, bh as i32, box_bytes)?
        };
    }
    let got = s.clone_dtoh(&y)?;
    assert_eq!(got, host, "the TMA copy differs from its source");
    println!("copied {rows} x {cols} f32 through the TMA in {bh} x {bw} boxes: exact");

    // Columns 256..512 of x into columns 8..264 of a 1000 x 272 matrix: strided maps both ways.
    let mut w = s.alloc_zeros::<f32>(rows * 272)?;
    {
        let part = NdView::new(&x, &[rows, cols])?.slice(1, 256..512, 1)?;
        let mut into = NdViewMut::new(&mut w, &[rows, 272])?.slice(1, 8..264, 1)?;
        let (bh, bw) = (8u32, 64u32);
        let src = TensorMap::new(&part, [bh, bw])?;
        let mut dst = TensorMapMut::new(&mut into, [bh, bw])?;
        let (bx, by) = (256u32.div_ceil(bw), (rows as u32).div_ceil(bh));
        let smem = STAGES * bh * bw * 4 + 128;
        let cfg = LaunchConfig { grid_dim: (32, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: smem };
        unsafe {
            tma_copy_2d::launch(
                &s,
                cfg,
                &src,
                &mut dst,
                bx as i32,
                (bx * by) as i32,
                bw as i32,
                bh as i32,
                bh * bw * 4,
            )?
        };
    }
    let got = s.clone_dtoh(&w)?;
    for r in 0..rows {
        for c in 0..272 {
            let want = if (8..264).contains(&c) { host[r * cols + 256 + c - 8] } else { 0.0 };
            assert_eq!(got[r * 272 + c], want, "row {r}, column {c}");
        }
    }
    println!("copied a 1000 x 256 column slice into the middle of a 1000 x 272 matrix: exact");
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("tensor_map example: {e}");
        std::process::exit(2);
    }
}
