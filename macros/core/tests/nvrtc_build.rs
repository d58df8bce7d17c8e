//! Build-time NVRTC: the same sources expanded through nvcc and through libnvrtc at build time
//! give the same generated code except for the embedded image (every launcher signature, symbol,
//! parameter size and layout check), CUDA errors name the Rust line, and a build with no
//! compiler carries the first-load type check.
//!
//! Needs nvcc and libnvrtc (run under `scripts/with-cuda`); skipped without them unless
//! CUDA_EMBED_REQUIRE_TOOLKIT is set.

#[path = "../../../tests/common/elf.rs"]
mod elf;

#[path = "common/toolkit.rs"]
mod toolkit;

use cuda_embed_macros_core::{expand, oracle::nvcc, oracle::nvrtc};
use proc_macro2::{TokenStream, TokenTree};
use quote::quote;
use std::path::PathBuf;
use toolkit::{lock, site};

fn setup() {
    // `link` and `file` paths (`../../tests/kernels/link/main.cu`) are relative to the crate
    // root, which the macro reads from CARGO_MANIFEST_DIR at expansion, here at run time:
    // `cargo test` and the packed GPU run (`scripts/gpu-pack`) set it to this crate's
    // directory; a binary started by hand from elsewhere gets the directory it was built in.
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("CARGO_MANIFEST_DIR").is_none() {
            std::env::set_var("CARGO_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR"));
        }
    });
    toolkit::isolate("nvrtc-build-cache");
}

/// Whether both compilers are there; a missing one fails when the toolkit is required.
fn have_both() -> bool {
    setup();
    toolkit::have_both()
}

/// The expansion with the image expression (the tokens after `image:`) replaced by `IMAGE`.
fn without_image(tokens: TokenStream) -> String {
    fn walk(tokens: TokenStream) -> Vec<String> {
        let mut out = Vec::new();
        let mut skip_next = false;
        let mut prev: Vec<String> = Vec::new();
        for tt in tokens {
            if skip_next {
                skip_next = false;
                out.push("IMAGE".into());
                continue;
            }
            let text = tt.to_string();
            if text == ":" && prev.last().is_some_and(|p| p == "image") {
                skip_next = true;
            }
            match tt {
                TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        proc_macro2::Delimiter::Brace => ("{", "}"),
                        proc_macro2::Delimiter::Bracket => ("[", "]"),
                        proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                        proc_macro2::Delimiter::None => ("", ""),
                    };
                    out.push(open.into());
                    out.extend(walk(g.stream()));
                    out.push(close.into());
                }
                _ => out.push(text.clone()),
            }
            prev.push(text);
        }
        out
    }
    walk(tokens).join(" ")
}

/// Fails with the text around the first difference of `a` (nvcc) and `b` (build-time NVRTC).
fn assert_same(name: &str, a: &str, b: &str) {
    if a != b {
        let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
        let around = |s: &str| s[at.saturating_sub(300).min(s.len())..(at + 300).min(s.len())].to_string();
        panic!("{name}: nvcc and build-time NVRTC differ:\nnvcc:  ...{}...\nNVRTC: ...{}...", around(a), around(b));
    }
}

fn expand_with(compiler: &str, source: &str, extra: TokenStream) -> TokenStream {
    expand(quote!(#source, compiler = #compiler, archs = [80, 90], #extra), site())
}

const SOURCES: &[(&str, &str)] = &[
    (
        "saxpy",
        r#"extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }"#,
    ),
    (
        "use_double",
        r#"#ifdef USE_DOUBLE
        typedef double real;
        #else
        typedef float real;
        #endif
        extern "C" __global__ void scale(real* x, real a, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }"#,
    ),
    (
        "macros_and_typedefs",
        r#"#define IDX unsigned long long
        typedef const float* in_t;
        using out_t = double*;
        namespace ns { __global__ void k(in_t a, out_t b, IDX n, size_t m, bool flag) {} }
        __constant__ float coeffs[4];
        __device__ int counter;"#,
    ),
    (
        "templates_and_structs",
        r#"#include <cuda_fp16.h>
        struct Params { float scale; int n; double bias; };
        template <typename T, int N> __global__ void fill(T* out, T v, Params p) { out[threadIdx.x % N] = v; }
        extern "C" __global__ void half_k(__half* h, const __half2* h2, uint3 dims) {}"#,
    ),
    (
        // A conditional graph node's condition, set with the device runtime's call, which nvcc
        // declares (cuda_runtime.h) and NVRTC's built-in headers do not: the NVRTC compile puts
        // the declaration before the source (cuda_embed_source::devrt).
        "sets_a_condition",
        r#"extern "C" __global__ void step(int* counter, cudaGraphConditionalHandle more) {
            if (threadIdx.x == 0) cudaGraphSetConditional(more, --*counter > 0 ? 1u : 0u); }"#,
    ),
];

#[test]
fn nvcc_and_build_time_nvrtc_generate_the_same_code() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    for (name, src) in SOURCES {
        let extra = match *name {
            "use_double" => quote!(defines = ["USE_DOUBLE"]),
            "templates_and_structs" => quote!(instances = ["fill<float, 4>", "fill<double, 8>"]),
            _ => quote!(),
        };
        let by_nvcc = expand_with("nvcc", src, extra.clone());
        let by_nvrtc = expand_with("nvrtc-build", src, extra);
        let (a, b) = (without_image(by_nvcc.clone()), without_image(by_nvrtc.clone()));
        assert!(!a.contains("compile_error"), "{name}: nvcc failed: {a}");
        assert!(!b.contains("compile_error"), "{name}: NVRTC failed: {b}");
        assert_same(name, &a, &b);
        let (full_a, full_b) = (by_nvcc.to_string(), by_nvrtc.to_string());
        assert!(full_a.contains(":: fatbin ("), "{name}: nvcc embeds a fatbin");
        assert!(
            full_b.contains(":: cubins (") && full_b.contains("\"sm_80\"") && full_b.contains("\"sm_90\""),
            "{name}"
        );
        assert!(full_b.contains("\"compute_80\""), "{name}: the PTX target");
        if *name == "use_double" {
            assert!(b.contains("DeviceBufferMut < f64 >") && b.contains("a : f64"), "{name}: {b}");
            assert!(!b.contains("DeviceBufferMut < f32 >") && !b.contains("a : f32"), "{name}: {b}");
        }
    }
}

#[test]
fn a_cuda_error_is_a_compile_error_citing_the_rust_line() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let src = "extern \"C\" __global__ void k(float* x) {\n    x[0] = undefined_name;\n}";
    let out = expand_with("nvrtc-build", src, quote!()).to_string();
    assert!(out.contains("compile_error"), "{out}");
    assert!(out.contains("NVRTC 13"), "names the compiler: {out}");
    assert!(out.contains("src/lib.rs(11)"), "cites line 11 of the Rust file (call at line 10, error on line 2): {out}");
    assert!(out.contains("undefined_name"), "{out}");
    // The same with the device-runtime declaration put before the source: the line stays.
    let src =
        "extern \"C\" __global__ void k(unsigned long long h) {\n    cudaGraphSetConditional(h, undefined_name);\n}";
    let out = expand_with("nvrtc-build", src, quote!()).to_string();
    assert!(out.contains("src/lib.rs(11)") && out.contains("undefined_name"), "{out}");
    assert!(!out.contains("cudaGraphSetConditional\\\" is undefined"), "declared: {out}");
}

#[test]
fn no_nvcc_falls_back_to_build_time_nvrtc() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    // `compiler = "auto"` with nvcc hidden: NVRTC at build time, not at run time.
    std::env::set_var("CUDA_EMBED_NO_NVCC", "1");
    let out = expand(quote!("extern \"C\" __global__ void k(float* x) {}"), site()).to_string();
    std::env::remove_var("CUDA_EMBED_NO_NVCC");
    assert!(out.contains(":: cubins ("), "{out}");
}

#[test]
fn run_time_modules_carry_the_first_load_type_check() {
    let _lock = lock();
    setup();
    let src = SOURCES[1].1;
    let out = expand(quote!(#src, compiler = "nvrtc", defines = ["USE_DOUBLE"]), site()).to_string();
    assert!(out.contains(":: source_checked ("), "{out}");
    assert!(out.contains("cuda_embed_probe::Arg<0, decltype(::scale)>::t"), "{out}");
    // Without a compiler the source text is read with the user's defines: `real` is `double`.
    assert!(out.contains("DeviceBufferMut < f64 >") && !out.contains("DeviceBufferMut < f32 >"), "{out}");
    assert!(out.contains("ParamCheck"), "{out}");
    assert!(out.contains("symbol : \"__cuda_embed_probe_u0_0\""), "{out}");
    assert!(out.contains("cxx : \"real* x\""), "{out}");
}

/// What the first load of a module built with no compiler does, short of the GPU: NVRTC compiles
/// the source with the module's probe appended (as the runtime does), and each answer is held to
/// its check. The source text cannot tell what `__CUDACC_RTC__` (defined by NVRTC) selects, so
/// the macro reads both typedefs and keeps the last; where that is wrong, `x` and `a` are caught.
#[test]
fn the_first_load_probe_catches_what_the_source_text_got_wrong() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    use cuda_embed_macros_core::{check, front, front::input::Input, oracle::firstload, oracle::probe};
    let Ok(Ok(n)) = nvrtc::find_nvrtc() else { unreachable!() };
    let misread = "#ifdef __CUDACC_RTC__\ntypedef double real;\n#else\ntypedef float real;\n#endif\n\
                   extern \"C\" __global__ void scale(real* x, real a, int n) { x[n] *= a; }";
    let read_right = misread.replace("#ifdef", "#ifndef");
    for (src, wrong) in [(misread.to_string(), vec!["x", "a"]), (read_right, vec![])] {
        let input: Input = syn::parse2(quote!(#src, compiler = "nvrtc")).unwrap();
        let module = front::lower(&input, &site()).unwrap_or_else(|_| panic!("front end"));
        let checked = check::check(&module, None).unwrap();
        let (code, checks) = firstload::plan(&checked);
        assert_eq!(checks.len(), 3, "every parameter of scale is checked");
        let text = format!("{}\n{code}", module.source);
        let out = nvrtc::compile(
            &n,
            &[],
            &nvcc::Request {
                source: &text,
                line_directive: &module.line_directive,
                options: &module.options,
                archs: &module.archs,
                include_dirs: &module.include_dirs,
            },
        )
        .unwrap();
        let answers = probe::read(&out.ptx);
        let failing: Vec<&str> = checks
            .iter()
            .filter(|c| {
                let code = probe::number(&answers, c.symbol.trim_start_matches("__cuda_embed_probe_")).unwrap();
                code & c.mask != c.value
            })
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(failing, wrong);
    }
}

#[test]
fn require_compiler_turns_a_run_time_build_into_a_compile_error() {
    let _lock = lock();
    setup();
    std::env::set_var("CUDA_EMBED_REQUIRE_COMPILER", "1");
    let out = expand(quote!("extern \"C\" __global__ void k(float* x) {}", compiler = "nvrtc"), site()).to_string();
    std::env::remove_var("CUDA_EMBED_REQUIRE_COMPILER");
    assert!(out.contains("compile_error"), "{out}");
    assert!(out.contains("CUDA_EMBED_REQUIRE_COMPILER is set but this module would be compiled at run time"), "{out}");
    let ok = expand(quote!("extern \"C\" __global__ void k(float* x) {}", compiler = "nvrtc"), site()).to_string();
    assert!(!ok.contains("compile_error"), "{ok}");
}

#[test]
fn kernels_in_anonymous_namespaces_get_launchers() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let src = r#"namespace { __global__ void anon_k(float* x) { x[0] = 1; } }
        namespace ns { namespace { __global__ void inner(float* x, int n) { x[n] = 2; } } }"#;
    for compiler in ["nvcc", "nvrtc-build"] {
        let out = expand_with(compiler, src, quote!()).to_string();
        assert!(!out.contains("compile_error"), "{compiler}: {out}");
        assert!(out.contains("pub mod anon_k") && out.contains("pub mod inner"), "{compiler}: {out}");
        assert!(out.contains("_GLOBAL__N__"), "{compiler}: the symbol is the compiler's: {out}");
    }
}

#[test]
fn messages_about_a_cu_file_cite_the_cu_file() {
    let _lock = lock();
    setup();
    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join("x.cu");
    std::fs::write(&cu, "// a kernel\n\nextern \"C\" __global__ void k(float& r) {}\n").unwrap();
    let path = cu.to_str().unwrap();
    let out = expand(quote!(file = #path, compiler = "nvrtc"), site()).to_string();
    assert!(out.contains(&format!("({path}:3)")), "cites x.cu line 3, not the Rust file: {out}");
    assert!(!out.contains("src/lib.rs:12"), "{out}");
}

#[test]
fn kernels_made_by_function_like_macros_and_if_get_launchers() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let src = r#"
        #define FUSED_KERNEL(T, suffix) \
            extern "C" __global__ void moe_gemv_##suffix(const T* x, T* y, int n) { \
                int i = threadIdx.x; if (i < n) y[i] += x[i]; }
        FUSED_KERNEL(float, f32)
        FUSED_KERNEL(double, f64)
        #if defined(WITH_HALF) && WITH_HALF > 1
        FUSED_KERNEL(int, i32)
        #endif
    "#;
    for (compiler, extra) in
        [("nvcc", quote!()), ("nvrtc-build", quote!()), ("nvrtc", quote!(defines = ["WITH_HALF=2"]))]
    {
        let out = expand_with(compiler, src, extra).to_string();
        assert!(!out.contains("compile_error"), "{compiler}: {out}");
        assert!(out.contains("pub mod moe_gemv_f32") && out.contains("pub mod moe_gemv_f64"), "{compiler}: {out}");
        assert!(out.contains("DeviceBufferMut < f64 >"), "{compiler}: {out}");
        assert_eq!(
            out.contains("pub mod moe_gemv_i32"),
            compiler == "nvrtc",
            "{compiler}: the #if follows the defines"
        );
    }
}

/// Whether build-time NVRTC can link (nvJitLink next to libnvrtc); missing fails when the
/// toolkit is required.
fn have_linker() -> bool {
    if !have_both() {
        return false;
    }
    let Ok(Ok(n)) = nvrtc::find_nvrtc() else { unreachable!() };
    match cuda_embed_macros_core::link::nvjitlink::find(&n) {
        Ok(_) => true,
        Err(why) => {
            assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "toolkit required but {why}");
            eprintln!("skipping: {why}");
            false
        }
    }
}

/// The rdc modules of the parity test: a kernel launching a kernel, a kernel of a linked file
/// calling a `__device__` function and using a `__device__` variable of another, and the same
/// with LTO (paths relative to this crate's root, as `link` files are).
fn linked_sources() -> Vec<(&'static str, TokenStream)> {
    let parent = r#"__global__ void child(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += 1.f; }
        extern "C" __global__ void parent(float* y, int n) { if (threadIdx.x == 0) child<<<(n + 255) / 256, 256>>>(y, n); }
        template <typename T> __global__ void fill(T* y, T v) { y[threadIdx.x] = v; }"#;
    let main = "../../tests/kernels/link/main.cu";
    let math = "../../tests/kernels/link/math.cu";
    let templates = "../../tests/kernels/link/templates.cu";
    vec![
        ("rdc", quote!(#parent, rdc = true, instances = ["fill<float>", "fill<int>"])),
        ("link", quote!(file = #main, link = [#math])),
        ("lto", quote!(file = #main, link = [#math], lto = true)),
        (
            "templates",
            quote!(file = #main, link = [#math, #templates], instances = ["scale_square<float, 3>", "scale_square<int, 2>"]),
        ),
    ]
}

#[test]
fn nvcc_and_build_time_nvrtc_link_to_the_same_launchers() {
    let _lock = lock();
    if !have_linker() {
        return;
    }
    for (name, args) in linked_sources() {
        let by_nvcc = expand(quote!(#args, compiler = "nvcc", archs = [80, 90]), site());
        let by_nvrtc = expand(quote!(#args, compiler = "nvrtc-build", archs = [80, 90]), site());
        let (a, b) = (without_image(by_nvcc.clone()), without_image(by_nvrtc.clone()));
        assert!(!a.contains("compile_error"), "{name}: nvcc failed: {a}");
        assert!(!b.contains("compile_error"), "{name}: NVRTC failed: {b}");
        assert_same(name, &a, &b);
        assert!(by_nvcc.to_string().contains(":: fatbin ("), "{name}");
        let full = by_nvrtc.to_string();
        assert!(full.contains(":: cubins (") && full.contains("\"sm_80\"") && full.contains("\"sm_90\""), "{name}");
        let kernels = [
            "pub mod parent",
            "pub mod child",
            "pub mod square_all",
            "pub mod add_calls",
            "pub mod poly_loop",
            "pub mod scale_square",
        ];
        for k in kernels {
            let expected = match name {
                "rdc" => k.ends_with("parent") || k.ends_with("child"),
                _ if k.ends_with("scale_square") => name.starts_with("templates"),
                _ => !k.ends_with("parent") && !k.ends_with("child"),
            };
            assert_eq!(b.contains(k), expected, "{name}: {k}");
        }
    }
}

#[test]
fn build_time_nvrtc_links_linked_images_that_hold_the_kernels() {
    let _lock = lock();
    if !have_linker() {
        return;
    }
    let (_, args) = linked_sources().remove(0);
    let out = expand(quote!(#args, compiler = "nvrtc-build", archs = [80]), site()).to_string();
    assert!(!out.contains("compile_error"), "{out}");
    // The linked cubin is an ELF holding the kernels and the device runtime's launch entry points.
    let bytes = byte_strings(&out);
    let cubin = bytes.iter().find(|b| b.starts_with(b"\x7fELF")).expect("an ELF cubin is embedded");
    let text = String::from_utf8_lossy(cubin);
    assert!(text.contains("parent") && text.contains("_Z5childPfi"), "the kernels are in the linked cubin");
    assert!(text.contains("_Z4fillIfEvPT_S0_") && text.contains("_Z4fillIiEvPT_S0_"), "the template instances");
}

/// nvJitLink gets `libcudadevrt.a` only where a unit uses a symbol no unit defines: a module of
/// two files calling each other links without it (with LTO nvJitLink used to keep all of the
/// library's code in the image), one whose kernel launches a kernel links with it.
#[test]
fn build_time_nvrtc_links_the_device_runtime_only_where_needed() {
    let _lock = lock();
    if !have_linker() {
        return;
    }
    let main = "../../tests/kernels/link/main.cu";
    let math = "../../tests/kernels/link/math.cu";
    let parent = r#"__global__ void child(float* y) { y[threadIdx.x] = 1.f; }
        extern "C" __global__ void parent(float* y) { child<<<1, 32>>>(y); }"#;
    let cases = [(quote!(file = #main, link = [#math]), false), (quote!(#parent, rdc = true), true)];
    for (args, devrt) in cases {
        for lto in [false, true] {
            let out = expand(quote!(#args, lto = #lto, compiler = "nvrtc-build", archs = [80]), site()).to_string();
            assert!(!out.contains("compile_error"), "{out}");
            let bytes = byte_strings(&out);
            let cubin = bytes.iter().find(|b| b.starts_with(b"\x7fELF")).expect("an ELF cubin is embedded");
            // `cudartErrorTable` is a variable of the device runtime library.
            let has = String::from_utf8_lossy(cubin).contains("cudartErrorTable");
            assert_eq!(has, devrt, "device runtime {devrt}, lto {lto}");
        }
    }
}

/// The byte-string literals (`b"..."`) of an expansion, unescaped.
fn byte_strings(tokens: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for lit in tokens.split(" b\"").skip(1) {
        let mut bytes = Vec::new();
        let mut chars = lit.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('x') => {
                        let hex: String = chars.by_ref().take(2).collect();
                        bytes.push(u8::from_str_radix(&hex, 16).unwrap_or(0));
                    }
                    Some('n') => bytes.push(b'\n'),
                    Some('r') => bytes.push(b'\r'),
                    Some('t') => bytes.push(b'\t'),
                    Some('0') => bytes.push(0),
                    Some(o) => bytes.push(o as u8),
                    None => break,
                },
                c => bytes.push(c as u8),
            }
        }
        out.push(bytes);
    }
    out
}

#[test]
fn build_time_nvrtc_names_a_mismatched_symbol_and_both_files() {
    let _lock = lock();
    if !have_linker() {
        return;
    }
    let math = "../../tests/kernels/link/math.cu";
    let src = r#"__device__ float square(double x);
        extern "C" __global__ void k(float* y) { y[0] = square(y[0]); }"#;
    for compiler in ["nvcc", "nvrtc-build"] {
        let out = expand(quote!(#src, link = [#math], compiler = #compiler, archs = [80]), site()).to_string();
        assert!(out.contains("compile_error"), "{compiler}: {out}");
        assert!(out.contains("mismatched `__device__` function `square`"), "{compiler}: {out}");
        assert!(out.contains("square(double)") && out.contains("square(float)"), "{compiler}: {out}");
        assert!(out.contains("../../tests/kernels/link/math.cu"), "{compiler}: names the defining file: {out}");
    }
}

#[test]
fn no_nvcc_links_rdc_modules_with_build_time_nvrtc() {
    let _lock = lock();
    if !have_linker() {
        return;
    }
    std::env::set_var("CUDA_EMBED_NO_NVCC", "1");
    let out = expand(
        quote!("__global__ void c() {} extern \"C\" __global__ void p() { c<<<1, 1>>>(); }", rdc = true),
        site(),
    )
    .to_string();
    std::env::remove_var("CUDA_EMBED_NO_NVCC");
    assert!(!out.contains("compile_error"), "{out}");
    assert!(out.contains(":: cubins ("), "{out}");
}

/// With no compiler at build time, an rdc module embeds each unit's source and which name
/// expressions each resolves; the runtime compiles and links them at first use.
#[test]
fn with_no_compiler_the_units_are_linked_at_first_use() {
    let _lock = lock();
    setup();
    let main = "../../tests/kernels/link/main.cu";
    let math = "../../tests/kernels/link/math.cu";
    let out = expand(quote!(file = #main, link = [#math], lto = true, compiler = "nvrtc"), site()).to_string();
    assert!(!out.contains("compile_error"), "{out}");
    assert!(out.contains(":: linked ("), "{out}");
    // main.cu resolves its two kernels; math.cu its kernel (index 2) and `calls` (kernels + 0 = 3).
    assert!(out.contains("name : \"../../tests/kernels/link/main.cu\""), "{out}");
    assert!(out.contains("exprs : & [0usize , 1usize]") && out.contains("exprs : & [2usize , 3usize]"), "{out}");
    assert!(out.contains("true , \"NVRTC was requested"), "lto and the reason: {out}");
    assert!(out.contains("pub mod square_all") && out.contains("pub static calls"), "{out}");
    // CUDA_EMBED_REQUIRE_COMPILER makes it an error, as for a plain module.
    std::env::set_var("CUDA_EMBED_REQUIRE_COMPILER", "1");
    let out = expand(
        quote!(
            "__global__ void c() {} extern \"C\" __global__ void p() { c<<<1, 1>>>(); }",
            rdc = true,
            compiler = "nvrtc"
        ),
        site(),
    )
    .to_string();
    std::env::remove_var("CUDA_EMBED_REQUIRE_COMPILER");
    assert!(
        out.contains("CUDA_EMBED_REQUIRE_COMPILER is set but this module would be compiled and linked at run time"),
        "{out}"
    );
}

/// The instances of a linked file's template are instantiated in that file: the linked cubin
/// holds them (build-time NVRTC), and at first use the linked file resolves their names.
#[test]
fn instances_of_a_linked_template_are_built_in_its_file() {
    let _lock = lock();
    setup();
    let main = "../../tests/kernels/link/main.cu";
    let math = "../../tests/kernels/link/math.cu";
    let templates = "../../tests/kernels/link/templates.cu";
    let args = quote!(file = #main, link = [#math, #templates], instances = ["scale_square<float, 3>", "scale_square<int, 2>"]);
    // No compiler at build time: main.cu resolves its kernels 0 and 1, math.cu its kernel 2 and
    // `calls` (the last index), templates.cu the two instances (3 and 4).
    let out = expand(quote!(#args, compiler = "nvrtc"), site()).to_string();
    assert!(!out.contains("compile_error"), "{out}");
    assert!(out.contains("name : \"../../tests/kernels/link/templates.cu\""), "{out}");
    assert!(out.contains("exprs : & [0usize , 1usize]") && out.contains("exprs : & [2usize , 5usize]"), "{out}");
    assert!(out.contains("exprs : & [3usize , 4usize]"), "{out}");
    if !have_linker() {
        return;
    }
    let out = expand(quote!(#args, compiler = "nvrtc-build", archs = [80]), site()).to_string();
    assert!(!out.contains("compile_error"), "{out}");
    let bytes = byte_strings(&out);
    let cubin = bytes.iter().find(|b| b.starts_with(b"\x7fELF")).expect("an ELF cubin is embedded");
    let text = String::from_utf8_lossy(cubin);
    assert!(text.contains("_Z12scale_squareIfLi3EEvPT_i"), "scale_square<float, 3> is in the linked cubin");
    assert!(text.contains("_Z12scale_squareIiLi2EEvPT_i"), "scale_square<int, 2> is in the linked cubin");
    // A template the source only declares and a linked file defines: instantiated where defined
    // (instantiating the declaration in the source would leave the link an undefined symbol).
    let src = "template <typename T, int K> __global__ void scale_square(T* y, int n);\n\
               extern \"C\" __global__ void k(float* y) { y[0] = 1.f; }";
    for compiler in ["nvcc", "nvrtc-build"] {
        let out = expand(
            quote!(#src, link = [#math, #templates], instances = ["scale_square<float, 3>"], compiler = #compiler, archs = [80]),
            site(),
        )
        .to_string();
        assert!(!out.contains("compile_error"), "{compiler}: {out}");
        assert!(out.contains("pub mod scale_square"), "{compiler}: {out}");
    }
}

/// An instance no unit's template takes keeps the front end's error, now listing the linked
/// files' templates; a template defined in two units is an error naming both.
#[test]
fn a_linked_template_instance_must_name_one_defined_template() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let main = "../../tests/kernels/link/main.cu";
    let math = "../../tests/kernels/link/math.cu";
    let templates = "../../tests/kernels/link/templates.cu";
    for compiler in ["nvcc", "nvrtc"] {
        let out = expand(
            quote!(file = #main, link = [#math, #templates], instances = ["scale_cube<float, 3>"], compiler = #compiler),
            site(),
        )
        .to_string();
        assert!(out.contains("no template kernel `scale_cube` in the CUDA source"), "{compiler}: {out}");
        assert!(out.contains("its template kernels: scale_square"), "{compiler}: {out}");
    }
    let src = "#include \"../../tests/kernels/link/shared.cuh\"\n\
               template <typename T, int K> __global__ void scale_square(T* y, int n) { y[0] = (T)K; }";
    let out =
        expand(quote!(#src, link = [#math, #templates], instances = ["scale_square<float, 3>"]), site()).to_string();
    assert!(out.contains("template kernel `scale_square` is defined in both `src/lib.rs:10` and"), "{out}");
    assert!(out.contains("templates.cu"), "{out}");
}

/// `lto = true` keeps every kernel of every unit in the image (nvcc: `nvlink -dlto
/// -ignore-host-info`; build-time NVRTC: nvJitLink), also where a unit's host code refers to a
/// kernel: the address probe of a template instance (of a linked file's template or of the
/// source's own) and a host function launching a kernel. Without `-ignore-host-info`, nvlink
/// kept only the kernels host code referred to, so each image below held only the instance (or
/// only `launched`).
#[test]
fn lto_images_hold_every_kernel_of_every_unit() {
    let _lock = lock();
    if !have_linker() {
        return;
    }
    let main = "../../tests/kernels/link/main.cu";
    let math = "../../tests/kernels/link/math.cu";
    let templates = "../../tests/kernels/link/templates.cu";
    let own_template = r#"__device__ float square(float x);
        template <typename T> __global__ void own(T* y) { y[threadIdx.x] = (T)square(2.f); }
        extern "C" __global__ void plain(float* y) { y[0] = square(y[0]); }"#;
    let host_launch = r#"__device__ float square(float x); __device__ float axpb(float a, float x, float b);
        extern "C" __global__ void launched(float* y) { y[0] = square(y[0]); }
        extern "C" __global__ void not_launched(float* y) { y[0] = axpb(y[0], 2.f, 1.f); }
        void launch_from_host(float* y) { launched<<<1, 1>>>(y); }"#;
    let cases = [
        (
            quote!(file = #main, link = [#math, #templates], instances = ["scale_square<float, 3>", "scale_square<int, 2>"]),
            &["_Z12scale_squareIfLi3EEvPT_i", "_Z12scale_squareIiLi2EEvPT_i", "add_calls", "poly_loop", "square_all"][..],
        ),
        (
            quote!(#own_template, link = [#math], instances = ["own<float>"]),
            &["_Z3ownIfEvPT_", "add_calls", "plain"][..],
        ),
    ];
    // Host code is nvcc's only (NVRTC compiles device code).
    let host = (quote!(#host_launch, link = [#math]), &["add_calls", "launched", "not_launched"][..]);
    let runs = cases.into_iter().flat_map(|c| [(c.clone(), "nvcc"), (c, "nvrtc-build")]).chain([(host, "nvcc")]);
    for ((args, expected), compiler) in runs {
        {
            let out = expand(quote!(#args, lto = true, compiler = #compiler, archs = [80, 90]), site()).to_string();
            assert!(!out.contains("compile_error"), "{compiler}: {out}");
            let images: Vec<Vec<String>> =
                byte_strings(&out).iter().flat_map(|b| elf::kernels_in_images(b)).filter(|k| !k.is_empty()).collect();
            assert_eq!(images.len(), 2, "{compiler}: one image per architecture: {images:?}");
            for kernels in &images {
                for k in expected {
                    assert!(kernels.iter().any(|x| x == k), "{compiler}: `{k}` is not in the image: {kernels:?}");
                }
            }
        }
    }
}

/// The cache key of a unit covers the linked file's text: an edit to the linked template is
/// compiled, never answered from the cache of the file before the edit.
#[test]
fn an_edited_linked_template_is_compiled_again() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("linked-template-edit");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("t.cu");
    let path = file.to_string_lossy().to_string();
    let args = quote!("extern \"C\" __global__ void k(float* y) { y[0] = 1.f; }", link = [#path], instances = ["twice<float>"]);
    for compiler in ["nvcc", "nvrtc-build"] {
        if compiler == "nvrtc-build" && !have_linker() {
            continue;
        }
        std::fs::write(&file, "template <typename T> __global__ void twice(T* y) { y[0] *= 2; }\n").unwrap();
        let out = expand(quote!(#args, compiler = #compiler, archs = [80]), site()).to_string();
        assert!(!out.contains("compile_error"), "{compiler}: {out}");
        assert!(out.contains("pub mod twice"), "{compiler}: {out}");
        assert!(
            out.contains(&format!("include_bytes ! (\"{}\")", file.canonicalize().unwrap().display())),
            "{compiler}: tracked: {out}"
        );
        // The same template, now failing for T = float: a cache keyed without the linked text
        // would answer with the build before the edit.
        std::fs::write(
            &file,
            "template <typename T> __global__ void twice(T* y) { static_assert(sizeof(T) == 8, \"edited linked file\"); }\n",
        )
        .unwrap();
        let out = expand(quote!(#args, compiler = #compiler, archs = [80]), site()).to_string();
        assert!(out.contains("compile_error") && out.contains("edited linked file"), "{compiler}: {out}");
    }
}

/// A build-time NVRTC build's cache entry records the headers its options include before the
/// source (`--pre-include`) and the headers they include: after a change to one, NVRTC compiles
/// again (a stale hit would return the old PTX).
#[test]
fn build_time_nvrtc_recompiles_when_a_pre_included_header_changes() {
    let _g = lock();
    if !have_both() {
        return;
    }
    let n = nvrtc::find_nvrtc().unwrap().unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("scale.cuh"), "#include \"value.cuh\"\n").unwrap();
    std::fs::write(d.path().join("value.cuh"), "#define SCALE 1234567\n").unwrap();
    let options = vec![format!("-I{}", d.path().display()), "-include".to_string(), "scale.cuh".to_string()];
    let archs = [nvcc::Arch::parse("80").unwrap()];
    let req = nvcc::Request {
        source: "extern \"C\" __global__ void k(int* x) { x[0] = SCALE; }\n",
        line_directive: "#line 1 \"src/lib.rs\"",
        options: &options,
        archs: &archs,
        include_dirs: &[],
    };
    let first = nvrtc::compile(&n, &[], &req).unwrap();
    assert!(first.deps.iter().any(|p| p.ends_with("value.cuh")), "{:?}", first.deps);
    assert!(nvrtc::compile(&n, &[], &req).unwrap().from_cache, "nothing changed: a hit");
    std::fs::write(d.path().join("value.cuh"), "#define SCALE 7654321\n").unwrap();
    let second = nvrtc::compile(&n, &[], &req).unwrap();
    assert!(!second.from_cache, "a pre-included header changed: a miss");
    assert!(second.ptx.contains("7654321") && !second.ptx.contains("1234567"), "{}", second.ptx);
}

/// A whole-program source (host headers, a host `main`) that NVRTC will compile at first use is
/// named in a warning at the macro: NVRTC has no C library headers and compiles no host code, so
/// its first launch would fail. Device-only sources get no such warning.
#[test]
fn host_code_for_nvrtc_at_first_use_is_named_in_a_warning() {
    let _lock = lock();
    setup();
    let whole = "#include <stdio.h>\n#include <unistd.h>\nextern \"C\" __global__ void k(float* x) { x[0] = 1.f; }\n\
                 int main() { sleep(1); printf(\"done\\n\"); return 0; }\n";
    let out = expand(quote!(#whole, compiler = "nvrtc"), site()).to_string();
    assert!(out.contains(":: source_checked ("), "{out}");
    assert!(out.contains("HostCodeNvrtcCannotCompile"), "{out}");
    assert!(out.contains("`#include <stdio.h>`, `#include <unistd.h>`, a host `main` function"), "names each: {out}");
    let device = "extern \"C\" __global__ void k(float* x) { printf(\"%f\", x[0]); }";
    let out = expand(quote!(#device, compiler = "nvrtc"), site()).to_string();
    assert!(!out.contains("HostCodeNvrtcCannotCompile"), "{out}");
}
