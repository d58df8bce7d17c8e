//! The plan of a reduction over a set of axes (`reduction_kernel!`'s `launch_axes`): the inputs
//! broadcast to the first input's shape, the output shape read as with or without the reduced
//! axes (keepdims), the kept and the reduced dimensions each merged where contiguous for every
//! operand, then either one of the existing contiguous kernels (full, rows, columns) or the
//! strided `NAME_axes` kernel.

use crate::args::layout::{collapse, show, Layout};
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;

/// Kept and reduced dimensions `NAME_axes` takes after merging (each group).
pub const AXES_DIMS: usize = 4;

/// How the reduction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxesRoute {
    /// Nothing to compute (no output element).
    Empty,
    /// The existing full reduction over the contiguous input regions.
    Full,
    /// The existing rows kernel: `rows` x `cols` contiguous, one output per row.
    Rows {
        /// Elements per row (reduced).
        cols: usize,
    },
    /// The existing columns kernel: `rows` x `cols` contiguous, one output per column.
    Cols {
        /// Columns (kept).
        cols: usize,
    },
    /// The strided kernel.
    Strided,
}

/// A planned reduction over axes with `I` array inputs and `O` outputs.
#[derive(Clone, Debug)]
pub struct AxesPlan<const I: usize, const O: usize> {
    /// Which kernel.
    pub route: AxesRoute,
    /// Outputs (kept elements).
    pub kept: i64,
    /// Elements reduced per output.
    pub reduced: i64,
    /// 0: a warp per output; 1: a thread per output (see the kernel).
    pub mode: i32,
    /// Merged kept extents, padded with leading 1s.
    pub kept_shape: [i64; AXES_DIMS],
    /// Merged reduced extents, padded with leading 1s.
    pub reduced_shape: [i64; AXES_DIMS],
    /// Per input: element offset, kept strides, reduced strides.
    pub inputs: [(i64, [i64; AXES_DIMS], [i64; AXES_DIMS]); I],
    /// Per output: element offset, kept strides.
    pub outputs: [(i64, [i64; AXES_DIMS]); O],
    /// The strided kernel's grid.
    pub config: LaunchConfig,
}

fn err(op: &str, detail: String) -> Error {
    Error::Shape { op: op.to_string(), detail }
}

fn pad(v: &[isize]) -> [i64; AXES_DIMS] {
    let mut out = [0i64; AXES_DIMS];
    let lead = AXES_DIMS - v.len();
    for (k, &s) in v.iter().enumerate() {
        out[lead + k] = s as i64;
    }
    out
}

fn pad_shape(v: &[usize]) -> [i64; AXES_DIMS] {
    let mut out = [1i64; AXES_DIMS];
    let lead = AXES_DIMS - v.len();
    for (k, &s) in v.iter().enumerate() {
        out[lead + k] = s as i64;
    }
    out
}

/// Per input of a plan: element offset, kept strides, reduced strides.
pub type AxesInput = (i64, [i64; AXES_DIMS], [i64; AXES_DIMS]);
/// Per output of a plan: element offset, kept strides.
pub type AxesOutput = (i64, [i64; AXES_DIMS]);

impl<const I: usize, const O: usize> AxesPlan<I, O> {
    /// Plans reduction `op` (its name, for errors) over `axes` of `inputs`, into `outputs`;
    /// `sms`: the GPU's multiprocessor count.
    pub fn new(
        op: &str,
        sms: u32,
        inputs: [(&str, &Layout); I],
        axes: &[usize],
        outputs: [(&str, &Layout); O],
    ) -> Result<Self> {
        let (head, ins, outs) = AxesPlan::new_dyn(op, sms, &inputs, axes, &outputs)?;
        let mut plan = AxesPlan {
            route: head.route,
            kept: head.kept,
            reduced: head.reduced,
            mode: head.mode,
            kept_shape: head.kept_shape,
            reduced_shape: head.reduced_shape,
            inputs: [(0, [0; AXES_DIMS], [0; AXES_DIMS]); I],
            outputs: [(0, [0; AXES_DIMS]); O],
            config: head.config,
        };
        plan.inputs.copy_from_slice(&ins);
        plan.outputs.copy_from_slice(&outs);
        Ok(plan)
    }
}

impl AxesPlan<0, 0> {
    /// [`AxesPlan::new`] for numbers of operands known only at run time (the run-time twin): the
    /// plan (its own operand lists empty) and each input's and output's offset and strides.
    pub fn new_dyn(
        op: &str,
        sms: u32,
        inputs: &[(&str, &Layout)],
        axes: &[usize],
        outputs: &[(&str, &Layout)],
    ) -> Result<(Self, Vec<AxesInput>, Vec<AxesOutput>)> {
        let (ni, no) = (inputs.len(), outputs.len());
        let Some((first, l0)) = inputs.first().copied() else {
            return Err(err(op, "a reduction over axes needs an array input".into()));
        };
        let shape = l0.shape();
        let rank = shape.len();
        let mut reduced_axis = [false; super::MAX_RANK];
        for &a in axes {
            if a >= rank {
                return Err(err(op, format!("axis {a} is out of range for `{first}` of shape {}", show(shape))));
            }
            if std::mem::replace(&mut reduced_axis[a], true) {
                return Err(err(op, format!("axis {a} is listed twice in {}", show(axes))));
            }
        }
        let kept_axes: Vec<usize> = (0..rank).filter(|&a| !reduced_axis[a]).collect();
        let red_axes: Vec<usize> = (0..rank).filter(|&a| reduced_axis[a]).collect();
        let kept_shape: Vec<usize> = kept_axes.iter().map(|&a| shape[a]).collect();
        let red_shape: Vec<usize> = red_axes.iter().map(|&a| shape[a]).collect();
        let keep_dims: Vec<usize> = (0..rank).map(|a| if reduced_axis[a] { 1 } else { shape[a] }).collect();
        let mut in_layouts = Vec::with_capacity(ni);
        for (name, l) in inputs.iter() {
            in_layouts.push(l.broadcast_to(shape).map_err(|_| {
                err(
                    op,
                    format!(
                        "input `{name}` of shape {} does not broadcast to the shape {} of `{first}`",
                        show(l.shape()),
                        show(shape)
                    ),
                )
            })?);
        }
        let mut out_kept: Vec<Vec<isize>> = Vec::with_capacity(no);
        for (name, l) in outputs.iter() {
            let strides = if l.shape() == kept_shape.as_slice() {
                l.strides().to_vec()
            } else if l.shape() == keep_dims.as_slice() {
                kept_axes.iter().map(|&a| l.strides()[a]).collect()
            } else {
                return Err(err(
                    op,
                    format!(
                        "output `{name}` has shape {} but reducing axes {} of shape {} gives {} (or {} with the reduced axes kept)",
                        show(l.shape()),
                        show(axes),
                        show(shape),
                        show(&kept_shape),
                        show(&keep_dims)
                    ),
                ));
            };
            out_kept.push(strides);
        }
        let pick = |l: &Layout, ax: &[usize]| -> Vec<isize> { ax.iter().map(|&a| l.strides()[a]).collect() };
        let in_kept: Vec<Vec<isize>> = in_layouts.iter().map(|l| pick(l, &kept_axes)).collect();
        let in_red: Vec<Vec<isize>> = in_layouts.iter().map(|l| pick(l, &red_axes)).collect();
        let kept_ops: Vec<&[isize]> = in_kept.iter().chain(&out_kept).map(Vec::as_slice).collect();
        let kc = collapse(&kept_shape, &kept_ops);
        let red_ops: Vec<&[isize]> = in_red.iter().map(Vec::as_slice).collect();
        let rc = collapse(&red_shape, &red_ops);
        let kept: usize = kept_shape.iter().product();
        let reduced: usize = red_shape.iter().product();
        if kc.shape.len() > AXES_DIMS || rc.shape.len() > AXES_DIMS {
            return Err(err(
                op,
                format!(
                    "the kept axes merge into {} and the reduced axes into {} dimensions; at most {AXES_DIMS} of each are supported: make the input contiguous first",
                    kc.shape.len(),
                    rc.shape.len()
                ),
            ));
        }
        let mut plan = AxesPlan {
            route: AxesRoute::Strided,
            kept: kept as i64,
            reduced: reduced as i64,
            mode: 0,
            kept_shape: pad_shape(&kc.shape),
            reduced_shape: pad_shape(&rc.shape),
            inputs: [],
            outputs: [],
            config: LaunchConfig { grid_dim: (1, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 },
        };
        let ins: Vec<AxesInput> = in_layouts
            .iter()
            .enumerate()
            .map(|(k, l)| (l.offset() as i64, pad(&kc.strides[k]), pad(&rc.strides[k])))
            .collect();
        let outs: Vec<AxesOutput> =
            outputs.iter().enumerate().map(|(k, (_, l))| (l.offset() as i64, pad(&kc.strides[ni + k]))).collect();
        if kept == 0 {
            plan.route = AxesRoute::Empty;
            return Ok((plan, ins, outs));
        }
        plan.route = route(&plan, &ins, &outs, kc.shape.len(), rc.shape.len());
        let inner_red = plan.reduced_shape[AXES_DIMS - 1];
        let (red_inner_stride, kept_inner_stride) = (ins[0].2[AXES_DIMS - 1], ins[0].1[AXES_DIMS - 1]);
        let warp_per_output = (red_inner_stride.abs() == 1 && inner_red >= 32) || kept_inner_stride.abs() != 1;
        let wave = u64::from(sms.max(1)) * 8;
        if warp_per_output {
            let blocks = (kept as u64).div_ceil(8).clamp(1, wave * 64) as u32;
            plan.config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        } else {
            plan.mode = 1;
            let outer = (reduced as u64 / inner_red.max(1) as u64).max(1);
            let by = outer.next_power_of_two().min(16) as u32;
            let blocks = (kept as u64).div_ceil(32).clamp(1, wave * 64) as u32;
            plan.config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (32, by, 1), shared_mem_bytes: 0 };
        }
        Ok((plan, ins, outs))
    }
}

/// The contiguous kernel that can run the plan, if any: every input one row-major block in
/// [kept, reduced] order (rows) or [reduced, kept] order (columns), every output contiguous.
fn route(
    p: &AxesPlan<0, 0>,
    inputs: &[AxesInput],
    outputs: &[AxesOutput],
    kept_rank: usize,
    red_rank: usize,
) -> AxesRoute {
    let last = AXES_DIMS - 1;
    if p.reduced == 0 || kept_rank > 1 || red_rank > 1 {
        return AxesRoute::Strided;
    }
    let outs_contiguous = outputs.iter().all(|o| kept_rank == 0 || o.1[last] == 1);
    if !outs_contiguous {
        return AxesRoute::Strided;
    }
    let red_unit = inputs.iter().all(|i| red_rank == 0 || i.2[last] == 1);
    if kept_rank == 0 && red_unit {
        return AxesRoute::Full;
    }
    if kept_rank == 1 && red_unit && inputs.iter().all(|i| i.1[last] == p.reduced) {
        return AxesRoute::Rows { cols: p.reduced as usize };
    }
    if kept_rank == 1 && inputs.iter().all(|i| i.1[last] == 1 && (red_rank == 0 || i.2[last] == p.kept)) {
        return AxesRoute::Cols { cols: p.kept as usize };
    }
    AxesRoute::Strided
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(shape: &[usize], axes: &[usize], out: &[usize]) -> Result<AxesPlan<1, 1>> {
        let n: usize = shape.iter().product();
        let x = Layout::row_major(shape, 0, n).unwrap();
        let y = Layout::row_major(out, 0, out.iter().product()).unwrap();
        AxesPlan::new("r", 132, [("x", &x)], axes, [("y", &y)])
    }

    #[test]
    fn routes() {
        assert_eq!(plan(&[8, 16], &[0, 1], &[]).unwrap().route, AxesRoute::Full);
        assert_eq!(plan(&[8, 16], &[1], &[8]).unwrap().route, AxesRoute::Rows { cols: 16 });
        assert_eq!(plan(&[8, 16], &[1], &[8, 1]).unwrap().route, AxesRoute::Rows { cols: 16 });
        assert_eq!(plan(&[8, 16], &[0], &[16]).unwrap().route, AxesRoute::Cols { cols: 16 });
        assert_eq!(plan(&[4, 5, 6], &[1, 2], &[4]).unwrap().route, AxesRoute::Rows { cols: 30 });
        assert_eq!(plan(&[4, 5, 6], &[0, 1], &[6]).unwrap().route, AxesRoute::Cols { cols: 6 });
        let p = plan(&[64, 128, 64, 128], &[0, 2], &[128, 128]).unwrap();
        assert_eq!((p.route, p.mode), (AxesRoute::Strided, 1));
        assert_eq!(p.kept_shape, [1, 1, 128, 128]);
        assert_eq!(p.inputs[0].2, [0, 0, 1048576, 128]);
        let p = plan(&[64, 128, 64, 128], &[1, 3], &[64, 1, 64, 1]).unwrap();
        assert_eq!((p.route, p.mode), (AxesRoute::Strided, 0));
        assert_eq!(p.outputs[0].1, [0, 0, 64, 1]);
        assert_eq!(plan(&[0, 3], &[1], &[0]).unwrap().route, AxesRoute::Empty);
        assert_eq!(plan(&[3, 0], &[1], &[3]).unwrap().route, AxesRoute::Strided, "empty rows: identity per output");
    }

    #[test]
    fn errors() {
        let e = plan(&[4, 5], &[2], &[4]).unwrap_err().to_string();
        assert!(e.contains("axis 2 is out of range"), "{e}");
        let e = plan(&[4, 5], &[1, 1], &[4]).unwrap_err().to_string();
        assert!(e.contains("listed twice"), "{e}");
        let e = plan(&[4, 5], &[1], &[5]).unwrap_err().to_string();
        assert!(
            e.contains("output `y` has shape [5] but reducing axes [1] of shape [4, 5] gives [4] (or [4, 1]"),
            "{e}"
        );
    }
}
