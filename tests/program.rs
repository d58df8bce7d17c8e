//! Run-time programs (`cuda_embed::Program`): cache keys, NVRTC compilation and the disk cache run
//! without a GPU (NVRTC needs none; those tests skip when libnvrtc is absent unless
//! CUDA_EMBED_REQUIRE_TOOLKIT is set, as `scripts/with-cuda` does). Loading and launching need a
//! GPU: those tests are `#[ignore = "needs a CUDA GPU"]`.

use cuda_embed::{Arg, CudaContext, Error, LaunchConfig, Program};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

fn nvrtc_available() -> bool {
    if cuda_embed::nvrtc::is_available() {
        return true;
    }
    assert!(
        std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(),
        "CUDA_EMBED_REQUIRE_TOOLKIT is set but libnvrtc cannot be loaded (LD_LIBRARY_PATH?)"
    );
    eprintln!("libnvrtc not found: skipping");
    false
}

const AXPY: &str = r#"
template <class T> __global__ void axpy(T a, const T* x, T* y, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void fill(float* y, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = v;
}
"#;

fn axpy_program() -> Program {
    Program::new(AXPY)
        .name("axpy.cu")
        .define("BLOCK", 256)
        .name_expression("axpy<float>")
        .name_expression("axpy<double>")
}

// ---------------------------------------------------------------- cache keys (no NVRTC needed)

#[test]
fn same_inputs_same_key_every_input_changes_it() {
    let base = axpy_program();
    let key = base.cache_key(90);
    let (program, inputs) = key.split_once('-').expect("<program digest>-<inputs checksum>");
    assert_eq!((program.len(), inputs.len()), (64, 16), "sha-256 hex, then 64 bits in hex: {key}");
    assert_eq!(key, axpy_program().cache_key(90), "deterministic");
    let variants = [
        ("arch", base.cache_key(80)),
        ("define value", axpy_program().define("EXTRA", 1).cache_key(90)),
        (
            "define",
            Program::new(AXPY)
                .name("axpy.cu")
                .define("BLOCK", 128)
                .name_expression("axpy<float>")
                .name_expression("axpy<double>")
                .cache_key(90),
        ),
        ("option", base.clone().option("--use_fast_math").cache_key(90)),
        ("std", base.clone().std("c++17").cache_key(90)),
        ("name", base.clone().name("other.cu").cache_key(90)),
        ("name expression", base.clone().name_expression("axpy<int>").cache_key(90)),
        ("source", Program::new(format!("{AXPY}\n")).name("axpy.cu").define("BLOCK", 256).cache_key(90)),
        ("header", base.clone().header("a.cuh", "").cache_key(90)),
    ];
    for (what, other) in &variants {
        assert_ne!(&key, other, "changing the {what} must change the key");
    }
    // Header names and bytes both count; field boundaries are not ambiguous.
    let h = |n: &str, c: &str| Program::new("").header(n, c).cache_key(90);
    assert_ne!(h("a.cuh", "x"), h("a.cuh", "y"));
    assert_ne!(h("a.cuh", "x"), h("b.cuh", "x"));
    assert_ne!(h("a.cuhx", ""), h("a.cuh", "x"));
    assert_ne!(
        Program::new("").options(["-DA", "-DB"]).cache_key(90),
        Program::new("").options(["-DA-DB"]).cache_key(90)
    );
}

#[test]
fn include_dir_header_bytes_are_in_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("detail");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(dir.path().join("tile.cuh"), "#include \"detail/impl.cuh\"\n#define TILE 16\n").unwrap();
    // Reached relative to tile.cuh, not through the include directory.
    std::fs::write(sub.join("impl.cuh"), "#include \"more.cuh\"\n").unwrap();
    std::fs::write(sub.join("more.cuh"), "#define MORE 1\n").unwrap();
    let program = || Program::new("#include \"tile.cuh\"\n__global__ void k() {}").include_dir(dir.path());
    let k0 = program().cache_key(90);
    assert_eq!(k0, program().cache_key(90));

    std::fs::write(dir.path().join("tile.cuh"), "#include \"detail/impl.cuh\"\n#define TILE 32\n").unwrap();
    let k1 = program().cache_key(90);
    assert_ne!(k0, k1, "editing the included header changes the key");

    std::fs::write(sub.join("more.cuh"), "#define MORE 2\n").unwrap();
    let k2 = program().cache_key(90);
    assert_ne!(k1, k2, "editing a header included by a header changes the key");

    // `-I` spelled as an option counts too, and an unrelated file in the directory does not.
    let with_i = || Program::new("#include <tile.cuh>\n").option(format!("-I{}", dir.path().display()));
    let k3 = with_i().cache_key(90);
    std::fs::write(dir.path().join("unrelated.cuh"), "junk").unwrap();
    assert_eq!(k3, with_i().cache_key(90));
    std::fs::write(sub.join("more.cuh"), "#define MORE 3\n").unwrap();
    assert_ne!(k3, with_i().cache_key(90));

    // A header that appears later where an include was not found changes the key.
    let missing = || Program::new("#include \"later.cuh\"\n").include_dir(dir.path());
    let k4 = missing().cache_key(90);
    std::fs::write(dir.path().join("later.cuh"), "").unwrap();
    assert_ne!(k4, missing().cache_key(90));
}

#[test]
fn include_cycles_terminate() {
    // Two in-memory headers including each other, with and without include guards.
    for guard in ["#pragma once\n", ""] {
        let p = Program::new("#include \"a.cuh\"\n")
            .header("a.cuh", format!("{guard}#include \"b.cuh\"\n"))
            .header("b.cuh", format!("{guard}#include \"a.cuh\"\n"));
        assert_eq!(p.cache_key(90), p.cache_key(90));
    }
    // And two files on disk, one including itself too.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.cuh"), "#include \"b.cuh\"\n#include \"a.cuh\"\n").unwrap();
    std::fs::write(dir.path().join("b.cuh"), "#include \"a.cuh\"\n").unwrap();
    let p = Program::new("#include \"a.cuh\"\n").include_dir(dir.path());
    let k = p.cache_key(90);
    std::fs::write(dir.path().join("b.cuh"), "#include \"a.cuh\"\n// edited\n").unwrap();
    assert_ne!(k, p.cache_key(90), "files inside the cycle are still hashed");
}

#[test]
fn options_are_passed_as_written() {
    let p = Program::new("").define("BLOCK", 256).std("c++17").option("--use_fast_math").include_dir("kernels");
    assert_eq!(p.nvrtc_options(), ["-DBLOCK=256", "--std=c++17", "--use_fast_math", "--include-path=kernels"]);
}

#[test]
fn argument_errors_name_index_sizes_and_count() {
    let count = Error::Arguments {
        origin: "program `p.cu`".into(),
        kernel: "k".into(),
        expected: vec![4, 8, 8, 4],
        given: vec![4, 8, 8],
    };
    let msg = count.to_string();
    assert!(
        msg.contains("`k`") && msg.contains("p.cu") && msg.contains("4 parameter(s)") && msg.contains("3 argument(s)"),
        "{msg}"
    );
    let size = Error::Arguments {
        origin: "program `p.cu`".into(),
        kernel: "k".into(),
        expected: vec![4, 8, 8, 4],
        given: vec![4, 8, 8, 8],
    };
    let msg = size.to_string();
    assert!(msg.contains("argument 3") && msg.contains("is 8 bytes") && msg.contains("is 4 bytes"), "{msg}");
    assert_eq!(Arg::value(&1u8).size(), 1);
    assert_eq!(Arg::value(&1.0f64).size(), 8);
    assert_eq!(Arg::value(&cuda_embed::Float4::default()).size(), 16);
}

// ---------------------------------------------------------------- NVRTC, no GPU

#[test]
fn compiles_templates_and_hits_the_disk_cache() {
    if !nvrtc_available() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let p = axpy_program().name_expression("fill").cache_dir(cache.path());
    let first = p.compile(80).unwrap();
    assert!(!first.from_cache);
    assert_eq!(first.symbols, ["_Z4axpyIfEvT_PKS0_PS0_i", "_Z4axpyIdEvT_PKS0_PS0_i", "fill"]);
    assert_eq!(&first.cubin[..4], b"\x7fELF");
    let file = first.cache_file.clone().unwrap();
    assert!(file.starts_with(cache.path().join("nvrtc")) && file.ends_with(format!("{}.cubin", p.cache_key(80))));
    let second = p.compile(80).unwrap();
    assert!(second.from_cache && second.cubin == first.cubin && second.symbols == first.symbols);
    // A define changes the code, so it is another entry.
    assert!(!p.clone().define("EXTRA", 1).compile(80).unwrap().from_cache);
    assert_eq!(std::fs::read_dir(cache.path().join("nvrtc")).unwrap().count(), 2);
}

#[test]
fn headers_in_memory_and_on_disk_compile() {
    if !nvrtc_available() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("scale.cuh"), "#pragma once\n#include \"common.cuh\"\n#define SCALE (2 * ONE)\n")
        .unwrap();
    let p = Program::new("#include \"scale.cuh\"\nextern \"C\" __global__ void k(int* x) { *x = SCALE; }")
        .header("common.cuh", "#pragma once\n#include \"cycle.cuh\"\n#define ONE 1\n")
        .header("cycle.cuh", "#pragma once\n#include \"common.cuh\"\n")
        .include_dir(dir.path())
        .cache_dir(cache.path());
    let c = p.compile(80).unwrap();
    assert!(!c.from_cache);
    assert!(p.compile(80).unwrap().from_cache);
    // Editing the header on disk recompiles.
    std::fs::write(dir.path().join("scale.cuh"), "#pragma once\n#include \"common.cuh\"\n#define SCALE (3 * ONE)\n")
        .unwrap();
    assert!(!p.compile(80).unwrap().from_cache);
}

#[test]
fn syntax_error_carries_the_nvrtc_log() {
    if !nvrtc_available() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let err = Program::new("__global__ void k( { }").name("broken.cu").cache_dir(cache.path()).compile(80).unwrap_err();
    assert!(matches!(&err, Error::Compile { origin, arch: 80, .. } if origin == "program `broken.cu`"), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("broken.cu(1)") && msg.contains("error"), "{msg}");
    assert!(
        !cache.path().join("nvrtc").exists() || std::fs::read_dir(cache.path().join("nvrtc")).unwrap().count() == 0
    );
}

#[test]
fn unknown_name_expression_is_named() {
    if !nvrtc_available() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let err = axpy_program().name_expression("axpyy<float>").cache_dir(cache.path()).compile(80).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Compile { .. }), "{msg}");
    assert!(msg.contains("name expression(s) `axpyy<float>` name no __global__ function"), "{msg}");
}

const CPU_CHILD: &str = "CUDA_EMBED_TEST_PROGRAM_CPU_CHILD";

/// Compiles in this process and prints whether NVRTC ran; spawned by `disk_cache_hit_in_a_second_process`.
#[test]
fn compile_child() {
    if std::env::var_os(CPU_CHILD).is_none() {
        return;
    }
    let c = axpy_program().compile(80).unwrap();
    println!("FROM_CACHE={} FILE={}", c.from_cache, c.cache_file.unwrap().display());
}

fn run_child(test: &str, marker: &str, cache: &Path, extra: &[&str]) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .args(extra)
        .env(marker, "1")
        .env("CUDA_EMBED_CACHE_DIR", cache)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{text}");
    text
}

#[test]
fn disk_cache_hit_in_a_second_process() {
    if !nvrtc_available() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let first = run_child("compile_child", CPU_CHILD, cache.path(), &[]);
    assert!(first.contains("FROM_CACHE=false"), "{first}");
    let second = run_child("compile_child", CPU_CHILD, cache.path(), &[]);
    assert!(second.contains("FROM_CACHE=true"), "{second}");
    assert_eq!(std::fs::read_dir(cache.path().join("nvrtc")).unwrap().count(), 1);
}

// ---------------------------------------------------------------- GPU

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("these tests need a CUDA GPU")
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn template_instances_compute_the_right_result() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let cache = tempfile::tempdir().unwrap();
    let module = axpy_program().cache_dir(cache.path()).load(&ctx).unwrap();
    let (major, minor) = ctx.compute_capability().unwrap();
    assert_eq!(module.arch(), (major * 10 + minor) as u32);
    assert!(!module.from_cache());
    let n = 1000i32;
    // BLOCK is 256: the block size must match the define.
    let cfg = LaunchConfig { grid_dim: ((n as u32).div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };

    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = stream.clone_htod(&xs).unwrap();
    let mut y = stream.clone_htod(&vec![1.0f32; n as usize]).unwrap();
    let k = module.kernel("axpy<float>").unwrap();
    assert_eq!(k.params().map(|p| p.iter().map(|&(_, s)| s).collect::<Vec<_>>()), Some(vec![4, 8, 8, 4]));
    unsafe {
        k.launch(&stream, cfg, &mut [Arg::value(&2.0f32), Arg::slice(&x), Arg::slice_mut(&mut y), Arg::value(&n)])
    }
    .unwrap();
    let out = stream.clone_dtoh(&y).unwrap();
    assert!(out.iter().zip(&xs).all(|(o, x)| *o == 2.0 * x + 1.0));

    let xd: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
    let x = stream.clone_htod(&xd).unwrap();
    let mut y = stream.alloc_zeros::<f64>(n as usize).unwrap();
    let k = module.kernel("axpy<double>").unwrap();
    unsafe {
        k.launch(&stream, cfg, &mut [Arg::value(&3.0f64), Arg::slice(&x), Arg::slice_mut(&mut y), Arg::value(&n)])
    }
    .unwrap();
    let out = stream.clone_dtoh(&y).unwrap();
    assert!(out.iter().zip(&xd).all(|(o, x)| *o == 3.0 * x));

    // An extern "C" kernel by its plain name, on a view.
    let fill = module.kernel("fill").unwrap();
    let mut z = stream.alloc_zeros::<f32>(30).unwrap();
    let mut zv = z.slice_mut(10..20);
    let err =
        unsafe { fill.launch(&stream, cfg, &mut [Arg::slice_mut(&mut zv), Arg::value(&7.0f64), Arg::value(&10)]) }
            .unwrap_err();
    assert!(matches!(err, Error::Arguments { .. }), "fill takes a float, not a double: {err}");
    unsafe { fill.launch(&stream, cfg, &mut [Arg::slice_mut(&mut zv), Arg::value(&7.0f32), Arg::value(&10)]).unwrap() };
    let out = stream.clone_dtoh(&z).unwrap();
    assert_eq!(out.iter().filter(|&&v| v == 7.0).count(), 10);
    assert_eq!((out[9], out[10], out[19], out[20]), (0.0, 7.0, 7.0, 0.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn argument_count_and_size_mismatches_are_errors_and_nothing_runs() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let cache = tempfile::tempdir().unwrap();
    let module = axpy_program().cache_dir(cache.path()).load(&ctx).unwrap();
    let k = module.kernel("axpy<float>").unwrap();
    let x = stream.clone_htod(&[1.0f32; 4]).unwrap();
    let mut y = stream.clone_htod(&[5.0f32; 4]).unwrap();
    let cfg = LaunchConfig::for_num_elems(4);

    let err = unsafe { k.launch(&stream, cfg, &mut [Arg::value(&2.0f32), Arg::slice(&x), Arg::slice_mut(&mut y)]) }
        .unwrap_err();
    match &err {
        Error::Arguments { kernel, expected, given, .. } => {
            assert_eq!(kernel, "axpy<float>");
            assert_eq!((expected.len(), given.len()), (4, 3));
        }
        other => panic!("expected Error::Arguments, got {other}"),
    }
    assert!(err.to_string().contains("4 parameter(s)"), "{err}");

    let n = 4usize; // size_t where the kernel takes int
    let err = unsafe {
        k.launch(&stream, cfg, &mut [Arg::value(&2.0f32), Arg::slice(&x), Arg::slice_mut(&mut y), Arg::value(&n)])
    }
    .unwrap_err();
    assert!(matches!(&err, Error::Arguments { given, .. } if given == &[4, 8, 8, 8]), "{err}");
    assert!(err.to_string().contains("argument 3"), "{err}");

    stream.synchronize().unwrap();
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [5.0; 4], "no launch happened");

    // Launch limits are checked before the driver too.
    let too_big = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (2048, 1, 1), shared_mem_bytes: 0 };
    let n = 4i32;
    let err = unsafe {
        k.launch(&stream, too_big, &mut [Arg::value(&2.0f32), Arg::slice(&x), Arg::slice_mut(&mut y), Arg::value(&n)])
    }
    .unwrap_err();
    assert!(matches!(err, Error::Launch { .. }) && err.to_string().contains("threads per block"), "{err}");

    // An unknown kernel lists the known ones.
    let err = module.kernel("axpy<int>").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::UnknownKernel { .. }), "{msg}");
    assert!(msg.contains("axpy<float>") && msg.contains("axpy<double>") && msg.contains("fill"), "{msg}");
}

const GPU_CHILD: &str = "CUDA_EMBED_TEST_PROGRAM_GPU_CHILD";

/// Loads and runs the program in this process and reports where its code came from; spawned by
/// `load_hits_the_disk_cache_in_a_second_process`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn load_child() {
    if std::env::var_os(GPU_CHILD).is_none() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = axpy_program().load(&ctx).unwrap();
    let k = module.kernel("axpy<float>").unwrap();
    let x = stream.clone_htod(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut y = stream.clone_htod(&[0.5f32; 3]).unwrap();
    let n = 3i32;
    unsafe {
        k.launch(
            &stream,
            LaunchConfig::for_num_elems(3),
            &mut [Arg::value(&2.0f32), Arg::slice(&x), Arg::slice_mut(&mut y), Arg::value(&n)],
        )
    }
    .unwrap();
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [2.5, 4.5, 6.5]);
    println!("FROM_CACHE={} FILE={}", module.from_cache(), module.cache_file().unwrap().display());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn load_hits_the_disk_cache_in_a_second_process() {
    let cache = tempfile::tempdir().unwrap();
    let first = run_child("load_child", GPU_CHILD, cache.path(), &["--include-ignored"]);
    assert!(first.contains("FROM_CACHE=false"), "{first}");
    let files: Vec<_> = std::fs::read_dir(cache.path().join("nvrtc")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "one cubin cached: {files:?}");
    // A rewrite renames a new file into place (a new inode); a hit only marks the entry as used
    // (its modification time, for least-recently-used eviction).
    let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&files[0]).unwrap());
    assert!(first.contains(&format!("FILE={}", files[0].display())), "{first}");

    let second = run_child("load_child", GPU_CHILD, cache.path(), &["--include-ignored"]);
    assert!(second.contains("FROM_CACHE=true"), "{second}");
    assert!(second.contains(&format!("FILE={}", files[0].display())), "{second}");
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&files[0]).unwrap()),
        inode,
        "the cache file was reused, not rewritten"
    );
    assert_eq!(std::fs::read_dir(cache.path().join("nvrtc")).unwrap().count(), 1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_taken_with_a_signature_check_every_argument_type() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let cache = tempfile::tempdir().unwrap();
    let module = axpy_program().cache_dir(cache.path()).load(&ctx).unwrap();
    let k = module.kernel_with_signature("axpy<float>", "float a, const float* x, float* y, int n").unwrap();
    let x = stream.clone_htod(&[1.0f32; 4]).unwrap();
    let xi = stream.clone_htod(&[1i32; 4]).unwrap();
    let mut y = stream.clone_htod(&[5.0f32; 4]).unwrap();
    let mut y2 = stream.clone_htod(&[5.0f32; 4]).unwrap();
    let (a, a64, n, nu) = (2.0f32, 2.0f64, 4i32, 4u32);
    let cfg = LaunchConfig::for_num_elems(4);
    let cases: Vec<(Vec<Arg<'_>>, &str)> = vec![
        (
            vec![Arg::value(&a), Arg::slice(&xi), Arg::slice(&x), Arg::value(&n)],
            "parameter `x` (`const float* x`) points to `f32` elements but the buffer holds `i32`",
        ),
        (vec![Arg::value(&a), Arg::slice(&x), Arg::slice(&x), Arg::value(&n)], "may write through parameter `y`"),
        (
            vec![Arg::value(&a64), Arg::slice(&x), Arg::slice(&x), Arg::value(&n)],
            "takes `f32` but the argument is `f64`",
        ),
        (
            vec![Arg::value(&a), Arg::slice(&x), Arg::slice_mut(&mut y2), Arg::value(&nu)],
            "parameter `n` (`int n`) takes `i32` but the argument is `u32`",
        ),
        (vec![Arg::slice(&x), Arg::slice(&x), Arg::slice(&x), Arg::value(&n)], "`float a`) is a value but a buffer"),
    ];
    for (mut args, want) in cases {
        let err = unsafe { k.launch(&stream, cfg, &mut args) }.unwrap_err();
        assert!(matches!(err, Error::Signature { .. }) && err.to_string().contains(want), "{err}\nwants: {want}");
    }
    // Nothing ran; the right arguments do.
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [5.0; 4]);
    assert_eq!(stream.clone_dtoh(&y2).unwrap(), [5.0; 4]);
    unsafe { k.launch(&stream, cfg, &mut [Arg::value(&a), Arg::slice(&x), Arg::slice_mut(&mut y), Arg::value(&n)]) }
        .unwrap();
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [7.0; 4]);
    // Signatures that cannot be this kernel's are refused when the kernel is taken.
    let e = module.kernel_with_signature("axpy<float>", "float a, const float* x, float* y").unwrap_err();
    assert!(e.to_string().contains("3 parameter(s) but the compiled kernel takes 4"), "{e}");
    let e = module.kernel_with_signature("axpy<float>", "double a, const float* x, float* y, int n").unwrap_err();
    assert!(e.to_string().contains("parameter `a` (`double a`) is 8 bytes but the compiled kernel's is 4"), "{e}");
    let e = module.kernel_with_signature("axpy<float>", "float& a, const float* x, float* y, int n").unwrap_err();
    assert!(e.to_string().contains("reference"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_checked_against_their_own_source() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let cache = tempfile::tempdir().unwrap();
    let module = axpy_program().cache_dir(cache.path()).load(&ctx).unwrap();
    let fill = module.kernel_checked("fill").unwrap(); // `float* y, float v, int n` from AXPY
    let mut y = stream.alloc_zeros::<f32>(4).unwrap();
    let cfg = LaunchConfig::for_num_elems(4);
    let err = unsafe { fill.launch(&stream, cfg, &mut [Arg::slice_mut(&mut y), Arg::value(&7.0f64), Arg::value(&4)]) }
        .unwrap_err();
    assert!(err.to_string().contains("parameter `v` (`float v`) takes `f32` but the argument is `f64`"), "{err}");
    unsafe { fill.launch(&stream, cfg, &mut [Arg::slice_mut(&mut y), Arg::value(&7.0f32), Arg::value(&4)]).unwrap() };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [7.0; 4]);
    let e = module.kernel_checked("axpy<float>").unwrap_err();
    assert!(e.to_string().contains("template instance"), "{e}");
}
