//! TMA tensor maps (`TensorMap`, `TensorMapMut`) passed to `const __grid_constant__ CUtensorMap`
//! parameters: a copy through the tensor memory accelerator at ranks 1 to 5, over strided views
//! in and out, against the CPU; and every rule a map is checked against when it is made, refused
//! with the rule's name (the same rules are unit-tested without a GPU in
//! `runtime/src/tensor_map/rules.rs`).

use cuda_embed::tensor_map::{Rank, SupportedRank};
use cuda_embed::{cuda_kernel, CudaSlice, CudaStream, Error, LaunchConfig, NdView, NdViewMut, TensorMap, TensorMapMut};
use std::sync::Arc;

mod common;
use common::{data_pm2 as data, gpu};

cuda_kernel!(file = "examples/kernels/tma_copy.cu", archs = [90]);

/// Copies `src` into `dst` (same shape) box by box with `tma_copy_boxes`.
fn tma_copy<const R: usize>(
    s: &Arc<CudaStream>,
    src: &NdView<f32>,
    dst: &mut NdViewMut<f32>,
    box_shape: [u32; R],
) -> cuda_embed::Result<()>
where
    Rank<R>: SupportedRank,
{
    let src = TensorMap::new(src, box_shape)?;
    let mut dst = TensorMapMut::new(dst, box_shape)?;
    let shape = src.shape();
    // geom[0..5): boxes along each CUDA dimension (innermost first); geom[5..10): box extents.
    let mut geom = [1i32; 10];
    let mut blocks = 1usize;
    for k in 0..R {
        let d = R - 1 - k;
        let n = shape[k].div_ceil(box_shape[k] as usize);
        geom[d] = n as i32;
        geom[5 + d] = box_shape[k] as i32;
        blocks *= n;
    }
    let g = s.clone_htod(&geom)?;
    let bytes = box_shape.iter().product::<u32>() * 4;
    let cfg = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: bytes + 128 };
    unsafe { tma_copy_boxes::launch(s, cfg, &src, &mut dst, R as i32, &g, bytes) }
}

fn up(s: &Arc<CudaStream>, v: &[f32]) -> CudaSlice<f32> {
    s.clone_htod(v).unwrap()
}

fn rank_case<const R: usize>(s: &Arc<CudaStream>)
where
    Rank<R>: SupportedRank,
{
    // Extents that are not multiples of the box: the TMA fills the edge boxes' missing elements on
    // load and clips them on store.
    let shape: Vec<usize> = [3usize, 5, 2, 7, 52][5 - R..].to_vec();
    let mut boxes = [0u32; R];
    boxes.copy_from_slice(&[2u32, 2, 2, 4, 16][5 - R..]);
    let n: usize = shape.iter().product();
    let host = data(n, R as u64);
    let x = up(s, &host);
    let mut y = s.alloc_zeros::<f32>(n).unwrap();
    {
        let xv = NdView::new(&x, &shape).unwrap();
        let mut yv = NdViewMut::new(&mut y, &shape).unwrap();
        tma_copy(s, &xv, &mut yv, boxes).unwrap();
    }
    assert_eq!(s.clone_dtoh(&y).unwrap(), host, "rank {R}, shape {shape:?}, box {boxes:?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tma_copy_is_exact_at_ranks_one_to_five() {
    let s = gpu();
    rank_case::<1>(&s);
    rank_case::<2>(&s);
    rank_case::<3>(&s);
    rank_case::<4>(&s);
    rank_case::<5>(&s);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn strided_views_are_read_and_written_in_place() {
    let s = gpu();
    // Columns 8..40 of a 10 x 64 array into columns 4..36 of a 10 x 48 array: both maps have a
    // row stride longer than their rows, and a store must not touch the other columns.
    let (rows, w_in, w_out) = (10usize, 64usize, 48usize);
    let host = data(rows * w_in, 9);
    let x = up(&s, &host);
    let mut y = s.clone_htod(&vec![-7.0f32; rows * w_out]).unwrap();
    {
        let xv = NdView::new(&x, &[rows, w_in]).unwrap().slice(1, 8..40, 1).unwrap();
        let mut yv = NdViewMut::new(&mut y, &[rows, w_out]).unwrap().slice(1, 4..36, 1).unwrap();
        tma_copy(&s, &xv, &mut yv, [4, 8]).unwrap();
    }
    let got = s.clone_dtoh(&y).unwrap();
    for r in 0..rows {
        for c in 0..w_out {
            let want = if (4..36).contains(&c) { host[r * w_in + 8 + c - 4] } else { -7.0 };
            assert_eq!(got[r * w_out + c], want, "row {r}, column {c}");
        }
    }
}

fn refused<T>(r: cuda_embed::Result<T>, rule: &str) {
    match r {
        Err(Error::Shape { detail, .. }) => assert!(detail.starts_with(&format!("{rule}:")), "{rule}: {detail}"),
        Err(e) => panic!("{rule}: another error: {e}"),
        Ok(_) => panic!("{rule}: accepted"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn views_the_tma_cannot_address_are_refused_with_the_rule() {
    let s = gpu();
    let x = s.alloc_zeros::<f32>(4096).unwrap();
    let at = |offset| NdView::with_strides(&x, &[64], &[1], offset).unwrap();
    refused(TensorMap::new(&at(1), [16]), "alignment");
    refused(TensorMap::new(&at(2), [16]), "alignment");
    assert!(TensorMap::new(&at(4), [16]).is_ok(), "16-byte aligned offset");
    let rows6 = NdView::new(&x, &[10, 6]).unwrap(); // 24-byte rows
    refused(TensorMap::new(&rows6, [2, 4]), "stride alignment");
    let square = NdView::new(&x, &[64, 64]).unwrap();
    refused(TensorMap::new(&square.transpose(), [8, 8]), "contiguous inner axis");
    refused(TensorMap::new(&square.slice(0, .., -1).unwrap(), [8, 8]), "stride alignment");
    refused(TensorMap::new(&square.slice(1, 0..64, 2).unwrap(), [8, 8]), "contiguous inner axis");
    let row = NdView::new(&x, &[64]).unwrap().broadcast_to(&[8, 64]).unwrap();
    refused(TensorMap::new(&row, [8, 8]), "stride alignment");
    refused(TensorMap::new(&square, [300, 8]), "box extent");
    refused(TensorMap::new(&square, [0, 8]), "box extent");
    refused(TensorMap::new(&square, [8, 2]), "box inner bytes");
    refused(TensorMap::new(&NdView::new(&x, &[0, 64]).unwrap(), [8, 8]), "extent");
    refused(TensorMap::<f32, 2>::new(&NdView::new(&x, &[4, 4, 4]).unwrap(), [4, 4]), "box rank");
    refused(TensorMap::<f32, 5>::new(&NdView::new(&x, &[2, 2, 2, 2, 2, 16]).unwrap(), [1, 1, 1, 1, 4]), "rank");
    // Writable maps are held to the same rules.
    let mut y = s.alloc_zeros::<f32>(4096).unwrap();
    let mut yv = NdViewMut::with_strides(&mut y, &[64], &[1], 3).unwrap();
    refused(TensorMapMut::new(&mut yv, [16]), "alignment");
}
