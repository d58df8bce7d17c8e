//! Issue 39: template-heavy CUDA as today's GPU libraries write it. Each source below is a few
//! lines modelled on a shape those libraries use; each is expanded through nvcc and through
//! build-time NVRTC and must give launchers, not an error that blocks the whole file.
//!
//! Needs nvcc and libnvrtc (run under `scripts/with-cuda`); skipped without them unless
//! CUDA_EMBED_REQUIRE_TOOLKIT is set.

#[path = "common/toolkit.rs"]
mod toolkit;

use cuda_embed_macros_core::{expand, oracle::nvcc, oracle::nvrtc};
use proc_macro2::TokenStream;
use quote::quote;
use toolkit::{lock, site};

/// Whether both compilers are there, with the expansion's environment set.
fn have_both() -> bool {
    toolkit::isolate("modern-templates-cache");
    toolkit::have_both()
}

/// The expansion of `source` by `compiler`, as text.
fn expand_by(compiler: &str, source: &str, extra: TokenStream) -> String {
    expand(quote!(#source, compiler = #compiler, archs = [80, 90], #extra), site()).to_string()
}

/// Expands `source` through nvcc and build-time NVRTC; both must succeed; returns both texts.
fn both(source: &str, extra: TokenStream) -> Vec<(&'static str, String)> {
    ["nvcc", "nvrtc-build"]
        .into_iter()
        .map(|compiler| {
            let out = expand_by(compiler, source, extra.clone());
            assert!(!out.contains("compile_error"), "{compiler}: {out}");
            (compiler, out)
        })
        .collect()
}

#[test]
fn a_class_template_instance_by_value_is_a_struct_twin() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let src = r#"
        template <typename T, int N> struct Tensor { T* data; long size[N]; };
        namespace lib { template <class T, int N> struct Tensor { int n; T v[N]; }; }
        __global__ void k(Tensor<float, 1> t, float* out) { out[0] = t.data[0]; }
        __global__ void k2(Tensor<float, 1> t, lib::Tensor<double, 3> u) { }
        namespace lib { __global__ void k3(Tensor<short, 2> u) { } }
    "#;
    for (compiler, out) in both(src, quote!()) {
        let out: String = out.split_whitespace().collect();
        for twin in [
            "pubstructTensor_float_1{pubdata:::cuda_embed::RawDevicePtr,pubsize:i64}",
            "pubstructTensor_double_3{pubn:i32,pubv:[f64;3usize]}",
            "pubstructTensor_short_2{pubn:i32,pubv:[i16;2usize]}",
        ] {
            assert!(out.contains(twin), "{compiler}: {twin} in {out}");
        }
        assert!(out.contains(r#"("Tensor_float_1",&[("data",0usize,8usize),("size",8usize,8usize)])"#), "{compiler}");
        assert!(out.contains("pubmodk2") && out.contains("pubmodk3"), "{compiler}");
    }
}

#[test]
fn uninstantiated_overloaded_templates_do_not_block_the_file() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let src = r#"
        namespace lib { template <class T> __global__ void init(T* p, int n) {}
                        template <class T> __global__ void init(T* p) {} }
        extern "C" __global__ void mine(float* x) { x[0] = 1.f; }
    "#;
    for (compiler, out) in both(src, quote!()) {
        assert!(out.contains("pub mod mine") && !out.contains("pub mod init"), "{compiler}: {out}");
    }
    // A template of the same file that is not overloaded is still instantiated as before.
    let with_one = format!("{src} template <class T> __global__ void fill(T* p) {{}}");
    for (compiler, out) in both(&with_one, quote!(instances = ["fill<float>"])) {
        assert!(out.contains("pub mod fill") && !out.contains("pub mod init"), "{compiler}: {out}");
    }
}

/// What the front end refuses, before any compiler runs.
fn refused(source: &str, extra: TokenStream) -> String {
    let out = expand(quote!(#source, #extra), site()).to_string();
    assert!(out.contains("compile_error"), "{out}");
    out
}

#[test]
fn launching_an_overloaded_template_names_the_overload_and_the_fix() {
    let _lock = lock();
    let src = r#"
        namespace lib { template <class T> __global__ void init(T* p, int n) {}
                        template <class T> __global__ void init(T* p) {} }
        extern "C" __global__ void mine(float* x) { x[0] = 1.f; }
    "#;
    for name in ["lib::init<float>", "init<float>"] {
        let out = refused(src, quote!(instances = [#name]));
        assert!(out.contains("template kernel `lib::init` is overloaded"), "{out}");
        assert!(out.contains("give the overload you launch its own name"), "{out}");
    }
    // Only overloads are: the source's non-template overloads still refuse the file.
    let out = refused("__global__ void s(float* x) {} __global__ void s(int* x) {}", quote!());
    assert!(out.contains("kernel `s` is overloaded"), "{out}");
}

#[test]
fn uninstantiated_same_named_templates_in_two_namespaces_do_not_collide() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let src = r#"
        namespace a { template <class T> __global__ void kernel(T* p) {} }
        namespace b { template <class T> __global__ void kernel(T* p) {} }
        extern "C" __global__ void mine(float* x) { x[0] = 1.f; }
    "#;
    for (compiler, out) in both(src, quote!()) {
        assert!(out.contains("pub mod mine") && !out.contains("pub mod kernel"), "{compiler}: {out}");
    }
    // The one that is instantiated gets the module.
    for (compiler, out) in both(src, quote!(instances = ["b::kernel<int>"])) {
        assert!(out.contains("pub mod kernel") && out.contains("\"b::kernel<int>\""), "{compiler}: {out}");
        assert!(!out.contains("a::kernel"), "{compiler}: {out}");
    }
}

#[test]
fn same_named_templates_the_source_instantiates_take_their_namespace_paths() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let src = r#"
        namespace a { template <class T> __global__ void kernel(T* p) { p[0] = T(1); } }
        namespace b { template <class T> __global__ void kernel(T* p) { p[0] = T(2); } }
        template __global__ void a::kernel<float>(float*);
        template __global__ void b::kernel<int>(int*);
        namespace c { template <class T> __global__ void mine(T* p) {} }
        template __global__ void c::mine<float>(float*);
        extern "C" __global__ void mine(float* x) { x[0] = 1.f; }
    "#;
    // Both wanted, neither listed: each by its namespace path; the kernel keeps its own name.
    for (compiler, out) in both(src, quote!()) {
        for module in ["pub mod a_kernel", "pub mod b_kernel", "pub mod mine", "pub mod c_mine"] {
            assert!(out.contains(module), "{compiler}: {module} in {out}");
        }
        assert!(out.contains("\"a::kernel<float>\"") && out.contains("\"b::kernel<int>\""), "{compiler}: {out}");
        assert!(!out.contains("pub mod kernel "), "{compiler}: {out}");
    }
    // The one listed keeps the name; the other is named by its path.
    for (compiler, out) in both(src, quote!(instances = ["b::kernel<double>"])) {
        assert!(out.contains("pub mod kernel ") && out.contains("pub mod a_kernel"), "{compiler}: {out}");
        assert!(out.contains("\"b::kernel<double>\"") && out.contains("\"b::kernel<int>\""), "{compiler}: {out}");
        assert!(out.contains("\"a::kernel<float>\""), "{compiler}: {out}");
    }
}

#[test]
fn same_named_templates_both_listed_are_named_by_their_namespace_paths_or_renamed() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let src = r#"
        namespace a { template <class T> __global__ void kernel(T* p) {} }
        namespace b { template <class T> __global__ void kernel(T* p) {} }
        __global__ void other(float* x) {}
        namespace c { template <class T> __global__ void other(T* p) {} }
    "#;
    let listed = quote!(instances = ["a::kernel<float>", "b::kernel<int>", "c::other<float>"]);
    for (compiler, out) in both(src, listed.clone()) {
        for module in ["pub mod a_kernel", "pub mod b_kernel", "pub mod other ", "pub mod c_other"] {
            assert!(out.contains(module), "{compiler}: {module} in {out}");
        }
        assert!(
            out.contains("In Rust `a_kernel`, its namespace path: another kernel of the source is named `kernel` too."),
            "{compiler}"
        );
    }
    // `rename` names one; the other keeps the name (both kinds: template and kernel).
    let renamed = quote!(#listed, rename = { "a::kernel" => first, "::other" => plain });
    for (compiler, out) in both(src, renamed) {
        for module in ["pub mod first", "pub mod kernel ", "pub mod plain", "pub mod other "] {
            assert!(out.contains(module), "{compiler}: {module} in {out}");
        }
        assert!(!out.contains("pub mod b_kernel") && !out.contains("pub mod c_other"), "{compiler}: {out}");
    }
    // Unqualified, the name is ambiguous: that is said before any module is named.
    let out = refused(src, quote!(instances = ["kernel<float>"]));
    assert!(out.contains("names template kernels in several namespaces: qualify it"), "{out}");
}

#[test]
fn a_namespace_path_or_rename_that_collides_is_refused_with_the_fix() {
    let _lock = lock();
    let src = r#"
        namespace a { template <class T> __global__ void kernel(T* p) {} }
        namespace b { template <class T> __global__ void kernel(T* p) {} }
        __global__ void a_kernel(float* x) {}
    "#;
    let listed = quote!(instances = ["a::kernel<float>", "b::kernel<int>"]);
    let out = refused(src, listed.clone());
    assert!(
        out.contains(
            "kernel `a_kernel` and template kernel `a::kernel` (named by its namespace path, as another kernel is \
             named `kernel` too) would both generate a Rust module named `a_kernel`"
        ),
        "{out}"
    );
    assert!(out.contains(r#"name one with `rename = { \"a::kernel\" => another_name }`"#), "{out}");
    let out = refused(src, quote!(#listed, rename = { "a::kernel" => a_kernel }));
    let why =
        "`rename` names `a::kernel` `a_kernel`, but kernel `a_kernel` generates a Rust module named `a_kernel` too";
    assert!(out.contains(why), "{out}");
    let out = refused(src, quote!(#listed, rename = { "c::kernel" => c }));
    assert!(
        out.contains(
            "`rename` names `c::kernel`, but the CUDA source has no kernel of that name (its kernels: a_kernel, a::kernel, b::kernel)"
        ),
        "{out}"
    );
    let out = refused(src, quote!(#listed, rename = { "kernel" => k }));
    assert!(out.contains("`kernel` names kernels in several namespaces (`a::kernel`, `b::kernel`)"), "{out}");
    let out = refused(src, quote!(#listed, rename = { "a::kernel" => k, "b::kernel" => k }));
    assert!(out.contains("`rename` gives `a::kernel` and `b::kernel` the same name `k`"), "{out}");
    let out = refused(src, quote!(#listed, rename = { "a::kernel" => "k" }));
    assert!(out.contains("is not a Rust module name: `rename` gives `a::kernel` a Rust identifier"), "{out}");
    // A same-named template the source alone instantiates yields when its path is taken too.
    let yielded = format!("{src} template __global__ void a::kernel<double>(double*);");
    let out = expand(quote!(#yielded, compiler = "nvrtc", instances = ["b::kernel<int>"]), site()).to_string();
    assert!(!out.contains("compile_error") && out.contains("pub mod kernel "), "{out}");
    assert!(!out.contains("\"a::kernel<double>\""), "{out}");
}

/// `template __global__ void k(float*);` and `k<>`: the template arguments deduced from the
/// parameter list, the rest defaulted; launchers named as `instances` entries would be.
#[test]
fn deduced_explicit_instantiations_get_launchers() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let src = r#"
        template <class T, int SCALE = 3> __global__ void axpy(T a, const T* x, T* y) { y[0] += a * x[0] * T(SCALE); }
        template __global__ void axpy(float, const float*, float*);
        template __global__ void axpy<>(double, const double* __restrict__, double*);
        template __global__ void axpy<int, 5>(int, const int*, int*);
        namespace ns {
        template <class T, class U> __global__ void pair(T* t, const U* u) { t[0] = T(u[0]); }
        template __global__ void pair(float*, const int*);
        }
        template __global__ void ns::pair<double>(double*, const unsigned char*);
        #define DEDUCE(T) template __global__ void axpy(T, const T*, T*);
        DEDUCE(short)
    "#;
    for (compiler, out) in both(src, quote!()) {
        for name in [
            "\"axpy<float, 3>\"",
            "\"axpy<double, 3>\"",
            "\"axpy<int, 5>\"",
            "\"axpy<short, 3>\"",
            "\"ns::pair<float, int>\"",
            "\"ns::pair<double, unsigned char>\"",
        ] {
            assert!(out.contains(name), "{compiler}: {name} in {out}");
        }
        assert!(out.contains("pub mod axpy") && out.contains("pub mod pair"), "{compiler}");
    }
    // Listed too, an instance is built once.
    for (compiler, out) in both(src, quote!(instances = ["axpy<float, 3>"])) {
        let count = |name: &str| out.matches(name).count();
        assert_eq!(count("\"axpy<float, 3>\""), count("\"axpy<short, 3>\""), "{compiler}: once");
    }
}

#[test]
fn what_cannot_be_deduced_is_refused_with_the_fix() {
    let _lock = lock();
    let cases = [
        (
            "template <class T, int N> __global__ void k(T* p) {}\ntemplate __global__ void k(float*);",
            "template parameter `N` cannot be deduced: a non-type template parameter is not deduced",
            11,
        ),
        (
            "template <class T> struct V { T v; };\ntemplate <class T> __global__ void k(V<T> p) {}\n\
             template __global__ void k(V<int>);",
            "template parameter `T` cannot be deduced: it is only deduced from inside `V<T> p`",
            12,
        ),
        (
            "template <class T, class U = T> __global__ void k(T* p) {}\ntemplate __global__ void k(float*);",
            "its default `T` depends on the other template parameters",
            11,
        ),
        (
            "template <class T> __global__ void k(T* a, T* b) {}\ntemplate __global__ void k(float*, int*);",
            "`T` would be both `float` (from `float*`) and `int` (from `int*`)",
            11,
        ),
    ];
    // The source's first line is line 10 of src/lib.rs (`site`).
    for (src, why, line) in cases {
        let out = refused(src, quote!());
        assert!(out.contains("cannot deduce the template arguments of the explicit instantiation"), "{out}");
        assert!(out.contains(why) && out.contains(&format!("(src/lib.rs:{line})")), "{why}: {out}");
        assert!(out.contains("write them out, `template __global__ void k<"), "{out}");
    }
    let pack = "template <class... Ts> __global__ void k(float* p, Ts... ts) {}\ntemplate __global__ void k(float*);";
    let out = refused(pack, quote!());
    let why = "`class... Ts` is a parameter pack or template template parameter, which no launcher takes";
    assert!(out.contains(why), "{out}");
}

#[test]
fn a_template_with_cuda_arch_alternatives_stays_one_template() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let src = r#"
        template <typename T>
        #if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
        __global__ void __cluster_dims__(2,1,1) k(T* p) { p[0] = T(1); }
        #else
        __global__ void k(T* p) { }
        #endif
        template __global__ void k<float>(float*);
    "#;
    for (compiler, out) in both(src, quote!(instances = ["k<float>"])) {
        assert!(out.contains("pub mod k"), "{compiler}: {out}");
    }
}

#[test]
fn explicit_instantiations_in_the_source_get_launchers_without_instances() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    let src = r#"
        template <class T, int N> __global__ void k(T* p) { p[threadIdx.x % N] = T(N); }
        template __global__ void k<float, 4>(float*);
        #define INSTANTIATE(T, N) template __global__ void k<T, N>(T*);
        INSTANTIATE(double, 8)
        namespace ns {
        template <class T> __global__ void m(T* p) { p[0] = T(); }
        template __global__ void m<int>(int*);
        }
        template __global__ void ns::m<unsigned char>(unsigned char*);
        template <class T> __global__ void later(T* p) {}
        extern template __global__ void later<float>(float*);
    "#;
    for (compiler, out) in both(src, quote!()) {
        for name in ["\"k<float, 4>\"", "\"k<double, 8>\"", "\"ns::m<int>\"", "\"ns::m<unsigned char>\""] {
            assert!(out.contains(name), "{compiler}: {name} in {out}");
        }
        assert!(!out.contains("\"later<float>\""), "{compiler}: an extern template is made elsewhere: {out}");
        assert_eq!(out.matches("\"k<float, 4>\"").count(), out.matches("\"k<double, 8>\"").count(), "{compiler}: once");
    }
    // Two the source makes with the same Rust arguments (`long`, `long long`: both `i64`): the
    // first gets the launcher, the file is not refused; listing one makes it the one.
    let same = r#"
        template <class T> __global__ void w(T* p) {}
        template __global__ void w<long>(long*);
        template __global__ void w<long long>(long long*);
        extern "C" __global__ void mine(float* x) {}
    "#;
    for (compiler, out) in both(same, quote!()) {
        assert!(out.contains("\"w<long>\"") && !out.contains("\"w<long long>\""), "{compiler}: {out}");
    }
    for (compiler, out) in both(same, quote!(instances = ["w<long long>"])) {
        assert!(!out.contains("\"w<long>\"") && out.contains("\"w<long long>\""), "{compiler}: {out}");
    }
    let out = expand_by("nvcc", same, quote!(instances = ["w<long long>", "w<long>"]));
    assert!(out.contains("have the same Rust type arguments"), "both listed: {out}");
    // Listed too, an instance is built once.
    for (compiler, out) in both(src, quote!(instances = ["k<float, 4>", "ns::m<float>"])) {
        assert!(out.contains("\"ns::m<float>\"") && out.contains("\"k<double, 8>\""), "{compiler}: {out}");
    }
}

/// A constexpr host function called from a kernel: needs `--expt-relaxed-constexpr` (nvcc) or
/// `-default-device` (NVRTC).
const RELAXED: &str = r#"
    constexpr float twice(float v) { return v * 2.f; }
    extern "C" __global__ void relaxed(float* x) { x[0] = twice(x[0]); }
"#;

/// A lambda made in host code and run on the device: needs `--extended-lambda` (nvcc only).
const LAMBDA: &str = r#"
    template <class F> __global__ void apply(float* x, F f) { x[0] = f(x[0]); }
    void host_side(float* x) { apply<<<1, 1>>>(x, [] __device__ (float v) { return v * 2.f; }); }
    extern "C" __global__ void plain(float* x) { x[0] = 1.f; }
"#;

/// A C++20 concept.
const CONCEPTS: &str = r#"
    template <class T> concept Word = sizeof(T) == 4;
    template <Word T> __device__ T same(T v) { return v; }
    extern "C" __global__ void concepts(float* x) { x[0] = same(x[0]); }
"#;

/// An instruction only the arch-specific `sm_90a` target has.
const HOPPER: &str = r#"
    extern "C" __global__ void hopper(float* x) {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
        x[0] = 1.f;
    }
"#;

#[test]
fn the_flags_modern_libraries_need_work_on_nvcc_and_build_time_nvrtc() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    // Each source fails without its flag (so the flag is what makes it build) ...
    for (src, name) in [(RELAXED, "relaxed"), (CONCEPTS, "concepts")] {
        for compiler in ["nvcc", "nvrtc-build"] {
            let out = expand_by(compiler, src, quote!());
            assert!(out.contains("compile_error"), "{compiler}: {name} builds without its flag: {out}");
        }
    }
    assert!(expand_by("nvcc", LAMBDA, quote!()).contains("compile_error"), "the lambda needs the flag");
    let out = expand(quote!(#HOPPER, compiler = "nvcc", archs = [90]), site()).to_string();
    assert!(out.contains("compile_error"), "setmaxnreg needs sm_90a: {out}");
    // ... and builds with it, on both build-time compilers.
    for (compiler, out) in both(RELAXED, quote!(relaxed_constexpr = true)) {
        assert!(out.contains("pub mod relaxed"), "{compiler}: {out}");
    }
    for (compiler, out) in both(CONCEPTS, quote!(std = "c++20")) {
        assert!(out.contains("pub mod concepts"), "{compiler}: {out}");
    }
    let out = expand_by("nvcc", LAMBDA, quote!(extended_lambda = true));
    assert!(!out.contains("compile_error") && out.contains("pub mod plain"), "{out}");
    for compiler in ["nvcc", "nvrtc-build"] {
        let out = expand(quote!(#HOPPER, compiler = #compiler, archs = ["90a"]), site()).to_string();
        assert!(!out.contains("compile_error") && out.contains("\"sm_90a\""), "{compiler}: {out}");
    }
    // The same flags as free-form options, as nvcc spells them.
    let out = expand_by("nvrtc-build", RELAXED, quote!(options = ["--expt-relaxed-constexpr"]));
    assert!(!out.contains("compile_error"), "{out}");
}

#[test]
fn the_flags_reach_nvrtc_at_first_use_or_are_refused_by_name() {
    let _lock = lock();
    // NVRTC at first use: the options travel with the source, the arch-specific target too.
    let out = expand(
        quote!(#HOPPER, compiler = "nvrtc", archs = [80, "90a"], relaxed_constexpr = true, std = "c++20"),
        site(),
    )
    .to_string();
    assert!(!out.contains("compile_error"), "{out}");
    for option in ["\"--gpu-architecture=sm_90a\"", "\"--expt-relaxed-constexpr\"", "\"-std=c++20\""] {
        assert!(out.contains(option), "{option} in {out}");
    }
    // What NVRTC has no equivalent for is refused, naming the flag and the path.
    let out = refused(LAMBDA, quote!(compiler = "nvrtc", extended_lambda = true));
    assert!(out.contains("`--extended-lambda` is an nvcc flag") && out.contains("NVRTC at first use"), "{out}");
    let out = refused(LAMBDA, quote!(compiler = "nvrtc", options = ["--expt-extended-lambda"]));
    assert!(out.contains("`--expt-extended-lambda` is an nvcc flag"), "{out}");
    if have_both() {
        let out = refused(LAMBDA, quote!(compiler = "nvrtc-build", extended_lambda = true));
        assert!(out.contains("`--extended-lambda`") && out.contains("NVRTC at build time"), "{out}");
    }
}

/// NVRTC at first use: the first-load check (the module's probe, compiled with the source as the
/// runtime does) agrees with how the source text was read for a class-template instance by value,
/// and the module's own options (relaxed constexpr, as NVRTC spells it) reach the compile.
#[test]
fn first_use_checks_a_class_template_instance_by_value() {
    let _lock = lock();
    if !have_both() {
        return;
    }
    use cuda_embed_macros_core::{check, front, front::input::Input, oracle::firstload, oracle::probe};
    let Ok(Ok(n)) = nvrtc::find_nvrtc() else { unreachable!() };
    let src = r#"
        template <typename T, int N> struct Tensor { T* data; long size[N]; };
        constexpr float twice(float v) { return v * 2.f; }
        __global__ void k(Tensor<float, 2> t, float* out, int n) { out[n] = twice(t.data[0]); }
    "#;
    let input: Input = syn::parse2(quote!(#src, compiler = "nvrtc", relaxed_constexpr = true)).unwrap();
    let module = front::lower(&input, &site()).unwrap_or_else(|_| panic!("front end"));
    let checked = check::check(&module, None).unwrap();
    assert_eq!(checked.kernels[0].params[0].describe(), "Tensor_float_2 (your #[repr(C)] type)");
    let (code, checks) = firstload::plan(&checked);
    let text = format!("{}\n{code}", module.source);
    let request = nvcc::Request {
        source: &text,
        line_directive: &module.line_directive,
        options: &module.options,
        archs: &module.archs,
        include_dirs: &module.include_dirs,
    };
    let out = nvrtc::compile(&n, &[], &request).unwrap_or_else(|log| panic!("{log}"));
    let answers = probe::read(&out.ptx);
    let failing: Vec<&str> = checks
        .iter()
        .filter(|c| {
            let code = probe::number(&answers, c.symbol.trim_start_matches("__cuda_embed_probe_")).unwrap();
            code & c.mask != c.value
        })
        .map(|c| c.name.as_str())
        .collect();
    assert!(failing.is_empty(), "{failing:?}");
}
