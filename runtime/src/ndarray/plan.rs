//! How an elementwise launch over N-D operands runs: the inputs broadcast to the output's shape,
//! the dimensions collapsed, then either the flat (vectorised) kernel when every operand is one
//! contiguous run, or the strided kernel specialised for the collapsed rank.

use crate::args::layout::{collapse, show, Collapsed, Layout, MAX_RANK};
use crate::error::{Error, Result};
use crate::module::kernel::KernelRef;
use cudarc::driver::LaunchConfig;

/// The ranks the strided kernel is specialised for; a collapsed rank above the last but one is
/// padded to the last (leading dimensions of 1).
pub const RANKS: [usize; 5] = [1, 2, 3, 4, MAX_RANK];

/// Threads per block of the strided kernel.
const BLOCK: u32 = 256;

/// Elements of a row per thread and step (`cuda_embed_source::ndarray::UNROLL`).
const UNROLL: u64 = 4;

/// An elementwise launch over `A` array operands (inputs first), planned on the host.
#[derive(Clone, Debug)]
pub struct NdLaunch<const A: usize> {
    /// Number of indices (elements of the output).
    pub n: usize,
    /// Every operand is one contiguous run in the output's order: use the flat kernel.
    pub flat: bool,
    /// Rows: `n` over the innermost extent (the kernel's outer loop).
    pub rows: i64,
    /// The strided kernel's rank (one of [`RANKS`]).
    pub rank: i32,
    /// The position of `rank` in [`RANKS`] (which of the N-D kernels runs).
    pub variant: usize,
    /// The collapsed shape, padded with leading 1s to `rank`, then with 1s to [`MAX_RANK`].
    pub shape: [i64; MAX_RANK],
    /// Per operand, its strides over `shape` (elements).
    pub strides: [[i64; MAX_RANK]; A],
    /// The strided kernel's grid: block `(bx, by)`, `bx` threads along the innermost dimension.
    pub config: LaunchConfig,
}

impl<const A: usize> NdLaunch<A> {
    /// Plans `kernel` over `operands` (name, layout), the first `inputs` of them inputs and the
    /// rest outputs: every output has the first output's shape, every input broadcasts to it
    /// (else an [`Error::Shape`] naming the operands and their shapes).
    pub fn elementwise(kernel: KernelRef, operands: [(&str, &Layout); A], inputs: usize) -> Result<Self> {
        let op = || format!("kernel `{}` of {}", kernel.name(), kernel.module().origin());
        let (n, c) = broadcast_collapse(&op, &operands, inputs)?;
        Ok(Self::from_collapsed(n, &c))
    }

    fn from_collapsed(n: usize, c: &Collapsed) -> Self {
        let mut strides = [[0i64; MAX_RANK]; A];
        let g = NdLaunch::<0>::geometry(n, c, &mut strides);
        NdLaunch {
            n,
            flat: g.flat,
            rows: g.rows,
            rank: g.rank,
            variant: g.variant,
            shape: g.shape,
            strides,
            config: g.config,
        }
    }
}

impl NdLaunch<0> {
    /// [`NdLaunch::elementwise`] for a number of operands known only at run time (the run-time
    /// twins): the plan, and each operand's strides over its `shape`. `op` names the kernel in
    /// errors.
    pub fn elementwise_dyn(
        op: &str,
        operands: &[(&str, &Layout)],
        inputs: usize,
    ) -> Result<(Self, Vec<[i64; MAX_RANK]>)> {
        let (n, c) = broadcast_collapse(&|| op.to_string(), operands, inputs)?;
        let mut strides = vec![[0i64; MAX_RANK]; operands.len()];
        let plan = Self::geometry(n, &c, &mut strides);
        Ok((plan, strides))
    }

    /// The plan of `n` indices over the collapsed `c`, each operand's padded strides written to
    /// `strides` (the plan's own are empty).
    fn geometry(n: usize, c: &Collapsed, strides: &mut [[i64; MAX_RANK]]) -> Self {
        let r = c.shape.len();
        let flat = r == 0 || (r == 1 && c.strides.iter().all(|s| s[0] == 1));
        let variant = RANKS.iter().position(|&k| k >= r.max(1)).unwrap_or(RANKS.len() - 1);
        let rank = RANKS[variant];
        let pad = rank - r.max(1).min(rank);
        let mut shape = [1i64; MAX_RANK];
        for d in 0..r {
            shape[pad + d] = c.shape[d] as i64;
            for (k, s) in c.strides.iter().enumerate() {
                strides[k][pad + d] = s[d] as i64;
            }
        }
        let inner = shape[rank - 1].max(1) as u64;
        let outer = (n as u64 / inner).max(1);
        // A warp along the innermost dimension (coalesced where it is contiguous), the rest of
        // the block along the next rows: a transposed operand's 32-byte sectors are then read by
        // neighbouring rows of one block.
        let cap = if outer == 1 { BLOCK as u64 } else { 32 };
        let bx = inner.next_power_of_two().min(cap) as u32;
        let by = BLOCK / bx;
        let gx = inner.div_ceil(u64::from(bx) * UNROLL).min(i32::MAX as u64) as u32;
        let gy = outer.div_ceil(u64::from(by)).min(65535) as u32;
        let config = LaunchConfig { grid_dim: (gx, gy, 1), block_dim: (bx, by, 1), shared_mem_bytes: 0 };
        NdLaunch { n, flat, rows: outer as i64, rank: rank as i32, variant, shape, strides: [], config }
    }
}

/// The operands broadcast to the first output's shape (`operands[inputs]`) and their dimensions
/// collapsed: the number of indices and the collapsed shape and strides. `op` names the kernel.
fn broadcast_collapse(
    op: &dyn Fn() -> String,
    operands: &[(&str, &Layout)],
    inputs: usize,
) -> Result<(usize, Collapsed)> {
    let fail = |detail: String| Error::Shape { op: op(), detail };
    let Some(&(out_name, out)) = operands.get(inputs) else {
        return Err(fail("an elementwise kernel needs an output array".into()));
    };
    let shape = out.shape();
    let mut views = Vec::with_capacity(operands.len());
    for (k, (name, l)) in operands.iter().enumerate() {
        views.push(if k < inputs {
            l.broadcast_to(shape).map_err(|_| {
                fail(format!(
                    "input `{name}` of shape {} does not broadcast to the shape {} of output `{out_name}`",
                    show(l.shape()),
                    show(shape)
                ))
            })?
        } else if l.shape() != shape {
            return Err(fail(format!(
                "output `{name}` has shape {} but output `{out_name}` has {}: outputs must have one shape",
                show(l.shape()),
                show(shape)
            )));
        } else {
            **l
        });
    }
    let strides: Vec<&[isize]> = views.iter().map(Layout::strides).collect();
    Ok((out.len(), collapse(shape, &strides)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan<const A: usize>(shape: &[usize], strides: [&[isize]; A]) -> NdLaunch<A> {
        let n = shape.iter().product();
        NdLaunch::from_collapsed(n, &collapse(shape, &strides))
    }

    #[test]
    fn contiguous_is_flat() {
        let p = plan(&[64, 64, 256, 256], [&[4194304, 65536, 256, 1], &[4194304, 65536, 256, 1]]);
        assert!(p.flat);
        assert_eq!(p.n, 1 << 28);
    }

    #[test]
    fn transposed_keeps_two_dims() {
        let p = plan(&[16384, 16384], [&[1, 16384], &[16384, 1], &[16384, 1]]);
        assert!(!p.flat);
        assert_eq!(p.rank, 2);
        assert_eq!(&p.shape[..2], &[16384, 16384]);
        assert_eq!(&p.strides[0][..2], &[1, 16384]);
        assert_eq!(p.config.block_dim, (32, 8, 1));
        assert_eq!(p.config.grid_dim, (128, 2048, 1));
    }

    #[test]
    fn bias_and_padding() {
        // [4096, 16384] + [16384] broadcast (stride 0 on rows).
        let p = plan(&[4096, 16384], [&[16384, 1], &[0, 1], &[16384, 1]]);
        assert_eq!((p.rank, p.flat), (2, false));
        // Rank 5 with no mergeable dims is padded to 8.
        let p = plan(&[2, 3, 4, 5, 6], [&[1, 2, 6, 24, 120]]);
        assert_eq!(p.rank, 8);
        assert_eq!(&p.shape, &[1, 1, 1, 2, 3, 4, 5, 6]);
        assert_eq!(&p.strides[0], &[0, 0, 0, 1, 2, 6, 24, 120]);
        // A strided 1-D operand: one row, a whole block along it.
        let p = plan(&[1000], [&[2], &[1]]);
        assert_eq!((p.rank, p.flat, p.config.block_dim), (1, false, (256, 1, 1)));
        // One element.
        assert!(plan(&[1, 1], [&[7, 1]]).flat);
    }
}
