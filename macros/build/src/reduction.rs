//! The CUDA source of a reduction kernel (`reduction_kernel!` at build time and the run-time twin
//! alike) and the launch plans its three kernels run under.
//!
//! One reduction becomes three kernels over the same user code (`map`, `reduce`, `post_map`,
//! `identity`):
//!
//! - `NAME_full`: contiguous segments (the whole array, or long rows), each reduced by
//!   `blocks_per_row` blocks. With more than one block per segment, each block writes its partial
//!   value to a scratch buffer and the last block to finish (elected by an integer counter)
//!   combines the partials **in block order**: one launch, no floating-point atomics.
//! - `NAME_rows`: short rows, a group of `g` (a power of two up to 32) threads per row.
//! - `NAME_cols`: the columns of a row-major matrix: threads over columns (coalesced row-wise
//!   reads), rows split over `splits` blocks; partials combined in split order by the last block
//!   of each column tile.
//!
//! Every thread reads its elements in a fixed order, in groups of `V` consecutive elements (`V =
//! 16 / the largest input element size`), with one 16-byte load per input when the pointers are
//! aligned and `V` scalar loads otherwise: the same elements meet in the same order either way,
//! so the result depends only on the plan, and the plan only on the shape and the GPU's
//! multiprocessor count. The same input gives bit-identical output on every run.

use std::fmt::Write;

/// Threads per block of every reduction kernel.
pub const BLOCK: u32 = 256;
/// Element groups each thread loads before combining any (loads in flight per thread).
pub const UNROLL: u32 = 4;
/// Largest `reduce_type` size in bytes; the scratch buffer holds this much per partial value.
pub const MAX_REDUCE_BYTES: usize = 32;
/// Resident blocks per multiprocessor the plans aim for (`__launch_bounds__(256, 4)`).
pub const BLOCKS_PER_SM: u32 = 4;

/// A piece of user code and where it was written (for `#line`, so compiler errors point at it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snippet {
    /// The C++ text.
    pub text: String,
    /// The Rust file and line it came from, when known.
    pub origin: Option<(String, usize)>,
}

impl Snippet {
    /// A snippet with no known origin.
    pub fn new(text: impl Into<String>) -> Snippet {
        Snippet { text: text.into(), origin: None }
    }

    fn emit(&self, out: &mut String) {
        if let Some((file, line)) = &self.origin {
            let _ = writeln!(out, "#line {} \"{}\"", line, file.replace('\\', "/"));
        }
        out.push_str(&self.text);
    }
}

/// One parameter of a reduction: an array (one element per index) or a scalar (one value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedParam {
    /// The name the user code sees.
    pub name: String,
    /// The C++ element type (a placeholder like `T`, or a concrete type).
    pub ty: String,
    /// A scalar (passed by value) rather than an array.
    pub scalar: bool,
}

/// Everything the generator needs for one reduction.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReductionSource {
    /// The reduction's name; kernels are `NAME_full`, `NAME_rows`, `NAME_cols`.
    pub name: String,
    /// The template parameters (placeholders), in order.
    pub placeholders: Vec<String>,
    /// Inputs: arrays and scalars, in declaration order.
    pub inputs: Vec<RedParam>,
    /// Outputs (arrays, one element per reduced segment).
    pub outputs: Vec<RedParam>,
    /// The per-element value (may use every input, `i` and `n`).
    pub map: Snippet,
    /// Combines partial values `a` and `b`.
    pub reduce: Snippet,
    /// Writes the result `a` to the outputs; default: the first output `= a`.
    pub post_map: Option<Snippet>,
    /// The identity of `reduce`.
    pub identity: Snippet,
    /// The type of the partial values; default: the first output's type.
    pub reduce_type: Option<Snippet>,
    /// Code before the kernels (helper functions, structs, includes).
    pub preamble: Option<Snippet>,
    /// The instances to build: for each, one C++ type per placeholder (empty without placeholders).
    pub instances: Vec<Vec<String>>,
}

/// The three kernel names of reduction `name`.
pub fn kernel_names(name: &str) -> [String; 3] {
    [format!("{name}_full"), format!("{name}_rows"), format!("{name}_cols")]
}

/// Elements per vector group: 16 bytes of the largest array input (1 when that size does not
/// divide 16). Host and device compute the same number.
pub fn vec_width(input_sizes: &[usize]) -> u32 {
    match input_sizes.iter().copied().max() {
        Some(m) if m > 0 && m <= 16 && 16 % m == 0 => (16 / m) as u32,
        _ => 1,
    }
}

const HELPERS: &str = r#"
#ifndef CUDA_EMBED_REDUCE_HELPERS
#define CUDA_EMBED_REDUCE_HELPERS
// NVRTC has no <math.h>: the constants identities are usually written with.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
namespace cuda_embed_reduce {
template <int B> struct raw_vec { typedef unsigned char type; };
template <> struct raw_vec<2> { typedef unsigned short type; };
template <> struct raw_vec<4> { typedef unsigned int type; };
template <> struct raw_vec<8> { typedef uint2 type; };
template <> struct raw_vec<16> { typedef uint4 type; };
__host__ __device__ constexpr int max_size(int a, int b) { return a > b ? a : b; }
__host__ __device__ constexpr int vec_width(int m) { return (m > 0 && m <= 16 && 16 % m == 0) ? 16 / m : 1; }
// V consecutive elements from p: one load of V * sizeof(T) bytes when `vec`, else V loads.
template <bool VEC, int V, typename T>
__device__ __forceinline__ void load(const T* __restrict__ p, T (&out)[V]) {
    constexpr int B = V * (int)sizeof(T);
    if (VEC && (B == 2 || B == 4 || B == 8 || B == 16)) {
        typedef typename raw_vec<B>::type W;
        W w = __ldg(reinterpret_cast<const W*>(p));
        memcpy(&out[0], &w, B);
    } else {
#pragma unroll
        for (int k = 0; k < V; ++k) out[k] = p[k];
    }
}
// Any trivially copyable value through warp shuffles, 32 bits at a time.
template <typename R>
__device__ __forceinline__ R shfl_down(const R& v, int d, int width) {
    constexpr int W = ((int)sizeof(R) + 3) / 4;
    unsigned int w[W];
    memcpy(&w[0], &v, sizeof(R));
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = __shfl_down_sync(0xffffffffu, w[k], d, width);
    R out;
    memcpy(&out, &w[0], sizeof(R));
    return out;
}
// A partial written by another block in this launch: read from L2, never a stale L1 line.
template <typename R>
__device__ __forceinline__ R load_partial(const R* p) {
    R out;
    if (sizeof(R) % 4 == 0) {
        unsigned int w[sizeof(R) / 4 + 1];
        for (int k = 0; k < (int)(sizeof(R) / 4); ++k) w[k] = __ldcg(reinterpret_cast<const unsigned int*>(p) + k);
        memcpy(&out, &w[0], sizeof(R));
    } else if (sizeof(R) % 2 == 0) {
        unsigned short w[sizeof(R) / 2 + 1];
        for (int k = 0; k < (int)(sizeof(R) / 2); ++k) w[k] = __ldcg(reinterpret_cast<const unsigned short*>(p) + k);
        memcpy(&out, &w[0], sizeof(R));
    } else {
        unsigned char w[sizeof(R) + 1];
        for (int k = 0; k < (int)sizeof(R); ++k) w[k] = __ldcg(reinterpret_cast<const unsigned char*>(p) + k);
        memcpy(&out, &w[0], sizeof(R));
    }
    return out;
}
// Block-wide combination in a fixed order (lanes, then warps); the result is valid in thread 0.
template <typename O, typename R>
__device__ __forceinline__ R block_reduce(R v, R* warp_vals) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v = O::reduce(v, shfl_down(v, d, 32));
    if (lane == 0) warp_vals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? warp_vals[lane] : O::identity();
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) v = O::reduce(v, shfl_down(v, d, 32));
    }
    __syncthreads();
    return v;
}
} // namespace cuda_embed_reduce
#endif
"#;

impl ReductionSource {
    fn template_head(&self) -> String {
        if self.placeholders.is_empty() {
            "extern \"C\" ".to_string()
        } else {
            let ps: Vec<String> = self.placeholders.iter().map(|p| format!("typename {p}")).collect();
            format!("template <{}> ", ps.join(", "))
        }
    }

    fn template_args(&self) -> String {
        if self.placeholders.is_empty() {
            String::new()
        } else {
            format!("<{}>", self.placeholders.join(", "))
        }
    }

    fn arrays(&self) -> impl Iterator<Item = &RedParam> {
        self.inputs.iter().filter(|p| !p.scalar)
    }

    fn scalars(&self) -> impl Iterator<Item = &RedParam> {
        self.inputs.iter().filter(|p| p.scalar)
    }

    /// The kernel parameters every kernel starts with: inputs, outputs.
    fn user_params(&self) -> String {
        let mut ps = Vec::new();
        for p in &self.inputs {
            if p.scalar {
                ps.push(format!("const {} {}", p.ty, p.name));
            } else {
                ps.push(format!("const {}* __restrict__ {}", p.ty, p.name));
            }
        }
        for p in &self.outputs {
            ps.push(format!("{}* __restrict__ {}", p.ty, p.name));
        }
        ps.join(", ")
    }

    /// The scalar arguments passed to `Ops::map` / `Ops::post`.
    fn scalar_args(&self) -> String {
        self.scalars().map(|p| format!(", {}", p.name)).collect()
    }

    /// `O::map(x_v[u][k], w_v[u][k], s, idx, n)`.
    fn map_call(&self, elem: &str, idx: &str, n: &str) -> String {
        let mut args: Vec<String> = self.arrays().map(|p| format!("{}_v{elem}", p.name)).collect();
        args.extend(self.scalars().map(|p| p.name.clone()));
        args.push(idx.to_string());
        args.push(n.to_string());
        format!("O::map({})", args.join(", "))
    }

    /// `O::map(x[base + k], ...)` for an element read directly.
    fn map_direct(&self, offset: &str, idx: &str, n: &str) -> String {
        let mut args: Vec<String> = self.arrays().map(|p| format!("{}[{offset}]", p.name)).collect();
        args.extend(self.scalars().map(|p| p.name.clone()));
        args.push(idx.to_string());
        args.push(n.to_string());
        format!("O::map({})", args.join(", "))
    }

    fn post_call(&self, at: &str) -> String {
        let outs: String = self.outputs.iter().map(|p| format!(", {}[{at}]", p.name)).collect();
        format!("O::post(__acc{outs}{}, __n)", self.scalar_args())
    }

    fn aligned_expr(&self) -> String {
        let mut terms: Vec<String> = self
            .arrays()
            .map(|p| format!("(reinterpret_cast<unsigned long long>({}) % (V * sizeof({}))) == 0", p.name, p.ty))
            .collect();
        terms.push("true".into());
        terms.join(" && ")
    }

    fn ops(&self, out: &mut String) {
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
        let sizes: Vec<String> = self.arrays().map(|p| format!("(int)sizeof({})", p.ty)).collect();
        let mut max = "0".to_string();
        for s in sizes {
            max = format!("cuda_embed_reduce::max_size({max}, {s})");
        }
        let _ = writeln!(out, "    static constexpr int V = cuda_embed_reduce::vec_width({max});");
        let _ = writeln!(
            out,
            "    static_assert(sizeof(R) <= {MAX_REDUCE_BYTES}, \"reduce_type is at most {MAX_REDUCE_BYTES} bytes\");"
        );
        out.push_str("    static __device__ __forceinline__ R identity() {\n        return\n");
        self.identity.emit(out);
        out.push_str("\n        ;\n    }\n");
        out.push_str("    static __device__ __forceinline__ R reduce(const R& a, const R& b) {\n        return (\n");
        self.reduce.emit(out);
        out.push_str("\n        );\n    }\n");
        let mut margs: Vec<String> = self.arrays().map(|p| format!("const {} {}", p.ty, p.name)).collect();
        margs.extend(self.scalars().map(|p| format!("const {} {}", p.ty, p.name)));
        margs.push("const long long i".into());
        margs.push("const long long n".into());
        let _ = writeln!(out, "    static __device__ __forceinline__ R map({}) {{\n        return (", margs.join(", "));
        self.map.emit(out);
        out.push_str("\n        );\n    }\n");
        let mut pargs = vec!["const R& a".to_string()];
        pargs.extend(self.outputs.iter().map(|p| format!("{}& {}", p.ty, p.name)));
        pargs.extend(self.scalars().map(|p| format!("const {} {}", p.ty, p.name)));
        pargs.push("const long long n".into());
        let _ = writeln!(out, "    static __device__ __forceinline__ void post({}) {{", pargs.join(", "));
        match &self.post_map {
            Some(p) => {
                p.emit(out);
                out.push_str("\n        ;\n");
            }
            None => {
                let first = self.outputs.first().map_or("y", |o| o.name.as_str());
                let _ = writeln!(out, "        {first} = a;");
            }
        }
        out.push_str("    }\n};\n");
    }

    /// Per-thread accumulation of vector groups `g, g + stride, ...` below `groups` of the segment
    /// starting at `base`, `UNROLL` groups in flight. Expects `O`, `V`, `__acc`.
    fn accumulate(&self, out: &mut String, vec: bool) {
        let decls = |u: &str| -> String {
            self.arrays().map(|p| format!("{} {}_v{u}[V];", p.ty, p.name)).collect::<Vec<_>>().join(" ")
        };
        let loads = |u: &str, at: &str| -> String {
            self.arrays()
                .map(|p| format!("cuda_embed_reduce::load<{vec}, V>({} + {at}, {}_v{u});", p.name, p.name))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let _ = write!(
            out,
            r#"
        {{
            long long __g = __start;
            for (; __g + ({UNROLL} - 1) * __stride < __groups; __g += {UNROLL} * __stride) {{
                {decls_u}
#pragma unroll
                for (int __u = 0; __u < {UNROLL}; ++__u) {{ {loads_u} }}
#pragma unroll
                for (int __u = 0; __u < {UNROLL}; ++__u)
#pragma unroll
                    for (int __k = 0; __k < V; ++__k)
                        __acc = O::reduce(__acc, {map_u});
            }}
            for (; __g < __groups; __g += __stride) {{
                {decls_1}
                {loads_1}
#pragma unroll
                for (int __k = 0; __k < V; ++__k) __acc = O::reduce(__acc, {map_1});
            }}
        }}
"#,
            decls_u = decls("[{UNROLL}]").replace("{UNROLL}", &UNROLL.to_string()),
            loads_u = loads("[__u]", "__base + (__g + __u * __stride) * V"),
            map_u = self.map_call("[__u][__k]", "(__g + __u * __stride) * V + __k", "__n"),
            decls_1 = decls(""),
            loads_1 = loads("", "__base + __g * V"),
            map_1 = self.map_call("[__k]", "__g * V + __k", "__n"),
        );
    }

    fn full_kernel(&self, out: &mut String) {
        let name = &self.name;
        let targs = self.template_args();
        let _ = write!(
            out,
            r#"
{head}__global__ void __launch_bounds__({BLOCK}, {BLOCKS_PER_SM}) {name}_full({params}, const long long __rows, const long long __n,
        const int __bpr, unsigned char* __scratch, const long long __partial_off) {{
    typedef {name}_ops{targs} O;
    typedef typename O::R R;
    constexpr int V = O::V;
    __shared__ __align__(16) unsigned char __warp_mem[32 * sizeof(R)];
    __shared__ int __is_last;
    R* __warp_vals = reinterpret_cast<R*>(__warp_mem);
    const bool __aligned = (__n % V) == 0 && {aligned};
    const long long __groups = __n / V;
    const int __part = blockIdx.x % __bpr;
    const long long __start = (long long)__part * blockDim.x + threadIdx.x;
    const long long __stride = (long long)__bpr * blockDim.x;
    for (long long __row = blockIdx.x / __bpr; __row < __rows; __row += gridDim.x / __bpr) {{
        const long long __base = __row * __n;
        R __acc = O::identity();
        if (__aligned)"#,
            head = self.template_head(),
            params = self.user_params(),
            aligned = self.aligned_expr(),
        );
        self.accumulate(out, true);
        out.push_str("        else");
        self.accumulate(out, false);
        let tail = self.map_direct("__base + __k", "__k", "__n");
        let post_row = self.post_call("__row");
        let _ = write!(
            out,
            r#"
        if (__part == 0 && threadIdx.x == 0)
            for (long long __k = __groups * V; __k < __n; ++__k) __acc = O::reduce(__acc, {tail});
        __acc = cuda_embed_reduce::block_reduce<O>(__acc, __warp_vals);
        if (__bpr == 1) {{
            if (threadIdx.x == 0) {post_row};
        }} else {{
            unsigned int* __counters = reinterpret_cast<unsigned int*>(__scratch);
            R* __partials = reinterpret_cast<R*>(__scratch + __partial_off);
            if (threadIdx.x == 0) {{
                __partials[__row * __bpr + __part] = __acc;
                __threadfence();
                __is_last = atomicAdd(&__counters[__row], 1u) == (unsigned int)(__bpr - 1);
            }}
            __syncthreads();
            if (__is_last) {{
                __threadfence();
                __acc = O::identity();
                for (int __p = threadIdx.x; __p < __bpr; __p += blockDim.x)
                    __acc = O::reduce(__acc, cuda_embed_reduce::load_partial(&__partials[__row * __bpr + __p]));
                __acc = cuda_embed_reduce::block_reduce<O>(__acc, __warp_vals);
                if (threadIdx.x == 0) {{
                    {post_row};
                    __counters[__row] = 0;
                }}
            }}
        }}
        __syncthreads();
    }}
}}
"#
        );
    }

    fn rows_kernel(&self, out: &mut String) {
        let name = &self.name;
        let targs = self.template_args();
        let _ = write!(
            out,
            r#"
{head}__global__ void __launch_bounds__({BLOCK}, {BLOCKS_PER_SM}) {name}_rows({params}, const long long __rows, const long long __n,
        const int __g_size) {{
    typedef {name}_ops{targs} O;
    typedef typename O::R R;
    constexpr int V = O::V;
    const bool __aligned = (__n % V) == 0 && {aligned};
    const long long __groups = __n / V;
    const int __lane = threadIdx.x % __g_size;
    const long long __start = __lane;
    const long long __stride = __g_size;
    const long long __row_stride = (long long)gridDim.x * (blockDim.x / __g_size);
    for (long long __row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / __g_size;
         __any_sync(0xffffffffu, __row < __rows); __row += __row_stride) {{
        R __acc = O::identity();
        if (__row < __rows) {{
            const long long __base = __row * __n;
            if (__aligned)"#,
            head = self.template_head(),
            params = self.user_params(),
            aligned = self.aligned_expr(),
        );
        self.accumulate(out, true);
        out.push_str("            else");
        self.accumulate(out, false);
        let tail = self.map_direct("__base + __k", "__k", "__n");
        let post_row = self.post_call("__row");
        let _ = write!(
            out,
            r#"
            if (__lane == 0)
                for (long long __k = __groups * V; __k < __n; ++__k) __acc = O::reduce(__acc, {tail});
        }}
        for (int __d = __g_size / 2; __d > 0; __d >>= 1) __acc = O::reduce(__acc, cuda_embed_reduce::shfl_down(__acc, __d, __g_size));
        if (__row < __rows && __lane == 0) {post_row};
    }}
}}
"#
        );
    }

    fn cols_kernel(&self, out: &mut String) {
        let name = &self.name;
        let targs = self.template_args();
        let decl_rows = self.arrays().map(|p| format!("{} {}_v[{UNROLL}][V];", p.ty, p.name)).collect::<Vec<_>>();
        let load_vec = self
            .arrays()
            .map(|p| format!("cuda_embed_reduce::load<true, V>({n} + __at, {n}_v[__u]);", n = p.name))
            .collect::<Vec<_>>();
        let load_scalar = self
            .arrays()
            .map(|p| format!("if (__c0 + __k < __n) {n}_v[__u][__k] = {n}[__at + __k];", n = p.name))
            .collect::<Vec<_>>();
        let map_u = self.map_call("[__u][__k]", "(__r + __u * __ty_n)", "__rows");
        let _ = write!(
            out,
            r#"
{head}__global__ void __launch_bounds__({BLOCK}, {BLOCKS_PER_SM}) {name}_cols({params}, const long long __rows, const long long __n,
        unsigned char* __scratch, const long long __partial_off) {{
    typedef {name}_ops{targs} O;
    typedef typename O::R R;
    constexpr int V = O::V;
    __shared__ __align__(16) unsigned char __tile_mem[{BLOCK} * V * sizeof(R)];
    __shared__ int __is_last;
    R* __tile = reinterpret_cast<R*>(__tile_mem);
    const int __tx = threadIdx.x, __ty = threadIdx.y, __ty_n = blockDim.y;
    const long long __c0 = ((long long)blockIdx.x * blockDim.x + __tx) * V;
    const bool __aligned = (__n % V) == 0 && {aligned};
    const long long __per_split = (__rows + gridDim.y - 1) / gridDim.y;
    const long long __r_begin = blockIdx.y * __per_split;
    const long long __r_end = __r_begin + __per_split < __rows ? __r_begin + __per_split : __rows;
    R __accs[V];
#pragma unroll
    for (int __k = 0; __k < V; ++__k) __accs[__k] = O::identity();
    if (__c0 < __n) {{
        long long __r = __r_begin + __ty;
        for (; __r + ({UNROLL} - 1) * __ty_n < __r_end; __r += {UNROLL} * __ty_n) {{
            {decl_rows}
#pragma unroll
            for (int __u = 0; __u < {UNROLL}; ++__u) {{
                const long long __at = (__r + __u * __ty_n) * __n + __c0;
                if (__aligned) {{ {load_vec} }}
                else {{
#pragma unroll
                    for (int __k = 0; __k < V; ++__k) {{ {load_scalar} }}
                }}
            }}
#pragma unroll
            for (int __u = 0; __u < {UNROLL}; ++__u)
#pragma unroll
                for (int __k = 0; __k < V; ++__k)
                    if (__c0 + __k < __n) __accs[__k] = O::reduce(__accs[__k], {map_u});
        }}
        for (; __r < __r_end; __r += __ty_n) {{
            {decl_rows}
            const int __u = 0;
            const long long __at = __r * __n + __c0;
            if (__aligned) {{ {load_vec} }}
            else {{
#pragma unroll
                for (int __k = 0; __k < V; ++__k) {{ {load_scalar} }}
            }}
#pragma unroll
            for (int __k = 0; __k < V; ++__k)
                if (__c0 + __k < __n) __accs[__k] = O::reduce(__accs[__k], {map_1});
        }}
    }}
    // Combine over threadIdx.y: a fixed tree in shared memory.
    const int __slot = (__ty * blockDim.x + __tx) * V;
#pragma unroll
    for (int __k = 0; __k < V; ++__k) __tile[__slot + __k] = __accs[__k];
    __syncthreads();
    for (int __s = __ty_n / 2; __s > 0; __s >>= 1) {{
        if (__ty < __s)
#pragma unroll
            for (int __k = 0; __k < V; ++__k)
                __tile[__slot + __k] = O::reduce(__tile[__slot + __k], __tile[__slot + __s * blockDim.x * V + __k]);
        __syncthreads();
    }}
    const long long __n_red = __rows;
    if (gridDim.y == 1) {{
        if (__ty == 0)
#pragma unroll
            for (int __k = 0; __k < V; ++__k)
                if (__c0 + __k < __n) {{ const R __acc = __tile[__slot + __k]; const long long __nn = __n_red; {post_col}; }}
        return;
    }}
    unsigned int* __counters = reinterpret_cast<unsigned int*>(__scratch);
    R* __partials = reinterpret_cast<R*>(__scratch + __partial_off);
    if (__ty == 0)
#pragma unroll
        for (int __k = 0; __k < V; ++__k)
            if (__c0 + __k < __n) __partials[blockIdx.y * __n + __c0 + __k] = __tile[__slot + __k];
    __threadfence();
    __syncthreads();
    if (__tx == 0 && __ty == 0) __is_last = atomicAdd(&__counters[blockIdx.x], 1u) == gridDim.y - 1;
    __syncthreads();
    if (!__is_last) return;
    __threadfence();
#pragma unroll
    for (int __k = 0; __k < V; ++__k) __accs[__k] = O::identity();
    if (__c0 < __n)
        for (int __p = __ty; __p < (int)gridDim.y; __p += __ty_n)
#pragma unroll
            for (int __k = 0; __k < V; ++__k)
                if (__c0 + __k < __n)
                    __accs[__k] = O::reduce(__accs[__k], cuda_embed_reduce::load_partial(&__partials[(long long)__p * __n + __c0 + __k]));
#pragma unroll
    for (int __k = 0; __k < V; ++__k) __tile[__slot + __k] = __accs[__k];
    __syncthreads();
    for (int __s = __ty_n / 2; __s > 0; __s >>= 1) {{
        if (__ty < __s)
#pragma unroll
            for (int __k = 0; __k < V; ++__k)
                __tile[__slot + __k] = O::reduce(__tile[__slot + __k], __tile[__slot + __s * blockDim.x * V + __k]);
        __syncthreads();
    }}
    if (__ty == 0) {{
#pragma unroll
        for (int __k = 0; __k < V; ++__k)
            if (__c0 + __k < __n) {{ const R __acc = __tile[__slot + __k]; const long long __nn = __n_red; {post_col}; }}
        if (__tx == 0) __counters[blockIdx.x] = 0;
    }}
}}
"#,
            head = self.template_head(),
            params = self.user_params(),
            aligned = self.aligned_expr(),
            decl_rows = decl_rows.join(" "),
            load_vec = load_vec.join(" "),
            load_scalar = load_scalar.join(" "),
            map_1 = self.map_call("[0][__k]", "__r", "__rows"),
            post_col = self.post_call("__c0 + __k").replace("__n)", "__nn)"),
        );
    }

    /// The template instances to compile (`NAME_full<float>`, ...), empty without placeholders.
    pub fn instance_exprs(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.placeholders.is_empty() {
            return out;
        }
        for inst in &self.instances {
            for k in kernel_names(&self.name) {
                out.push(format!("{k}<{}>", inst.join(", ")));
            }
        }
        out
    }

    /// The complete CUDA source: helpers, preamble, the user code's struct and the three kernels.
    pub fn source(&self) -> String {
        let mut out = String::new();
        let types: String = self
            .inputs
            .iter()
            .chain(&self.outputs)
            .map(|p| p.ty.as_str())
            .chain(self.reduce_type.iter().map(|s| s.text.as_str()))
            .collect::<Vec<_>>()
            .join(" ");
        let instances: String = self.instances.iter().flatten().map(|t| format!(" {t}")).collect();
        let types = types + &instances;
        if types.contains("half") {
            out.push_str("#include <cuda_fp16.h>\n");
        }
        if types.contains("bfloat16") {
            out.push_str("#include <cuda_bf16.h>\n");
        }
        out.push_str(HELPERS);
        if let Some(p) = &self.preamble {
            p.emit(&mut out);
            out.push('\n');
        }
        out.push_str("#line 1 \"<reduction_kernel! generated code>\"\n");
        self.ops(&mut out);
        self.full_kernel(&mut out);
        self.rows_kernel(&mut out);
        self.cols_kernel(&mut out);
        out
    }
}

/// Which kernel a plan launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanKind {
    /// `NAME_full`: `aux` blocks per segment.
    Segments,
    /// `NAME_rows`: `aux` threads per row.
    Rows,
    /// `NAME_cols`: `grid.1` row splits.
    Cols,
}

/// A launch plan: which kernel, its grid and block, and the scratch it needs. A function of the
/// shape, the vector width and the multiprocessor count only, so results are reproducible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The kernel.
    pub kind: PlanKind,
    /// Grid dimensions (x, y).
    pub grid: (u32, u32),
    /// Block dimensions (x, y).
    pub block: (u32, u32),
    /// Blocks per segment (`Segments`) or threads per row (`Rows`); unused for `Cols`.
    pub aux: u32,
    /// Partial values the kernel writes to scratch (each at most [`MAX_REDUCE_BYTES`]).
    pub partials: u64,
    /// Integer counters the kernel uses (zero before and after it runs).
    pub counters: u64,
}

impl Plan {
    /// Byte offset of the partials in the scratch buffer (the counters come first).
    pub fn partial_offset(&self) -> u64 {
        (self.counters * 4).div_ceil(256) * 256
    }

    /// Scratch bytes the plan needs.
    pub fn scratch_bytes(&self) -> u64 {
        self.partial_offset() + self.partials * MAX_REDUCE_BYTES as u64
    }
}

fn div_ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// The plan that reduces `rows` contiguous segments of `n` elements each (the full reduction is
/// one segment). `sms`: the GPU's multiprocessor count; `v`: the vector width.
pub fn plan_segments(sms: u32, rows: u64, n: u64, v: u32) -> Plan {
    let wave = u64::from(sms.max(1) * BLOCKS_PER_SM);
    let groups = div_ceil(n, u64::from(v));
    if rows > 1 && groups <= 128 {
        // Short rows: a group of g threads per row, each thread a few vector groups.
        let g = groups.max(1).next_power_of_two().min(32);
        let rows_per_block = u64::from(BLOCK) / g;
        let grid = div_ceil(rows, rows_per_block).min(wave * 8) as u32;
        return Plan {
            kind: PlanKind::Rows,
            grid: (grid, 1),
            block: (BLOCK, 1),
            aux: g as u32,
            partials: 0,
            counters: 0,
        };
    }
    let per_block = u64::from(BLOCK * UNROLL);
    let bpr = if rows >= wave { 1 } else { (wave / rows.max(1)).clamp(1, div_ceil(groups, per_block).max(1)) };
    let in_flight = rows.clamp(1, (2 * wave / bpr).max(1));
    let (partials, counters) = if bpr > 1 { (rows * bpr, rows) } else { (0, 0) };
    Plan {
        kind: PlanKind::Segments,
        grid: ((in_flight * bpr) as u32, 1),
        block: (BLOCK, 1),
        aux: bpr as u32,
        partials,
        counters,
    }
}

/// The plan that reduces each of the `n` columns of a row-major `rows` x `n` matrix.
pub fn plan_cols(sms: u32, rows: u64, n: u64, v: u32) -> Plan {
    let wave = u64::from(sms.max(1) * BLOCKS_PER_SM);
    let groups = div_ceil(n, u64::from(v)).max(1);
    let tx = groups.next_power_of_two().min(32);
    let ty = u64::from(BLOCK) / tx;
    let gx = div_ceil(groups, tx);
    let max_splits = (rows / (ty * 8)).max(1);
    let splits = div_ceil(2 * wave, gx).clamp(1, max_splits).min(65535);
    let (partials, counters) = if splits > 1 { (splits * n, gx) } else { (0, 0) };
    Plan {
        kind: PlanKind::Cols,
        grid: (gx as u32, splits as u32),
        block: (tx as u32, ty as u32),
        aux: 0,
        partials,
        counters,
    }
}

#[cfg(test)]
#[path = "reduction_tests.rs"]
mod tests;
