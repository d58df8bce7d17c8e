//! The strided (N-D) kernels of an elementwise kernel: `NAME_nd1`, `NAME_nd2`, ... (one per rank
//! of [`RANKS`]), next to the flat `NAME` in the same source (see [`crate::elementwise`]).
//!
//! Its parameters are the flat kernel's (arrays, scalars, raw lengths, `long long n`), then
//! the collapsed shape padded to 8 (`long long` each) and, per
//! array parameter in declaration order, its 8 strides in elements. The host collapses the
//! dimensions that are contiguous for every operand first (so most calls have rank 1 or 2) and
//! sends the all-contiguous case to the flat, vectorised kernel instead.
//!
//! One kernel per rank in [`RANKS`], so every loop over dimensions is unrolled with the rank known
//! and each kernel holds only its rank's registers (one kernel with a branch per rank ran at a
//! fifth of the bandwidth: the rank-8 branch's registers cut every rank's occupancy). Threads are laid out 2-D:
//! `x` along the innermost dimension (coalesced where it is contiguous), `y` over the outer
//! index (rows), whose coordinates — the only divisions — are computed once per row, not per
//! element; each thread handles [`UNROLL`] elements of a row per step, loading all of them before
//! running the operation on any, so several loads are in flight per thread.
//! `i` is the flat row-major index in the output.

pub mod reduction;

use crate::elementwise::{line, output_is_read, Elementwise};
use crate::params::{ParamKind, ParamLists, Role};
use std::fmt::Write as _;

/// The ranks the N-D kernel is specialised for; the host pads a collapsed rank to the next one.
pub const RANKS: [usize; 5] = [1, 2, 3, 4, 8];

/// Dimensions passed per operand (the largest rank).
pub const DIMS: usize = 8;

/// The N-D kernel's name for rank `rank` (one of [`RANKS`]): `NAME_nd2`.
pub fn nd_kernel_name(name: &str, rank: usize) -> String {
    format!("{name}_nd{rank}")
}

/// The N-D kernels' names, in [`RANKS`] order.
pub fn nd_kernel_names(name: &str) -> Vec<String> {
    RANKS.iter().map(|&r| nd_kernel_name(name, r)).collect()
}

/// The number of launch arguments of the N-D kernel of a kernel with these parameters.
pub fn nd_arg_count(lists: &ParamLists) -> usize {
    let all = lists.all().count();
    let raw = lists.all().filter(|p| p.kind == ParamKind::Raw).count();
    let arrays = lists.all().filter(|p| p.kind == ParamKind::Array).count();
    all + raw + 2 + DIMS + DIMS * arrays
}

/// The source of the N-D kernels `NAME_nd1`, `NAME_nd2`, ... (with the template head `template`,
/// empty without placeholders): one kernel per rank, so each uses only the registers its rank
/// needs.
pub fn nd_kernel(e: &Elementwise<'_>, lists: &ParamLists, template: &str, fallback: &str) -> String {
    RANKS.iter().map(|&r| nd_kernel_rank(e, lists, template, fallback, r)).collect()
}

fn nd_kernel_rank(e: &Elementwise<'_>, lists: &ParamLists, template: &str, fallback: &str, rank: usize) -> String {
    let mut s = String::new();
    let arrays: Vec<_> = lists.all().filter(|p| p.kind == ParamKind::Array).collect();
    let mut params = crate::elementwise::declared_params(lists);
    params.push("long long _ce_n".into());
    params.push("long long _ce_rows".into());
    let dims = |prefix: &str| (0..DIMS).map(|d| format!("{prefix}{d}")).collect::<Vec<_>>();
    params.extend(dims("long long _ce_s"));
    for p in &arrays {
        params.extend(dims(&format!("long long _ce_st_{}_", p.name)));
    }
    let _ = writeln!(s, "{template}__global__ void {}({}) {{", nd_kernel_name(e.name, rank), params.join(", "));
    s.push_str("    const long long n = _ce_n;\n    (void)n;\n");
    for p in lists.all() {
        let ty = p.ty.as_str();
        match p.kind {
            ParamKind::Scalar => {
                let _ = writeln!(s, "    const {ty} {0} = _ce_p_{0};\n    (void){0};", p.name);
            }
            ParamKind::Raw => {
                let c = if p.role == Role::Input { "const " } else { "" };
                let _ =
                    writeln!(s, "    const _ce_raw<{c}{ty}> {0} = {{_ce_p_{0}, _ce_len_{0}}};\n    (void){0};", p.name);
            }
            ParamKind::Array => {}
        }
    }
    let _ = writeln!(s, "    const long long _ce_shape[{DIMS}] = {{{}}};", dims("_ce_s").join(", "));
    for p in &arrays {
        let _ = writeln!(
            s,
            "    const long long _ce_st_{0}[{DIMS}] = {{{1}}};",
            p.name,
            dims(&format!("_ce_st_{}_", p.name)).join(", ")
        );
    }
    if !e.loop_prep.trim().is_empty() {
        line(&mut s, &e.origins[2], e.loop_prep, fallback);
    }
    let _ = writeln!(s, "    {{\n        constexpr int _CE_R = {rank};");
    body(&mut s, e, &arrays, fallback);
    s.push_str("    }\n");
    if !e.after_loop.trim().is_empty() {
        line(&mut s, &e.origins[3], e.after_loop, fallback);
    }
    s.push_str("}\n");
    s
}

/// Elements of a row each thread handles per step, their loads issued before any is used.
pub const UNROLL: usize = 4;

fn body(s: &mut String, e: &Elementwise<'_>, arrays: &[&crate::params::Param], fallback: &str) {
    s.push_str(
        "        const long long _ce_inner = _ce_shape[_CE_R - 1];\n        \
         const long long _ce_jstep = (long long)gridDim.x * blockDim.x;\n        \
         for (long long _ce_o = (long long)blockIdx.y * blockDim.y + threadIdx.y; _ce_o < _ce_rows;\n             \
         _ce_o += (long long)gridDim.y * blockDim.y) {\n            long long _ce_r = _ce_o;\n",
    );
    for p in arrays {
        let _ = writeln!(s, "            long long _ce_o_{} = 0;", p.name);
    }
    s.push_str(
        "            #pragma unroll\n            for (int _ce_d = _CE_R - 2; _ce_d >= 0; --_ce_d) {\n                \
         const long long _ce_c = _ce_d == 0 ? _ce_r : _ce_r % _ce_shape[_ce_d];\n                \
         if (_ce_d > 0) _ce_r /= _ce_shape[_ce_d];\n",
    );
    for p in arrays {
        let _ = writeln!(s, "                _ce_o_{0} += _ce_c * _ce_st_{0}[_ce_d];", p.name);
    }
    s.push_str("            }\n            (void)_ce_r;\n");
    let _ = writeln!(
        s,
        "            for (long long _ce_j0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; _ce_j0 < _ce_inner;\n                 \
         _ce_j0 += {UNROLL} * _ce_jstep) {{"
    );
    let at = |name: &str| format!("_ce_p_{name}[_ce_o_{name} + _ce_j * _ce_st_{name}[_CE_R - 1]]");
    // Every load of the step first (UNROLL loads in flight per array), then the operations.
    let loaded: Vec<_> =
        arrays.iter().filter(|p| p.role == Role::Input || output_is_read(e.operation, &p.name)).collect();
    for p in &loaded {
        let _ = writeln!(s, "                {} _ce_v_{}[{UNROLL}];", p.ty, p.name);
    }
    if !loaded.is_empty() {
        let _ = writeln!(
            s,
            "                #pragma unroll\n                for (int _ce_u = 0; _ce_u < {UNROLL}; ++_ce_u) {{\n                    \
             const long long _ce_j = _ce_j0 + _ce_u * _ce_jstep;\n                    if (_ce_j < _ce_inner) {{"
        );
        for p in &loaded {
            let _ = writeln!(s, "                        _ce_v_{}[_ce_u] = {};", p.name, at(&p.name));
        }
        s.push_str("                    }\n                }\n");
    }
    let _ = writeln!(
        s,
        "                #pragma unroll\n                for (int _ce_u = 0; _ce_u < {UNROLL}; ++_ce_u) {{\n                    \
         const long long _ce_j = _ce_j0 + _ce_u * _ce_jstep;\n                    if (_ce_j >= _ce_inner) break;\n                    \
         const long long i = _ce_o * _ce_inner + _ce_j;\n                    (void)i;"
    );
    for p in arrays {
        let (ty, name) = (p.ty.as_str(), &p.name);
        if p.role == Role::Input {
            let _ = writeln!(
                s,
                "                    const {ty} {name} = _ce_v_{name}[_ce_u];\n                    (void){name};"
            );
        } else if output_is_read(e.operation, name) {
            let _ = writeln!(s, "                    {ty} {name} = _ce_v_{name}[_ce_u];");
        } else {
            let _ = writeln!(s, "                    {ty} {name};");
        }
    }
    s.push_str("                    {\n");
    line(s, &e.origins[0], e.operation, fallback);
    s.push_str(";\n                    }\n");
    for p in arrays.iter().filter(|p| p.role == Role::Output) {
        let _ = writeln!(s, "                    {} = {};", at(&p.name), p.name);
    }
    s.push_str("                }\n            }\n        }\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_one_body_per_rank() {
        let lists = ParamLists::parse("T x, scalar T a, T b", "T y").unwrap();
        let e = Elementwise { name: "axpb", operation: "y = a * x + b", ..Default::default() };
        let src = nd_kernel(&e, &lists, "template<typename T> ", "gen");
        assert!(src.starts_with("template<typename T> __global__ void axpb_nd1(const T* __restrict__ _ce_p_x, T _ce_p_a, const T* __restrict__ _ce_p_b, T* __restrict__ _ce_p_y, long long _ce_n, long long _ce_rows, long long _ce_s0,"), "{src}");
        assert!(src.contains("long long _ce_st_y_7) {"));
        assert_eq!(src.matches("constexpr int _CE_R").count(), RANKS.len());
        assert!(src.contains("__global__ void axpb_nd8("));
        assert!(src.contains("{\n        constexpr int _CE_R = 8;"));
        assert!(src.contains("_ce_p_y[_ce_o_y + _ce_j * _ce_st_y[_CE_R - 1]] = y;"));
        assert!(src.contains("_ce_v_x[_ce_u] = _ce_p_x[_ce_o_x + _ce_j * _ce_st_x[_CE_R - 1]];"));
        assert!(!src.contains("_ce_v_y"), "y is write-only: not loaded");
        // 3 arrays + 1 scalar, n, rows, 8 shape, 3 x 8 strides.
        assert_eq!(nd_arg_count(&lists), 4 + 2 + 8 + 24);
    }
}
