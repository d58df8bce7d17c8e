//! Every public launcher a macro generates has a row in the conformance matrix
//! (`tests/conformance/rows.rs` at the workspace root): a generator that emits a new launcher
//! without a row, and so without its hazards tested, fails here. The list of launchers is not
//! typed twice: it is read from what the macros expand to.
//!
//! Needs nvcc (run under `scripts/with-cuda`, as CI does): `cuda_kernel!` compiles its source to
//! expand. Without one, the `cuda_kernel!` families are expanded through build-time NVRTC paths
//! where possible, and a missing compiler fails only when CUDA_EMBED_REQUIRE_TOOLKIT is set.

#[allow(dead_code)]
mod rows {
    include!("../../../tests/conformance/rows.rs");
}

use cuda_embed_macros_core::{elementwise, fuse, reduction, rust_kernel, CallSite};
use proc_macro2::TokenStream;
use quote::quote;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

/// Public functions of a generated module that launch nothing: handles, attributes, the tuner.
const NOT_LAUNCHERS: &[&str] = &[
    "kernel",
    "kernel_ref",
    "module",
    "function",
    "attributes",
    "set_max_dynamic_shared_memory",
    "set_preferred_shared_carveout",
    "occupancy_config",
    "tuner",
    "check_errors",
];

fn site() -> CallSite {
    CallSite { file: "src/lib.rs".into(), line: 10, dir: None }
}

fn setup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::env::set_var(
            "CUDA_EMBED_CACHE_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("launcher-rows-cache"),
        );
    });
}

/// The public, documented functions inside the modules of `tokens` (hidden ones are support).
fn launchers(tokens: TokenStream) -> BTreeSet<String> {
    let file: syn::File = syn::parse2(tokens.clone()).unwrap_or_else(|e| panic!("{e}: {tokens}"));
    let text = tokens.to_string();
    assert!(!text.contains("compile_error"), "the expansion failed: {text}");
    let mut out = BTreeSet::new();
    fn hidden(attrs: &[syn::Attribute]) -> bool {
        attrs.iter().any(|a| a.path().is_ident("doc") && a.meta.to_token_stream_string().contains("hidden"))
    }
    trait Text {
        fn to_token_stream_string(&self) -> String;
    }
    impl Text for syn::Meta {
        fn to_token_stream_string(&self) -> String {
            quote::ToTokens::to_token_stream(self).to_string()
        }
    }
    /// The public surface: documented public modules, and modules a hidden one holds that are
    /// re-exported (`pub use __cuda_embed_…::saxpy;`, as `cuda_kernel!` does).
    fn walk(items: &[syn::Item], all: &[syn::Item], out: &mut BTreeSet<String>) {
        for item in items {
            match item {
                syn::Item::Mod(m) if !hidden(&m.attrs) && matches!(m.vis, syn::Visibility::Public(_)) => {
                    if let Some((_, inner)) = &m.content {
                        walk(inner, all, out);
                    }
                }
                syn::Item::Use(u) if matches!(u.vis, syn::Visibility::Public(_)) => {
                    let mut paths = Vec::new();
                    use_paths(&u.tree, &mut Vec::new(), &mut paths);
                    for path in paths {
                        if let Some(inner) = find(all, &path) {
                            walk(inner, all, out);
                        }
                    }
                }
                syn::Item::Fn(f) if matches!(f.vis, syn::Visibility::Public(_)) && !hidden(&f.attrs) => {
                    out.insert(f.sig.ident.to_string());
                }
                _ => {}
            }
        }
    }
    /// Every path a `use` tree names (`a::{b, c}` is `a::b` and `a::c`).
    fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                use_paths(&p.tree, prefix, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => out.push(prefix.iter().cloned().chain([n.ident.to_string()]).collect()),
            syn::UseTree::Rename(r) => out.push(prefix.iter().cloned().chain([r.ident.to_string()]).collect()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_paths(t, prefix, out)),
            syn::UseTree::Glob(_) => {}
        }
    }
    /// The items of the module at `path` (`[hidden, saxpy]`) among `items`.
    fn find<'a>(items: &'a [syn::Item], path: &[String]) -> Option<&'a [syn::Item]> {
        let (first, rest) = path.split_first()?;
        items.iter().find_map(|i| match i {
            syn::Item::Mod(m) if m.ident == first => {
                let inner = &m.content.as_ref()?.1;
                if rest.is_empty() {
                    Some(inner.as_slice())
                } else {
                    find(inner, rest)
                }
            }
            _ => None,
        })
    }
    walk(&file.items, &file.items, &mut out);
    out
}

/// The launchers of `family` with rows.
fn rows_of(family: &str) -> BTreeSet<String> {
    rows::ROWS.iter().filter(|r| r.family == family).map(|r| r.launcher.to_string()).collect()
}

/// Every launcher `tokens` generates has a row of `family`, and every row of `family` in
/// `expected` is generated.
fn check(family: &str, tokens: TokenStream, expected: &[&str]) {
    let generated: BTreeSet<String> =
        launchers(tokens).into_iter().filter(|f| !NOT_LAUNCHERS.contains(&f.as_str())).collect();
    let rows = rows_of(family);
    let missing: Vec<_> = generated.difference(&rows).collect();
    assert!(
        missing.is_empty(),
        "{family} generates launchers without a row in tests/conformance/rows.rs: {missing:?} \
         (add the row and its cells, and the tests of its hazards)"
    );
    for e in expected {
        assert!(generated.contains(*e), "{family}: `{e}` was not generated (generated: {generated:?})");
    }
}

fn have_compiler() -> bool {
    let ok = matches!(cuda_embed_macros_core::oracle::nvcc::find_nvcc(), Ok(Ok(_)));
    if !ok {
        assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "toolkit required but nvcc not found");
        eprintln!("skipping: no nvcc");
    }
    ok
}

#[test]
fn cuda_kernel_launchers_have_rows() {
    setup();
    if !have_compiler() {
        return;
    }
    let input = quote! {
        r#"
        extern "C" __global__ void axpy(float a, const float* x, float* y, int n) { }
        template <int BLOCK> __global__ void tk(const float* x, float* y, size_t n) { }
        "#,
        tune = { kernel = "tk", params = ["BLOCK: 64, 128"], block = "BLOCK", grid = "cdiv(n, BLOCK)", key = "n" }
    };
    let out = cuda_embed_macros_core::expand(input, site());
    check(
        "cuda_kernel!",
        out,
        &[
            "launch",
            "launch_timed",
            "launch_cooperative",
            "launch_cluster",
            "launch_dependent",
            "node",
            "update",
            "tuned",
        ],
    );
}

#[test]
fn tensor_map_launchers_have_rows() {
    setup();
    if !have_compiler() {
        return;
    }
    let input = quote! {
        r#"
        #include <cuda.h>
        extern "C" __global__ void tm(const __grid_constant__ CUtensorMap src, const __grid_constant__ CUtensorMap dst) { }
        "#
    };
    let out = cuda_embed_macros_core::expand(input, site());
    check(
        "cuda_kernel! (CUtensorMap)",
        out,
        &["launch", "launch_timed", "launch_cooperative", "launch_cluster", "launch_dependent", "node", "update"],
    );
}

#[test]
fn elementwise_launchers_have_rows() {
    setup();
    let input = quote!(ew, inputs = "float x, scalar float a", outputs = "float y", operation = "y = a * x");
    let out = elementwise::expand(input, site(), &HashMap::new());
    check(
        "elementwise_kernel!",
        out,
        &["launch", "launch_with", "launch_nd", "node", "node_with", "node_nd", "update_nd"],
    );
}

#[test]
fn reduction_launchers_have_rows() {
    setup();
    let input = quote!(red, inputs = "float x", outputs = "float y", map = "x", reduce = "a + b", identity = "0");
    let out = reduction::expand(input, site(), &[]);
    check(
        "reduction_kernel!",
        out,
        &["launch", "launch_rows", "launch_cols", "launch_axes", "node", "node_rows", "node_cols", "node_axes"],
    );
}

#[test]
fn fuse_launchers_have_rows() {
    setup();
    let elementwise =
        quote!(fz, inputs = "float x, float b", steps = ["float v = x + b", "y = v"], outputs = "float y");
    check("fuse!", fuse::expand(elementwise, site(), &[]), &["launch", "launch_nd", "node_nd", "update_nd"]);
    let reduce = quote!(
        fr,
        inputs = "float x",
        steps = ["float v = x * x"],
        outputs = "float s",
        reduce = "a + b",
        identity = "0"
    );
    check("fuse!", fuse::expand(reduce, site(), &[]), &["launch", "launch_rows", "launch_axes", "node_axes"]);
}

#[test]
fn rust_kernel_launchers_have_rows() {
    setup();
    let item = quote! {
        pub fn rk(a: f32, x: &[f32], y: &mut [f32]) {
            let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
            if i < y.len() { y[i] = a * x[i]; }
        }
    };
    let out = rust_kernel::expand(TokenStream::new(), item, site());
    check("#[kernel]", out, &["launch", "launch_timed", "launch_cooperative", "launch_cluster", "node", "update"]);
}
