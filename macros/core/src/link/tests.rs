use super::symbols::{self, Var};

#[test]
fn demangles_simple_functions() {
    assert_eq!(symbols::demangle("_Z2sqf"), "sq(float)");
    assert_eq!(symbols::demangle("_ZN2ns4axpyEfPKfPfi"), "ns::axpy(float, const float*, float*, int)");
    assert_eq!(symbols::demangle("_Z1fv"), "f()");
    assert_eq!(symbols::demangle("plain_c"), "plain_c");
    assert_eq!(symbols::base_name("_ZN2ns2sqEd"), "ns::sq");
    assert_eq!(symbols::base_name("sq"), "sq");
}

#[test]
fn reads_the_symbols_of_relocatable_ptx() {
    let ptx = "\
.extern .func  (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2
.extern .func  (.param .b32 func_retval0) _Z2sqf
(
.extern .global .align 4 .u32 counter;
.extern .global .align 4 .b8 table[16];
.visible .global .align 4 .f32 scale = 0f3F800000;
.visible .func  (.param .b32 func_retval0) _Z4cubef(
.weak .func _Z1gv()
.visible .entry _Z5childPfi(
.visible .entry parent(
.extern .shared .align 16 .b8 smem[];
";
    let s = symbols::read(ptx);
    assert_eq!(s.extern_funcs, ["__cudaCDP2GetParameterBufferV2", "_Z2sqf"]);
    assert_eq!(s.defined_funcs, ["_Z4cubef", "_Z1gv", "_Z5childPfi", "parent"]);
    assert_eq!(
        s.extern_vars.iter().map(|v| (v.name.as_str(), v.bytes())).collect::<Vec<_>>(),
        [("counter", Some(4)), ("table", Some(16))]
    );
    assert_eq!(s.defined_vars, [Var { name: "scale".into(), ty: ".global .f32".into(), count: None }]);
}

#[test]
fn unresolved_symbols_are_the_externs_no_unit_defines() {
    let main = symbols::read(
        ".extern .func  (.param .b32 func_retval0) _Z2sqf\n(\n.extern .global .align 4 .u32 calls;\n\
         .extern .func  (.param .b64 func_retval0) cudaGetParameterBufferV2\n(\n.visible .entry k(\n",
    );
    let math =
        symbols::read(".visible .global .align 4 .u32 calls;\n.visible .func  (.param .b32 func_retval0) _Z2sqf(\n");
    assert_eq!(symbols::unresolved(&[main.clone(), math.clone()]), ["cudaGetParameterBufferV2"]);
    assert_eq!(symbols::unresolved(&[main]), ["_Z2sqf", "calls", "cudaGetParameterBufferV2"]);
    assert!(symbols::unresolved(&[math]).is_empty());
}

#[test]
fn undefined_symbols_from_nvlink_and_ptxas_logs() {
    let log = "nvlink error   : Undefined reference to '_Z2sqf' in 'unit0.fatbin' (target: sm_80)\n\
               nvlink error   : Undefined reference to 'counter' in 'unit0.fatbin' (target: sm_80)\n\
               nvlink error   : Undefined reference to '_Z2sqf' in 'unit0.fatbin' (target: sm_90)\n\
               ptxas fatal   : Unresolved extern function '_Z4cubef'";
    assert_eq!(symbols::undefined_in_log(log), ["_Z2sqf", "counter", "_Z4cubef"]);
}

#[test]
fn explains_undefined_and_mismatched_symbols() {
    let main = symbols::read(".extern .func  (.param .b32 func_retval0) _Z6squared\n.extern .func _Z4cubef\n");
    let math = symbols::read(".visible .func  (.param .b32 func_retval0) _Z6squaref(\n");
    let units = [("src/main.rs:3", &main), ("kernels/math.cu", &math)];
    let p = symbols::explain_undefined(&["_Z6squared".into(), "_Z4cubef".into()], &units);
    assert_eq!(p[0].unit, 0);
    assert!(p[0].message.contains("mismatched `__device__` function `square`"), "{}", p[0].message);
    assert!(p[0].message.contains("`src/main.rs:3` declares and calls `square(double)`"), "{}", p[0].message);
    assert!(p[0].message.contains("`kernels/math.cu` defines `square(float)`"), "{}", p[0].message);
    assert!(p[1].message.starts_with("undefined `__device__` symbol `cube(float)`"), "{}", p[1].message);
}

#[test]
fn extern_variables_are_compared_with_their_definitions() {
    let main = symbols::read(".extern .global .align 4 .b8 calls[16];\n.extern .global .align 4 .u32 n;\n.extern .global .align 4 .b8 any[];\n");
    let math = symbols::read(
        ".visible .global .align 4 .u32 calls;\n.visible .global .align 4 .u32 n;\n.visible .global .align 4 .b8 any[64];\n",
    );
    let p = symbols::var_mismatches(&[("main.cu", &main), ("math.cu", &math)]);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].message.contains(
            "`calls`: `main.cu` declares it as `.b8[16]` (16 bytes) but `math.cu` defines it as `.u32` (4 bytes)"
        ),
        "{}",
        p[0].message
    );
    let float = symbols::read(".extern .global .align 4 .f32 n;\n");
    assert_eq!(symbols::var_mismatches(&[("main.cu", &float), ("math.cu", &math)]).len(), 1);
}

#[test]
fn lto_units_carry_lto_ir_and_the_lowest_ptx() {
    use super::nvcc::{unit_args, Mode};
    let archs = [crate::oracle::nvcc::Arch::parse("90").unwrap(), crate::oracle::nvcc::Arch::parse("80").unwrap()];
    let a = unit_args(Mode::Lto, &archs, &[], &["-DN=4".into()]);
    assert_eq!(
        a[..3],
        ["-dc", "-gencode=arch=compute_80,code=[lto_80,compute_80]", "-gencode=arch=compute_90,code=lto_90"]
    );
    assert_eq!(a.last().map(String::as_str), Some("-DN=4"));
    let r = unit_args(Mode::Rdc, &archs, &[], &[]);
    assert_eq!(r[..2], ["-fatbin", "-rdc=true"]);
    assert!(r.iter().any(|x| x == "-gencode=arch=compute_80,code=[sm_80,compute_80]"), "{r:?}");
}

/// The build cache is keyed by each unit's full text (source, its probes) and arguments, so a
/// change to any linked file misses; headers are recorded as dependencies of the entry.
#[test]
fn every_unit_and_header_is_in_the_cache_key() {
    use super::nvcc::{unit_key, Mode};
    let nvcc = crate::oracle::nvcc::Nvcc { path: "/x/bin/nvcc".into(), version: "13.0.88".into(), root: "/x".into() };
    let args = vec!["-fatbin".to_string()];
    let k = |mode, args: &[String], text: &str| unit_key(&nvcc, mode, args, text);
    let base = k(Mode::Rdc, &args, "__device__ float sq(float x) { return x * x; }");
    assert_ne!(base, k(Mode::Rdc, &args, "__device__ float sq(float x) { return x * x * 1; }"));
    assert_ne!(base, k(Mode::Lto, &args, "__device__ float sq(float x) { return x * x; }"));
    assert_ne!(
        base,
        k(Mode::Rdc, &["-fatbin".into(), "-DN=1".into()], "__device__ float sq(float x) { return x * x; }")
    );
    assert_eq!(base, k(Mode::Rdc, &args, "__device__ float sq(float x) { return x * x; }"));
}

/// A unit's cache entry records the headers it includes: changing one recompiles the unit. The
/// entries go to a directory of the test's own, not the user's cache. Needs nvcc: skipped with a
/// note without it, unless CUDA_EMBED_REQUIRE_TOOLKIT is set (scripts/with-cuda sets it), where a
/// missing nvcc fails.
#[test]
fn a_changed_header_of_a_linked_unit_recompiles_it() {
    use super::nvcc::{compile_unit_in, unit_args, unit_key, Mode};
    let nvcc = match crate::oracle::nvcc::find_nvcc().unwrap() {
        Ok(n) => n,
        Err(why) => {
            assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "toolkit required but {why}");
            eprintln!("a_changed_header_of_a_linked_unit_recompiles_it: skipped, {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let store = cuda_embed_source::cache::Store::new(dir.path().join("build"), "rdc");
    let header = dir.path().join("k.cuh");
    let text = "#include \"k.cuh\"\n__device__ float f(float x) { return x * K; }\n";
    let archs = [crate::oracle::nvcc::Arch::parse("80").unwrap()];
    let args = unit_args(Mode::Rdc, &archs, &[dir.path().to_path_buf()], &[]);
    std::fs::write(&header, "#define K 3.0f\n").unwrap();
    let first = compile_unit_in(&store, &nvcc, Mode::Rdc, &args, text, "k.cu").unwrap();
    assert!(first.deps.iter().any(|d| d.ends_with("k.cuh")), "{:?}", first.deps);
    // The entry is in the test's directory, and it is what a second compile returns.
    let key = unit_key(&nvcc, Mode::Rdc, &args, text);
    assert!(store.read(&key).is_some(), "no entry in {}", store.dir().display());
    assert_eq!(compile_unit_in(&store, &nvcc, Mode::Rdc, &args, text, "k.cu").unwrap().ptx, first.ptx);
    std::fs::write(&header, "#define K 5.0f\n").unwrap();
    let second = compile_unit_in(&store, &nvcc, Mode::Rdc, &args, text, "k.cu").unwrap();
    assert_ne!(first.ptx, second.ptx, "the header changed, the cached unit must not be reused");
    assert!(second.ptx.contains(".visible .func"), "{}", second.ptx);
}

#[test]
fn relocatable_flags_in_options_point_at_rdc() {
    let parse = |src: &str| syn::parse_str::<crate::front::input::Input>(src).unwrap();
    let e = super::misplaced_flags(&parse(r#""k", options = ["-rdc=true"]"#)).unwrap().to_string();
    assert!(e.contains("write `rdc = true` instead"), "{e}");
    let e = super::misplaced_flags(&parse(r#""k", options = ["-dlto"], rdc = true"#)).unwrap().to_string();
    assert!(e.contains("write `lto = true` instead"), "{e}");
    assert!(super::misplaced_flags(&parse(r#""k", options = ["-rdc=true"], rdc = true"#)).is_none());
    assert!(super::misplaced_flags(&parse(r#""k", options = ["-lineinfo"]"#)).is_none());
}

#[test]
fn link_options_parse_and_contradict() {
    let parse = |src: &str| syn::parse_str::<crate::front::input::Input>(src);
    let i = parse(r#""k", link = ["a.cu", "b.cu"], lto = true"#).unwrap();
    assert!(i.link.enabled() && i.link.lto());
    assert_eq!(i.link.files.len(), 2);
    assert!(!parse(r#""k", rdc = false"#).unwrap().link.enabled());
    assert!(parse(r#""k", link = []"#).is_err());
    assert!(parse(r#""k", rdc = 1"#).is_err());
    let e = parse(r#""k", rdc = true, rdc = true"#).err().unwrap().to_string();
    assert!(e.contains("`rdc` is given twice"), "{e}");
}

/// The variable's value is passed to the search, not set in the environment: other tests of
/// this process read `CUDA_EMBED_NVJITLINK` (through the memoized `find`) at the same time.
#[test]
fn an_unusable_nvjitlink_variable_is_an_error_naming_it() {
    use super::nvjitlink::search;
    let dir = tempfile::tempdir().unwrap();
    let e = search(std::path::Path::new("/nonexistent/lib/libnvrtc.so.13"), Some(dir.path().into())).unwrap_err();
    let e2 =
        search(std::path::Path::new("libnvrtc.so.13"), Some(dir.path().join("libnvJitLink.so.13").into())).unwrap_err();
    assert!(e.starts_with("CUDA_EMBED_NVJITLINK=") && e.contains("no libnvJitLink.so.13"), "{e}");
    assert!(e2.contains("cannot load"), "{e2}");
}
