//! The `cuda_kernel!` macro and `#[derive(DeviceSafe)]` of [cuda-embed](https://docs.rs/cuda-embed).
//! All logic lives in `cuda-embed-macros-core`; this crate only hands it the tokens and the call
//! site.

use proc_macro::TokenStream;

#[doc = include_str!("../cuda_kernel.md")]
#[proc_macro]
pub fn cuda_kernel(input: TokenStream) -> TokenStream {
    let site = call_site(&input);
    cuda_embed_macros_core::expand(input.into(), site).into()
}

#[doc = include_str!("../elementwise_kernel.md")]
#[proc_macro]
pub fn elementwise_kernel(input: TokenStream) -> TokenStream {
    let site = call_site(&input);
    // The Rust line of each `key = "literal"`, for `#line` directives in the generated source.
    let mut lines = std::collections::HashMap::new();
    let toks: Vec<proc_macro::TokenTree> = input.clone().into_iter().collect();
    for w in toks.windows(3) {
        if let (proc_macro::TokenTree::Ident(k), proc_macro::TokenTree::Punct(p), proc_macro::TokenTree::Literal(l)) =
            (&w[0], &w[1], &w[2])
        {
            if p.as_char() == '=' {
                lines.insert(k.to_string(), l.span().line());
            }
        }
    }
    cuda_embed_macros_core::elementwise::expand(input.into(), site, &lines).into()
}

/// Implements `cuda_embed::DeviceSafe` and cudarc's `DeviceRepr` for a `#[repr(C)]` struct, so
/// that it can be passed by value to a kernel (and stored in device buffers), after checking that
/// this is sound.
///
/// The struct must be `#[repr(C)]` (or `#[repr(C, align(N))]`, `#[repr(transparent)]`), have
/// named or tuple fields, no lifetime parameters, and derive `Clone` and `Copy`. Every field's
/// type must be `DeviceSafe` itself — numbers, `bool`, `f16`/`bf16`, CUDA vector types, arrays of
/// them, other derived structs — so a reference, `Vec`, `Box` or raw host pointer is a compile
/// error pointing at that field. Each type parameter gets a `DeviceSafe` bound.
///
/// The derive also records the fields' names, offsets and sizes in declaration order in
/// `DeviceSafe::LAYOUT`, which the layout check compares with the CUDA struct's members, so that
/// two fields declared in another order than in CUDA do not go unnoticed when the sizes add up.
/// Name the fields as in CUDA (ASCII case and underscores are ignored: `num_rows` matches
/// `numRows`) and declare them in the CUDA order.
///
/// ```rust
/// use cuda_embed::{cuda_kernel, DeviceSafe};
///
/// #[repr(C)]
/// #[derive(Clone, Copy, DeviceSafe)]
/// pub struct Params {
///     scale: f32,
///     n: i32,
/// }
///
/// cuda_kernel!(r#"
///     struct Params { float scale; int n; };
///     extern "C" __global__ void scale(float* x, Params p) {
///         int i = blockIdx.x * blockDim.x + threadIdx.x;
///         if (i < p.n) x[i] *= p.scale;
///     }
/// "#);
/// ```
///
/// The derive and the trait share the name `DeviceSafe` (like serde's `Serialize`): one `use`
/// brings both.
#[proc_macro_derive(DeviceSafe)]
pub fn derive_device_safe(input: TokenStream) -> TokenStream {
    cuda_embed_macros_core::derive::derive(input.into()).into()
}

/// File and line of the first token (the source literal), so `#line` maps CUDA diagnostics to
/// the Rust file.
fn call_site(input: &TokenStream) -> cuda_embed_macros_core::CallSite {
    let span = input.clone().into_iter().next().map(|t| t.span()).unwrap_or_else(proc_macro::Span::call_site);
    let file = span.file();
    let dir = span.local_file().and_then(|f| {
        let f = if f.is_absolute() { f } else { std::env::current_dir().ok()?.join(f) };
        f.parent().map(|p| p.to_path_buf())
    });
    cuda_embed_macros_core::CallSite { file, line: span.line(), dir }
}

#[doc = include_str!("../reduction_kernel.md")]
#[proc_macro]
pub fn reduction_kernel(input: TokenStream) -> TokenStream {
    let site = call_site(&input);
    let mut lines = Vec::new();
    literal_lines(input.clone(), &mut lines);
    cuda_embed_macros_core::reduction::expand(input.into(), site, &lines).into()
}

/// Fuses a chain of typed elementwise steps, optionally ending in a reduction, into one kernel
/// compiled when the crate builds, with one typed launcher: no intermediate arrays, no run-time
/// compilation.
///
/// ```ignore
/// use cuda_embed::fuse;
///
/// fuse!(
///     weighted_sq_diff,
///     inputs = "T x, T y, T w",
///     steps = ["T d = x - y", "T e = d * d * w"], // each a typed local, in order
///     outputs = "T s",
///     reduce = "a + b",                          // optional: reduces the last step's value
///     identity = "0",
///     types = ["float"],
/// );
/// weighted_sq_diff::launch(&stream, &x, &y, &w, &mut s)?; // s[0] = sum((x - y)^2 * w)
/// ```
///
/// Each step is `TYPE NAME = EXPR` (a local every later step sees) or, without `reduce`,
/// `OUTPUT = EXPR`. Without `reduce` the module is the `elementwise_kernel!` of the steps
/// (`launch`, `launch_nd`, ...); with it, the `reduction_kernel!` whose `map` runs the steps
/// (`launch`, `launch_rows`, `launch_cols`, `launch_axes`), so `post_map`, `reduce_type`,
/// `preamble`, `types` and the compiler options work as there. A compile error in a step (an
/// undeclared name, a value that does not convert to the step's type) is reported at that step.
#[proc_macro]
pub fn fuse(input: TokenStream) -> TokenStream {
    let site = call_site(&input);
    let mut lines = Vec::new();
    literal_lines(input.clone(), &mut lines);
    cuda_embed_macros_core::fuse::expand(input.into(), site, &lines).into()
}

/// The Rust line of every literal in `input` (by its text), so generated CUDA can carry `#line`
/// directives pointing at the user's code strings.
fn literal_lines(input: TokenStream, out: &mut Vec<(String, usize)>) {
    for t in input {
        match t {
            proc_macro::TokenTree::Literal(l) => out.push((l.to_string(), l.span().line())),
            proc_macro::TokenTree::Group(g) => literal_lines(g.stream(), out),
            _ => {}
        }
    }
}

/// A kernel written as a Rust function: translated to CUDA C++ at build time and compiled,
/// checked, embedded and launched like a `cuda_kernel!` module. See `cuda_embed::device` for what
/// the body can call and the README's "Kernels in Rust syntax" for the supported subset.
///
/// ```ignore
/// use cuda_embed::device::*;
///
/// #[cuda_embed::kernel]
/// fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
///     let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
///     if i < y.len() {
///         y[i] = a * x[i] + y[i];
///     }
/// }
/// // unsafe { saxpy::launch(&stream, cfg, 2.0, &x, &mut y)? };
/// ```
///
/// Options: `bounds_checks = false`, `cpp = "..."` (CUDA C++ whose `__device__` functions the
/// body calls), `include = "x.cuh"`, and the compiler options of `cuda_kernel!`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    // The function's own line: `#line` directives and error reports name it.
    let span = item
        .clone()
        .into_iter()
        .find(|t| matches!(t, proc_macro::TokenTree::Ident(i) if i.to_string() == "fn"))
        .map(|t| t.span())
        .unwrap_or_else(proc_macro::Span::call_site);
    let mut site = call_site(&item);
    site.line = span.line();
    cuda_embed_macros_core::rust_kernel::expand(attr.into(), item.into(), site).into()
}

/// Kernels and the Rust device functions they call, in one inline module: `#[kernel]` functions
/// become kernels (each with a launcher module of its name), `#[device]` functions become
/// `__device__` functions the kernels (and other device functions) call; all of them are one CUDA
/// module. The options are those of `#[cuda_embed::kernel]`, for all of them.
///
/// ```ignore
/// #[cuda_embed::kernels]
/// mod gpu {
///     use cuda_embed::device::*;
///
///     #[device]
///     fn square(v: f32) -> f32 {
///         v * v
///     }
///
///     #[kernel]
///     pub fn squares(x: &mut [f32]) {
///         let i = thread_idx().x as usize;
///         if i < x.len() {
///             x[i] = square(x[i]);
///         }
///     }
/// }
/// ```
#[proc_macro_attribute]
pub fn kernels(attr: TokenStream, item: TokenStream) -> TokenStream {
    let span = item
        .clone()
        .into_iter()
        .find(|t| matches!(t, proc_macro::TokenTree::Ident(i) if i.to_string() == "mod"))
        .map(|t| t.span())
        .unwrap_or_else(proc_macro::Span::call_site);
    let mut site = call_site(&item);
    site.line = span.line();
    cuda_embed_macros_core::rust_kernel::expand_module(attr.into(), item.into(), site).into()
}

/// Marks a Rust device function inside a `#[cuda_embed::kernels]` module (which translates it);
/// on its own it is an error saying so.
#[proc_macro_attribute]
pub fn device(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let span = item.clone().into_iter().next().map(|t| t.span()).unwrap_or_else(proc_macro::Span::call_site);
    let msg =
        "a `#[device]` function goes inside a `#[cuda_embed::kernels] mod` together with the kernels that call it";
    let err: TokenStream = format!("compile_error!({msg:?});").parse().unwrap_or_default();
    err.into_iter()
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect()
}
