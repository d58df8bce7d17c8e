//! `NAME_axes`: a reduction over any set of axes of strided N-D inputs, next to the full, rows
//! and columns kernels of [`crate::reduction`] (and over the same `NAME_ops`).
//!
//! The host merges the kept dimensions and the reduced dimensions that are contiguous for every
//! operand, pads each group to [`AXES_DIMS`] (leading extents of 1) and passes extents, offsets and
//! strides as `long long` parameters after the user's (see [`axes_kernel`]). Rows and columns of
//! contiguous data go to the existing kernels; this one covers the rest in one of two modes:
//!
//! - mode 0, a warp per output: lanes stride the innermost reduced dimension (coalesced when it is
//!   contiguous), nested loops walk the outer reduced dimensions (no division per element), then a
//!   fixed shuffle tree;
//! - mode 1, a thread per output: `threadIdx.x` along the innermost kept dimension (coalesced when
//!   that is contiguous), the outer reduced positions dealt round-robin to `threadIdx.y`, then the
//!   fixed column tree over `threadIdx.y`.
//!
//! Every thread's order and the trees are fixed by the plan, which depends on the shape only:
//! results are bit-identical from run to run.

use crate::reduction::ReductionSource;
use std::fmt::Write;

/// Kept and reduced dimensions the kernel takes (each group after merging).
pub const AXES_DIMS: usize = 4;

/// The kernel's name: `NAME_axes`.
pub fn axes_kernel_name(name: &str) -> String {
    format!("{name}_axes")
}

fn list(prefix: &str) -> String {
    (0..AXES_DIMS).map(|d| format!("{prefix}{d}")).collect::<Vec<_>>().join(", ")
}

/// Appends `NAME_axes` to `out` (after `NAME_ops` and the helpers).
pub fn axes_kernel(src: &ReductionSource, out: &mut String) {
    let name = &src.name;
    let arrays: Vec<_> = src.inputs.iter().filter(|p| !p.scalar).collect();
    let scalars: Vec<_> = src.inputs.iter().filter(|p| p.scalar).collect();
    let (head, targs) = if src.placeholders.is_empty() {
        ("extern \"C\" ".to_string(), String::new())
    } else {
        let ps: Vec<String> = src.placeholders.iter().map(|p| format!("typename {p}")).collect();
        (format!("template <{}> ", ps.join(", ")), format!("<{}>", src.placeholders.join(", ")))
    };
    let mut params: Vec<String> = src
        .inputs
        .iter()
        .map(|p| {
            if p.scalar {
                format!("const {} {}", p.ty, p.name)
            } else {
                format!("const {}* __restrict__ {}", p.ty, p.name)
            }
        })
        .chain(src.outputs.iter().map(|p| format!("{}* __restrict__ {}", p.ty, p.name)))
        .collect();
    params.push("const long long __K, const long long __R, const int __mode".into());
    params.push(list("const long long __ks"));
    params.push(list("const long long __rs"));
    for p in &arrays {
        params.push(format!(
            "const long long __o_{0}, {1}, {2}",
            p.name,
            list(&format!("const long long __k_{}_", p.name)),
            list(&format!("const long long __r_{}_", p.name))
        ));
    }
    for p in &src.outputs {
        params.push(format!("const long long __o_{0}, {1}", p.name, list(&format!("const long long __k_{}_", p.name))));
    }
    let _ = writeln!(
        out,
        "\n{head}__global__ void __launch_bounds__(512) {}({}) {{",
        axes_kernel_name(name),
        params.join(", ")
    );
    let _ = writeln!(out, "    typedef {name}_ops{targs} _ce_O;\n    typedef typename _ce_O::R _ce_R;");
    let _ = writeln!(out, "    const long long __ks[{AXES_DIMS}] = {{{}}};", list("__ks"));
    let _ = writeln!(out, "    const long long __rs[{AXES_DIMS}] = {{{}}};", list("__rs"));
    for p in &arrays {
        let _ = writeln!(
            out,
            "    const long long __k_{0}[{AXES_DIMS}] = {{{1}}};",
            p.name,
            list(&format!("__k_{}_", p.name))
        );
        let _ = writeln!(
            out,
            "    const long long __r_{0}[{AXES_DIMS}] = {{{1}}};",
            p.name,
            list(&format!("__r_{}_", p.name))
        );
    }
    for p in &src.outputs {
        let _ = writeln!(
            out,
            "    const long long __k_{0}[{AXES_DIMS}] = {{{1}}};",
            p.name,
            list(&format!("__k_{}_", p.name))
        );
    }
    let all_k: Vec<&str> =
        arrays.iter().map(|p| p.name.as_str()).chain(src.outputs.iter().map(|p| p.name.as_str())).collect();
    // Kept offsets of output `__k` (one division chain per output, not per element).
    let mut kept = String::from("{\n            long long __t = __k;\n");
    for n in &all_k {
        let _ = writeln!(kept, "            __p_{n} = __o_{n};");
    }
    kept.push_str("            #pragma unroll\n            for (int __d = AXES - 1; __d >= 0; --__d) {\n                const long long __c = __d == 0 ? __t : __t % __ks[__d];\n                if (__d > 0) __t /= __ks[__d];\n");
    for n in &all_k {
        let _ = writeln!(kept, "                __p_{n} += __c * __k_{n}[__d];");
    }
    kept.push_str("            }\n        }");
    let decl_p: String = all_k.iter().map(|n| format!("long long __p_{n} = 0; (void)__p_{n}; ")).collect();
    // The walk over the reduced space: outer dims nested, the innermost strided by `step`.
    let walk = |first: &str, step: &str, guard: &str, guard_next: &str| {
        let mut s = String::new();
        let _ = write!(s, "for (long long __a = 0; __a < __rs[0]; ++__a)\n            for (long long __b = 0; __b < __rs[1]; ++__b)\n            for (long long __e = 0; __e < __rs[2]; ++__e) {{\n");
        let _ = writeln!(s, "                {guard}");
        for p in &arrays {
            let _ = writeln!(
                s,
                "                const long long __q_{0} = __p_{0} + __a * __r_{0}[0] + __b * __r_{0}[1] + __e * __r_{0}[2];",
                p.name
            );
        }
        let mut margs: Vec<String> =
            arrays.iter().map(|p| format!("{0}[__q_{0} + __f * __r_{0}[3]]", p.name)).collect();
        margs.extend(scalars.iter().map(|p| p.name.clone()));
        margs.push("((__a * __rs[1] + __b) * __rs[2] + __e) * __rs[3] + __f".into());
        margs.push("__R".into());
        let _ = writeln!(
            s,
            "                for (long long __f = {first}; __f < __rs[3]; __f += {step}) __acc = _ce_O::reduce(__acc, _ce_O::map({}));",
            margs.join(", ")
        );
        let _ = writeln!(s, "                {guard_next}\n            }}");
        s
    };
    let post = |at_acc: &str| {
        let outs: String = src.outputs.iter().map(|p| format!(", {0}[__p_{0}]", p.name)).collect();
        let sc: String = scalars.iter().map(|p| format!(", {}", p.name)).collect();
        format!("_ce_O::post({at_acc}{outs}{sc}, __R)")
    };
    let _ = write!(
        out,
        r#"    constexpr int AXES = {AXES_DIMS};
    if (__mode == 0) {{
        const int __lane = threadIdx.x & 31;
        const long long __warps = ((long long)gridDim.x * blockDim.x) >> 5;
        for (long long __k = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; __k < __K; __k += __warps) {{
        {decl_p}
        {kept}
            _ce_R __acc = _ce_O::identity();
            {walk0}
#pragma unroll
            for (int __d = 16; __d > 0; __d >>= 1) __acc = _ce_O::reduce(__acc, cuda_embed_reduce::shfl_down(__acc, __d, 32));
            if (__lane == 0) {post0};
        }}
    }} else {{
        __shared__ __align__(16) unsigned char __tile_mem[512 * sizeof(_ce_R)];
        _ce_R* __tile = reinterpret_cast<_ce_R*>(__tile_mem);
        const int __tx = threadIdx.x, __ty = threadIdx.y;
        const int __slot = __ty * blockDim.x + __tx;
        for (long long __kb = (long long)blockIdx.x * blockDim.x; __kb < __K; __kb += (long long)gridDim.x * blockDim.x) {{
            const long long __k = __kb + __tx;
            _ce_R __acc = _ce_O::identity();
        {decl_p}
            if (__k < __K) {{
        {kept}
                int __sel = 0;
                {walk1}
            }}
            __tile[__slot] = __acc;
            cuda_embed_reduce::column_tree<_ce_O, 1>(__tile, __slot);
            if (__ty == 0 && __k < __K) {post1};
            __syncthreads();
        }}
    }}
}}
"#,
        walk0 = walk("__lane", "32", "", ""),
        walk1 = walk("0", "1", "if (__sel == __ty) {", "} if (++__sel == (int)blockDim.y) __sel = 0;"),
        post0 = post("__acc"),
        post1 = post("__tile[__tx]"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reduction::{RedParam, Snippet};

    #[test]
    fn axes_kernel_signature_and_modes() {
        let src = ReductionSource {
            name: "sumsq".into(),
            placeholders: vec!["T".into()],
            inputs: vec![
                RedParam { name: "x".into(), ty: "T".into(), scalar: false },
                RedParam { name: "s".into(), ty: "T".into(), scalar: true },
            ],
            outputs: vec![RedParam { name: "y".into(), ty: "T".into(), scalar: false }],
            map: Snippet::new("x * x * s"),
            reduce: Snippet::new("a + b"),
            identity: Snippet::new("0"),
            instances: vec![vec!["float".into()]],
            ..Default::default()
        };
        let mut out = String::new();
        axes_kernel(&src, &mut out);
        assert!(out.contains("template <typename T> __global__ void __launch_bounds__(512) sumsq_axes(const T* __restrict__ x, const T s, T* __restrict__ y, const long long __K, const long long __R, const int __mode, const long long __ks0,"), "{out}");
        assert!(out.contains("const long long __o_y, const long long __k_y_0, const long long __k_y_1, const long long __k_y_2, const long long __k_y_3) {"));
        assert!(out.contains(
            "_ce_O::map(x[__q_x + __f * __r_x[3]], s, ((__a * __rs[1] + __b) * __rs[2] + __e) * __rs[3] + __f, __R)"
        ));
        assert!(out.contains("_ce_O::post(__tile[__tx], y[__p_y], s, __R)"));
    }
}
