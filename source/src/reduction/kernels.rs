//! The CUDA text of one reduction: the user code's `NAME_ops` struct and the three kernels over it
//! (the device helpers they call are in `helpers.cuh`).

use super::{ReductionSource, BLOCK, BLOCKS_PER_SM, MAX_REDUCE_BYTES, ROWS_AT_ONCE, UNROLL};
use std::fmt::Write;

/// Joins one formatted piece per array input with spaces (declarations, loads).
fn per_array(src: &ReductionSource, f: impl Fn(&str, &str) -> String) -> String {
    src.arrays().map(|p| f(&p.name, &p.ty)).collect::<Vec<_>>().join(" ")
}

impl ReductionSource {
    fn template_head(&self) -> String {
        if self.placeholders.is_empty() {
            "extern \"C\" ".to_string()
        } else {
            let ps: Vec<String> = self.placeholders.iter().map(|p| format!("typename {p}")).collect();
            format!("template <{}> ", ps.join(", "))
        }
    }

    /// The kernel parameters every kernel starts with: inputs, outputs.
    fn user_params(&self) -> String {
        let ins = self.inputs.iter().map(|p| {
            if p.scalar {
                format!("const {} {}", p.ty, p.name)
            } else {
                format!("const {}* __restrict__ {}", p.ty, p.name)
            }
        });
        let outs = self.outputs.iter().map(|p| format!("{}* __restrict__ {}", p.ty, p.name));
        ins.chain(outs).collect::<Vec<_>>().join(", ")
    }

    /// `_ce_O::map(..)` with each array's element given by `elem(name)`, then the scalars, `i`, `n`.
    fn map_with(&self, elem: impl Fn(&str) -> String, idx: &str, n: &str) -> String {
        let mut args: Vec<String> = self.arrays().map(|p| elem(&p.name)).collect();
        args.extend(self.scalars().map(|p| p.name.clone()));
        args.push(idx.to_string());
        args.push(n.to_string());
        format!("_ce_O::map({})", args.join(", "))
    }

    /// `_ce_O::map(x_v[u][k], w_v[u][k], s, idx, n)`: elements loaded into the `NAME_v` arrays.
    fn map_call(&self, elem: &str, idx: &str, n: &str) -> String {
        self.map_with(|name| format!("{name}_v{elem}"), idx, n)
    }

    /// `_ce_O::post(acc, y[at], .., s, n)`: writes one result.
    fn post_call(&self, acc: &str, at: &str, n: &str) -> String {
        let outs: String = self.outputs.iter().map(|p| format!(", {}[{at}]", p.name)).collect();
        let scalars: String = self.scalars().map(|p| format!(", {}", p.name)).collect();
        format!("_ce_O::post({acc}{outs}{scalars}, {n})")
    }

    /// A kernel's opening: signature (user parameters, then `extra`) and the common locals `_ce_O`
    /// (the ops struct), `_ce_R`, `_ce_V` (in the reserved `_ce_` namespace, so a user parameter
    /// named `O`, `R` or `V` does not clash), `__aligned` (every array 16-byte loadable) and, with `groups`, `__groups` (whole
    /// vector groups in a row).
    fn kernel_head(&self, out: &mut String, suffix: &str, extra: &str, groups: bool) {
        let name = &self.name;
        let targs =
            if self.placeholders.is_empty() { String::new() } else { format!("<{}>", self.placeholders.join(", ")) };
        let mut aligned: Vec<String> = self
            .arrays()
            .map(|p| format!("(reinterpret_cast<unsigned long long>({}) % (_ce_V * sizeof({}))) == 0", p.name, p.ty))
            .collect();
        aligned.push("true".into());
        let _ = write!(
            out,
            r#"
{head}__global__ void __launch_bounds__({BLOCK}, {BLOCKS_PER_SM}) {name}_{suffix}({params}, const long long __rows,
        const long long __n, {extra}) {{
    typedef {name}_ops{targs} _ce_O;
    typedef typename _ce_O::R _ce_R;
    constexpr int _ce_V = _ce_O::V;
    const bool __aligned = (__n % _ce_V) == 0 && {aligned};"#,
            head = self.template_head(),
            params = self.user_params(),
            aligned = aligned.join(" && "),
        );
        if groups {
            out.push_str("\n    const long long __groups = __n / _ce_V;");
        }
    }

    pub(super) fn ops(&self, out: &mut String) {
        let name = &self.name;
        let _ = writeln!(out, "{}struct {name}_ops {{", self.template_head().replace("extern \"C\" ", ""));
        out.push_str("    typedef ");
        match &self.reduce_type {
            Some(rt) => {
                out.push('\n');
                rt.emit(out);
                out.push('\n');
            }
            None => out.push_str(self.outputs.first().map_or("float", |o| o.ty.as_str())),
        }
        out.push_str(" R;\n");
        let max = self
            .arrays()
            .fold("0".to_string(), |m, p| format!("cuda_embed_reduce::max_size({m}, (int)sizeof({}))", p.ty));
        let _ = writeln!(out, "    static constexpr int V = cuda_embed_reduce::vec_width({max});");
        let _ = writeln!(
            out,
            "    static_assert(sizeof(R) <= {MAX_REDUCE_BYTES}, \"reduce_type is at most {MAX_REDUCE_BYTES} bytes\");"
        );
        let body = |out: &mut String, head: &str, snippet: &super::Snippet, tail: &str| {
            out.push_str(head);
            snippet.emit(out);
            out.push_str(tail);
        };
        let ret = "\n        );\n    }\n";
        body(out, "    static __device__ __forceinline__ R identity() {\n        return (\n", &self.identity, ret);
        body(
            out,
            "    static __device__ __forceinline__ R reduce(const R& a, const R& b) {\n        return (\n",
            &self.reduce,
            ret,
        );
        let margs: Vec<String> = self
            .arrays()
            .chain(self.scalars())
            .map(|p| format!("const {} {}", p.ty, p.name))
            .chain(["const long long i".into(), "const long long n".into()])
            .collect();
        let head = format!("    static __device__ __forceinline__ R map({}) {{\n        return (\n", margs.join(", "));
        body(out, &head, &self.map, ret);
        let pargs: Vec<String> = std::iter::once("const R& a".to_string())
            .chain(self.outputs.iter().map(|p| format!("{}& {}", p.ty, p.name)))
            .chain(self.scalars().map(|p| format!("const {} {}", p.ty, p.name)))
            .chain(std::iter::once("const long long n".to_string()))
            .collect();
        let _ = writeln!(out, "    static __device__ __forceinline__ void post({}) {{", pargs.join(", "));
        match &self.post_map {
            Some(p) => body(out, "", p, "\n        ;\n"),
            None => {
                let first = self.outputs.first().map_or("y", |o| o.name.as_str());
                let _ = writeln!(out, "        {first} = a;");
            }
        }
        out.push_str("    }\n};\n");
    }

    /// Per-thread accumulation into `__acc` of the vector groups `__start, __start + __stride,
    /// ...` below `__end` of the segment at `__base`, `UNROLL` groups in flight.
    fn accumulate(&self, out: &mut String, vec: bool) {
        let decls = |dims: &str| per_array(self, |n, t| format!("{t} {n}_v{dims}[_ce_V];"));
        let loads = |u: &str, at: &str| {
            per_array(self, |n, _| format!("cuda_embed_reduce::load<{vec}, _ce_V>({n} + {at}, {n}_v{u});"))
        };
        let _ = write!(
            out,
            r#"
        {{
            long long __g = __start;
            for (; __g + ({UNROLL} - 1) * __stride < __end; __g += {UNROLL} * __stride) {{
                {decls_u}
#pragma unroll
                for (int __u = 0; __u < {UNROLL}; ++__u) {{ {loads_u} }}
#pragma unroll
                for (int __u = 0; __u < {UNROLL}; ++__u)
#pragma unroll
                    for (int __k = 0; __k < _ce_V; ++__k)
                        __acc = _ce_O::reduce(__acc, {map_u});
            }}
            for (; __g < __end; __g += __stride) {{
                {decls_1}
                {loads_1}
#pragma unroll
                for (int __k = 0; __k < _ce_V; ++__k) __acc = _ce_O::reduce(__acc, {map_1});
            }}
        }}
"#,
            decls_u = decls(&format!("[{UNROLL}]")),
            loads_u = loads("[__u]", "__base + (__g + __u * __stride) * _ce_V"),
            map_u = self.map_call("[__u][__k]", "(__g + __u * __stride) * _ce_V + __k", "__n"),
            decls_1 = decls(""),
            loads_1 = loads("", "__base + __g * _ce_V"),
            map_1 = self.map_call("[__k]", "__g * _ce_V + __k", "__n"),
        );
    }

    /// The elements after the last whole vector group of the row at `__base`, into `__acc`.
    fn tail(&self, acc: &str) -> String {
        let map = self.map_with(|name| format!("{name}[__base + __k]"), "__k", "__n");
        format!("for (long long __k = __groups * _ce_V; __k < __n; ++__k) {acc} = _ce_O::reduce({acc}, {map});")
    }

    pub(super) fn full_kernel(&self, out: &mut String) {
        self.kernel_head(out, "full", "const int __bpr, unsigned char* __scratch, const long long __partial_off", true);
        out.push_str(
            r#"
    __shared__ __align__(16) unsigned char __warp_mem[32 * sizeof(_ce_R)];
    __shared__ int __is_last;
    _ce_R* __warp_vals = reinterpret_cast<_ce_R*>(__warp_mem);
    const int __part = blockIdx.x % __bpr;
    // The block's share of its row: every __bpr-th tile of blockDim.x groups.
    const long long __start = (long long)__part * blockDim.x + threadIdx.x;
    const long long __stride = (long long)__bpr * blockDim.x;
    const long long __end = __groups;
    for (long long __row = blockIdx.x / __bpr; __row < __rows; __row += gridDim.x / __bpr) {
        const long long __base = __row * __n;
        _ce_R __acc = _ce_O::identity();
        if (__aligned)"#,
        );
        self.accumulate(out, true);
        out.push_str("        else");
        self.accumulate(out, false);
        let post_row = self.post_call("__acc", "__row", "__n");
        let _ = write!(
            out,
            r#"
        if (__part == 0 && threadIdx.x == 0) {tail}
        __acc = cuda_embed_reduce::block_reduce<_ce_O>(__acc, __warp_vals);
        if (__bpr == 1) {{
            if (threadIdx.x == 0) {post_row};
        }} else {{
            unsigned int* __counters = reinterpret_cast<unsigned int*>(__scratch);
            _ce_R* __partials = reinterpret_cast<_ce_R*>(__scratch + __partial_off);
            if (threadIdx.x == 0) __partials[__row * __bpr + __part] = __acc;
            if (cuda_embed_reduce::arrive_last(&__counters[__row], (unsigned int)__bpr, &__is_last)) {{
                __acc = _ce_O::identity();
                for (int __p = threadIdx.x; __p < __bpr; __p += blockDim.x)
                    __acc = _ce_O::reduce(__acc, cuda_embed_reduce::load_partial(&__partials[__row * __bpr + __p]));
                __acc = cuda_embed_reduce::block_reduce<_ce_O>(__acc, __warp_vals);
                if (threadIdx.x == 0) {{
                    {post_row};
                    __counters[__row] = 0;
                }}
            }}
        }}
        __syncthreads();
    }}
}}
"#,
            tail = self.tail("__acc"),
        );
    }

    /// Short rows: a group of `__g_size` lanes per row, each group `ROWS_AT_ONCE` consecutive
    /// rows at a time (one accumulator each, their loads issued together).
    pub(super) fn rows_kernel(&self, out: &mut String) {
        self.kernel_head(out, "rows", "const int __g_size", true);
        let rb = ROWS_AT_ONCE;
        let body = |vec: bool| {
            let decls = per_array(self, |n, t| format!("{t} {n}_v[{rb}][_ce_V];"));
            let loads = per_array(self, |n, _| {
                format!(
                    "cuda_embed_reduce::load<{vec}, _ce_V>({n} + (__b * {rb} + __r) * __n + __g * _ce_V, {n}_v[__r]);"
                )
            });
            let map = self.map_call("[__r][__k]", "__g * _ce_V + __k", "__n");
            format!(
                r#"{{
            for (long long __g = __lane; __g < __groups; __g += __g_size) {{
                {decls}
#pragma unroll
                for (int __r = 0; __r < {rb}; ++__r)
                    if (__b * {rb} + __r < __rows) {{ {loads} }}
#pragma unroll
                for (int __r = 0; __r < {rb}; ++__r)
                    if (__b * {rb} + __r < __rows)
#pragma unroll
                        for (int __k = 0; __k < _ce_V; ++__k) __accs[__r] = _ce_O::reduce(__accs[__r], {map});
            }}
        }}"#
            )
        };
        let post = self.post_call("__accs[__r]", "__row", "__n");
        let _ = write!(
            out,
            r#"
    const int __lane = threadIdx.x % __g_size;
    const long long __batches = (long long)gridDim.x * (blockDim.x / __g_size);
    for (long long __b = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / __g_size;
         __any_sync(0xffffffffu, __b * {rb} < __rows); __b += __batches) {{
        _ce_R __accs[{rb}];
#pragma unroll
        for (int __r = 0; __r < {rb}; ++__r) __accs[__r] = _ce_O::identity();
        if (__aligned) {vec_body} else {scalar_body}
#pragma unroll
        for (int __r = 0; __r < {rb}; ++__r) {{
            const long long __row = __b * {rb} + __r, __base = __row * __n;
            if (__lane == 0 && __row < __rows) {{ {tail} }}
#pragma unroll
            for (int __d = 16; __d > 0; __d >>= 1)
                if (__d < __g_size) __accs[__r] = _ce_O::reduce(__accs[__r], cuda_embed_reduce::shfl_down(__accs[__r], __d, __g_size));
            if (__row < __rows && __lane == 0) {post};
        }}
    }}
}}
"#,
            vec_body = body(true),
            scalar_body = body(false),
            tail = self.tail("__accs[__r]"),
        );
    }

    pub(super) fn cols_kernel(&self, out: &mut String) {
        self.kernel_head(out, "cols", "unsigned char* __scratch, const long long __partial_off", false);
        let decl_rows = per_array(self, |n, t| format!("{t} {n}_v[{UNROLL}][_ce_V];"));
        let load = |u: &str| {
            let vec = per_array(self, |n, _| format!("cuda_embed_reduce::load<true, _ce_V>({n} + __at, {n}_v[{u}]);"));
            let scalar = per_array(self, |n, _| format!("if (__c0 + __k < __n) {n}_v[{u}][__k] = {n}[__at + __k];"));
            format!("if (__aligned) {{ {vec} }} else {{\n#pragma unroll\n                for (int __k = 0; __k < _ce_V; ++__k) {{ {scalar} }}\n            }}")
        };
        let combine = |map: &str| format!("if (__c0 + __k < __n) __accs[__k] = _ce_O::reduce(__accs[__k], {map});");
        let post_col = self.post_call("__tile[__slot + __k]", "__c0 + __k", "__rows");
        let write_out = format!(
            "if (__ty == 0)\n#pragma unroll\n        for (int __k = 0; __k < _ce_V; ++__k)\n            if (__c0 + __k < __n) {post_col};"
        );
        let _ = write!(
            out,
            r#"
    __shared__ __align__(16) unsigned char __tile_mem[{BLOCK} * _ce_V * sizeof(_ce_R)];
    __shared__ int __is_last;
    _ce_R* __tile = reinterpret_cast<_ce_R*>(__tile_mem);
    const int __tx = threadIdx.x, __ty = threadIdx.y, __ty_n = blockDim.y;
    const long long __c0 = ((long long)blockIdx.x * blockDim.x + __tx) * _ce_V;
    const long long __per_split = (__rows + gridDim.y - 1) / gridDim.y;
    const long long __r_begin = blockIdx.y * __per_split;
    const long long __r_end = __r_begin + __per_split < __rows ? __r_begin + __per_split : __rows;
    const int __slot = (__ty * blockDim.x + __tx) * _ce_V;
    _ce_R __accs[_ce_V];
#pragma unroll
    for (int __k = 0; __k < _ce_V; ++__k) __accs[__k] = _ce_O::identity();
    if (__c0 < __n) {{
        long long __r = __r_begin + __ty;
        for (; __r + ({UNROLL} - 1) * __ty_n < __r_end; __r += {UNROLL} * __ty_n) {{
            {decl_rows}
#pragma unroll
            for (int __u = 0; __u < {UNROLL}; ++__u) {{
                const long long __at = (__r + __u * __ty_n) * __n + __c0;
                {load_u}
            }}
#pragma unroll
            for (int __u = 0; __u < {UNROLL}; ++__u)
#pragma unroll
                for (int __k = 0; __k < _ce_V; ++__k) {combine_u}
        }}
        for (; __r < __r_end; __r += __ty_n) {{
            {decl_rows}
            const long long __at = __r * __n + __c0;
            {load_1}
#pragma unroll
            for (int __k = 0; __k < _ce_V; ++__k) {combine_1}
        }}
    }}
#pragma unroll
    for (int __k = 0; __k < _ce_V; ++__k) __tile[__slot + __k] = __accs[__k];
    cuda_embed_reduce::column_tree<_ce_O, _ce_V>(__tile, __slot);
    if (gridDim.y == 1) {{
        {write_out}
        return;
    }}
    unsigned int* __counters = reinterpret_cast<unsigned int*>(__scratch);
    _ce_R* __partials = reinterpret_cast<_ce_R*>(__scratch + __partial_off);
    if (__ty == 0)
#pragma unroll
        for (int __k = 0; __k < _ce_V; ++__k)
            if (__c0 + __k < __n) __partials[blockIdx.y * __n + __c0 + __k] = __tile[__slot + __k];
    if (!cuda_embed_reduce::arrive_last(&__counters[blockIdx.x], gridDim.y, &__is_last)) return;
#pragma unroll
    for (int __k = 0; __k < _ce_V; ++__k) __accs[__k] = _ce_O::identity();
    if (__c0 < __n)
        for (int __p = __ty; __p < (int)gridDim.y; __p += __ty_n)
#pragma unroll
            for (int __k = 0; __k < _ce_V; ++__k)
                if (__c0 + __k < __n)
                    __accs[__k] = _ce_O::reduce(__accs[__k], cuda_embed_reduce::load_partial(&__partials[(long long)__p * __n + __c0 + __k]));
#pragma unroll
    for (int __k = 0; __k < _ce_V; ++__k) __tile[__slot + __k] = __accs[__k];
    cuda_embed_reduce::column_tree<_ce_O, _ce_V>(__tile, __slot);
    {write_out}
    if (__tx == 0 && __ty == 0) __counters[blockIdx.x] = 0;
}}
"#,
            load_u = load("__u"),
            load_1 = load("0"),
            combine_u = combine(&self.map_call("[__u][__k]", "(__r + __u * __ty_n)", "__rows")),
            combine_1 = combine(&self.map_call("[0][__k]", "__r", "__rows")),
        );
    }
}
