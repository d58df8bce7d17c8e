//! Snapshots of what `cuda_kernel!` expands to, pretty-printed, for a few representative inputs:
//! a change to the generated code shows up here as a reviewable diff.
//!
//! Run with `UPDATE_SNAPSHOTS=1` to (re)write `tests/snapshots/*.rs.snap`, then read the diff.
//! The nvcc cases need nvcc (run under `scripts/with-cuda`); they are skipped without it unless
//! CUDA_EMBED_REQUIRE_TOOLKIT is set. What depends on the machine is normalised: the fatbin bytes
//! and their length, the nvcc release and absolute paths.

use cuda_embed_macros_core::{expand, oracle::nvcc, CallSite};
use proc_macro2::{Group, Literal, TokenStream, TokenTree};
use quote::quote;
use std::path::PathBuf;
use std::sync::Once;

fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Before any test thread expands anything: the environment is process-global.
        std::env::set_var("CUDA_EMBED_CACHE_DIR", PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("snapshot-cache"));
        std::env::remove_var("CUDA_EMBED_ARCHS");
        std::env::remove_var("CUDA_EMBED_FORCE_NVRTC");
    });
}

/// Whether nvcc is there; a missing nvcc fails when the toolkit is required.
fn have_nvcc() -> bool {
    match nvcc::find_nvcc() {
        Ok(Ok(_)) => true,
        other => {
            let why = match other {
                Ok(Err(no)) => no.to_string(),
                Err(e) => e,
                Ok(Ok(_)) => unreachable!(),
            };
            assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "toolkit required but {why}");
            eprintln!("skipping: {why}");
            false
        }
    }
}

/// This crate's directory: CARGO_MANIFEST_DIR at run time (set by `cargo test`, and by the packed
/// GPU run to the crate's copy there, as the macro reads it), else where it was built.
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

fn site() -> CallSite {
    CallSite { file: "src/lib.rs".into(), line: 10, dir: None }
}

/// Replaces what differs between machines and nvcc versions with placeholders.
fn normalise(tokens: TokenStream) -> TokenStream {
    // The fatbin: one long byte string; its length also appears as the array length.
    let mut fatbin_len = None;
    find_fatbin(&tokens, &mut fatbin_len);
    rewrite(tokens, fatbin_len)
}

fn find_fatbin(tokens: &TokenStream, len: &mut Option<String>) {
    for tt in tokens.clone() {
        match tt {
            TokenTree::Group(g) => find_fatbin(&g.stream(), len),
            TokenTree::Literal(l) => {
                if let Ok(syn::Lit::ByteStr(b)) = syn::parse_str::<syn::Lit>(&l.to_string()) {
                    *len = Some(format!("{}usize", b.value().len()));
                }
            }
            _ => {}
        }
    }
}

fn rewrite(tokens: TokenStream, fatbin_len: Option<String>) -> TokenStream {
    let manifest = manifest_dir();
    let manifest = manifest.to_string_lossy();
    let mut out = Vec::new();
    let mut prev: Vec<String> = Vec::new();
    for tt in tokens {
        let text = tt.to_string();
        let new = match tt {
            TokenTree::Group(g) => {
                let mut n = Group::new(g.delimiter(), rewrite(g.stream(), fatbin_len.clone()));
                n.set_span(g.span());
                TokenTree::Group(n)
            }
            TokenTree::Literal(l) => {
                if text.starts_with("b\"") {
                    TokenTree::Literal(Literal::byte_string(b"<fatbin>"))
                } else if Some(&text) == fatbin_len.as_ref() {
                    TokenTree::Literal(Literal::usize_suffixed(0))
                } else if prev.iter().rev().take(2).map(String::as_str).eq([":", "compiler"]) {
                    TokenTree::Literal(Literal::string("<nvcc release>"))
                } else if text.contains(&*manifest) {
                    TokenTree::Literal(Literal::string(
                        &text.trim_matches('"').replace(&*manifest, "$CARGO_MANIFEST_DIR"),
                    ))
                } else {
                    TokenTree::Literal(l)
                }
            }
            other => other,
        };
        prev.push(text);
        out.push(new);
    }
    out.into_iter().collect()
}

/// Expands `input` and compares the pretty-printed result with `tests/snapshots/NAME.rs.snap`.
fn check(name: &str, input: TokenStream) {
    setup();
    let expanded = normalise(expand(input, site()));
    let file: syn::File = syn::parse2(expanded.clone())
        .unwrap_or_else(|e| panic!("{name}: the expansion is not a Rust file: {e}\n{expanded}"));
    let pretty = prettyplease::unparse(&file);
    let path = manifest_dir().join("tests/snapshots").join(format!("{name}.rs.snap"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &pretty).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{name}: cannot read {}: {e}; run with UPDATE_SNAPSHOTS=1", path.display()));
    if expected != pretty {
        let mut diff = String::new();
        let (old, new): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), pretty.lines().collect());
        let mut shown = 0;
        for i in 0..old.len().max(new.len()) {
            let (o, n) = (old.get(i), new.get(i));
            if o != n && shown < 20 {
                shown += 1;
                diff.push_str(&format!(
                    "line {}:\n- {}\n+ {}\n",
                    i + 1,
                    o.unwrap_or(&"<none>"),
                    n.unwrap_or(&"<none>")
                ));
            }
        }
        panic!(
            "{name}: the expansion differs from {} ({} vs {} lines); first differences:\n{diff}\
             rerun with UPDATE_SNAPSHOTS=1 if the change is intended, and review the diff",
            path.display(),
            old.len(),
            new.len()
        );
    }
}

const SAXPY: &str = r#"
    extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
"#;

const TEMPLATES: &str = r#"
    template <typename T> __global__ void axpy(T a, const T* x, T* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
    template <typename T, int BLOCK> __global__ void block_sum(const T* x, T* out, int n) {
        __shared__ T s[BLOCK];
        int i = blockIdx.x * BLOCK + threadIdx.x;
        s[threadIdx.x] = i < n ? x[i] : T(0);
        __syncthreads();
        if (threadIdx.x == 0) { T t = 0; for (int j = 0; j < BLOCK; ++j) t += s[j]; atomicAdd(out, t); }
    }
"#;

const GLOBALS: &str = r#"
    __constant__ float taps[5];
    __device__ unsigned int clipped;
    extern "C" __global__ void fir(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i + 4 < n) {
            float acc = 0.0f;
            for (int t = 0; t < 5; ++t) acc += taps[t] * x[i + t];
            if (acc > 1.0f) { acc = 1.0f; atomicAdd(&clipped, 1u); }
            y[i] = acc;
        }
    }
"#;

const USER_STRUCT: &str = r#"
    typedef float real_t;
    struct Params { real_t scale; int n; double offset; };
    namespace ops {
        __global__ void apply(Params p, real_t* x) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < p.n) x[i] = x[i] * p.scale + (real_t)p.offset;
        }
    }
"#;

#[test]
fn saxpy_nvcc() {
    if have_nvcc() {
        check("saxpy_nvcc", quote!(#SAXPY, compiler = "nvcc"));
    }
}

#[test]
fn templates_nvcc() {
    if have_nvcc() {
        check(
            "templates_nvcc",
            quote!(#TEMPLATES, compiler = "nvcc", instances = ["axpy<float>", "axpy<double>", "block_sum<float, 256>"]),
        );
    }
}

#[test]
fn globals_nvcc() {
    if have_nvcc() {
        check("globals_nvcc", quote!(#GLOBALS, compiler = "nvcc"));
    }
}

#[test]
fn user_struct_nvcc() {
    if have_nvcc() {
        check("user_struct_nvcc", quote!(#USER_STRUCT, compiler = "nvcc"));
    }
}

#[test]
fn saxpy_nvrtc() {
    check("saxpy_nvrtc", quote!(#SAXPY, compiler = "nvrtc"));
}

/// The top-level string literals of the first `NAME( ... )` call in `tokens`, in order.
fn call_strings(tokens: &TokenStream, name: &str) -> Option<Vec<String>> {
    let mut trees = tokens.clone().into_iter().peekable();
    while let Some(tt) = trees.next() {
        match tt {
            TokenTree::Ident(i) if i == name => {
                if let Some(TokenTree::Group(g)) = trees.peek() {
                    let strings = g.stream().into_iter().filter_map(|t| match t {
                        TokenTree::Literal(l) => match syn::parse_str::<syn::Lit>(&l.to_string()) {
                            Ok(syn::Lit::Str(s)) => Some(s.value()),
                            _ => None,
                        },
                        _ => None,
                    });
                    return Some(strings.collect());
                }
            }
            TokenTree::Group(g) => {
                if let Some(found) = call_strings(&g.stream(), name) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

/// A module compiled by NVRTC at first use carries the mark its passed load checks are recorded
/// under, computed by the macro from the source and the probe it embeds, and the digest of its
/// compile's fixed inputs (so a cache hit hashes neither): what the runtime would compute from
/// the same text.
#[test]
fn nvrtc_modules_embed_the_checks_mark_and_unit_digest_of_their_source() {
    setup();
    let expanded = expand(quote!(#SAXPY, compiler = "nvrtc"), site());
    let strings = call_strings(&expanded, "source_checked").expect("an NVRTC module's image");
    // source, reason, probe, mark, unit digest (options and headers are empty arrays here).
    let [source, _reason, probe, mark, unit] = &strings[..] else { panic!("unexpected arguments: {strings:?}") };
    assert!(probe.contains("cuda_embed_probe"), "{probe}");
    assert_eq!(*mark, cuda_embed_source::key::checks_mark(source, probe));
    let none: [&str; 0] = [];
    let digest = cuda_embed_source::key::nvrtc_unit_digest(
        cuda_embed_source::key::NVRTC_KERNEL_NAME,
        source,
        &none,
        &[],
        &["saxpy"],
    );
    assert_eq!(*unit, digest);
}

#[test]
fn templates_and_globals_nvrtc() {
    let source = format!("{TEMPLATES}{GLOBALS}{USER_STRUCT}");
    check(
        "templates_and_globals_nvrtc",
        quote!(#source, compiler = "nvrtc", instances = ["axpy<float>", "axpy<double>", "block_sum<float, 256>"]),
    );
}

/// Same-named templates in two namespaces: one named by `rename`, one by its namespace path
/// beside a kernel of its name; one instance deduced from an explicit instantiation.
#[test]
fn renamed_templates_nvrtc() {
    let source = r#"
        namespace a { template <class T> __global__ void scale(T* p, T s) { p[threadIdx.x] *= s; } }
        namespace b { template <class T> __global__ void scale(T* p, T s) { p[threadIdx.x] /= s; } }
        template __global__ void b::scale(float*, float);
        namespace c { __global__ void scale(int* p) { p[threadIdx.x] = 0; } }
    "#;
    check(
        "renamed_templates_nvrtc",
        quote!(#source, compiler = "nvrtc", instances = ["a::scale<double>"], rename = { "a::scale" => times }),
    );
}

#[test]
fn every_bad_instance_is_reported() {
    setup();
    let out = expand(
        quote!(#TEMPLATES, compiler = "nvrtc", instances = ["nope<float>", "axpy<float*>", "axpy<float>"]),
        site(),
    )
    .to_string();
    assert_eq!(out.matches("compile_error").count(), 2, "{out}");
    assert!(out.contains("no template kernel `nope`"), "{out}");
    assert!(out.contains("`axpy<float*>`: `float*` is a pointer or reference"), "{out}");
    assert!(out.contains("pub mod axpy { }"), "the fallback modules stay: {out}");
}

/// The runtime's plain structs by value: the launcher takes `CudaExtent`/`CudaPitchedPtr` and
/// their Rust fields are compared with where the compiler put the toolkit's members (also for a
/// `__device__` variable of one).
#[test]
fn toolkit_structs_get_a_field_check_from_the_probe() {
    setup();
    if !have_nvcc() {
        return;
    }
    let source = "__device__ cudaPos origin;\n\
                  extern \"C\" __global__ void k(cudaPitchedPtr p, cudaExtent e, int n) { }";
    let out = expand(quote!(#source, compiler = "nvcc"), site()).to_string();
    assert!(!out.contains("compile_error"), "{out}");
    for (ty, rows) in [
        ("CudaPitchedPtr", "(\"cudaPitchedPtr\" , & [(\"ptr\" , 0usize , 8usize) , (\"pitch\" , 8usize , 8usize) , (\"xsize\" , 16usize , 8usize) , (\"ysize\" , 24usize , 8usize)])"),
        ("CudaExtent", "(\"cudaExtent\" , & [(\"width\" , 0usize , 8usize) , (\"height\" , 8usize , 8usize) , (\"depth\" , 16usize , 8usize)])"),
        ("CudaPos", "(\"cudaPos\" , & [(\"x\" , 0usize , 8usize) , (\"y\" , 8usize , 8usize) , (\"z\" , 16usize , 8usize)])"),
    ] {
        let want = format!("check_layout :: < :: cuda_embed :: {ty} > {rows}");
        assert!(out.contains(&want), "no `{want}` in\n{out}");
    }
}

/// A tuned template (`tune = { ... }`): `tuned`, `tuned_async` and the tuner's items, whose
/// parameters are lowered as the kernel's own launchers' are (a read buffer, two written ones of
/// which one is `void*`, values).
const TUNED: &str = r#"
    template <int BLOCK>
    __global__ void scale(const float* x, float* y, void* flags, float a, int n) {
        int i = blockIdx.x * BLOCK + threadIdx.x;
        if (i < n) { y[i] = a * x[i]; ((unsigned char*)flags)[i] = 1; }
    }
"#;

#[test]
fn tuned_nvrtc() {
    check(
        "tuned_nvrtc",
        quote!(#TUNED, compiler = "nvrtc", tune = { params = ["BLOCK: 128, 256"], block = "BLOCK", grid = "cdiv(n, BLOCK)", key = "n" }),
    );
}

/// A parameter kind the tuned launcher does not take is refused, naming it, before anything is
/// lowered.
#[test]
fn tune_refuses_a_texture_parameter() {
    setup();
    let source = r#"
        template <int BLOCK>
        __global__ void sample(cudaTextureObject_t t, float* y, int n) {
            int i = blockIdx.x * BLOCK + threadIdx.x;
            if (i < n) y[i] = tex1Dfetch<float>(t, i);
        }
    "#;
    let out = expand(
        quote!(#source, compiler = "nvrtc", tune = { params = ["BLOCK: 128, 256"], block = "BLOCK", grid = "cdiv(n, BLOCK)", key = "n" }),
        site(),
    )
    .to_string();
    assert!(
        out.contains(
            "`tune` does not support texture, surface, tensor map or graph-condition parameters yet (`t` of `sample`)"
        ),
        "{out}"
    );
}
