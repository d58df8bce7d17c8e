//! The host half of the CUTLASS GEMM (examples/cutlass/params.rs) against CUTLASS's own host code:
//! tests/cutlass/harness.cu (ours) runs CUTLASS 4.2's `to_underlying_arguments` and
//! `get_grid_shape` for four shapes, with a stand-in `cuTensorMapEncodeTiled` that prints its
//! arguments, and prints the grid and the bytes of `Params` (of the plain GEMM and of the fused
//! bias + GELU one). The test (feature `cutlass`) builds and runs it with nvcc against the
//! installed CUTLASS headers (`scripts/with-cuda --with-cutlass`), so nothing CUTLASS computes is
//! kept in the repository. No GPU needed; without the headers the tests say so and pass, unless
//! CUDA_EMBED_REQUIRE_TOOLKIT is set.

#[path = "../examples/cutlass/params.rs"]
#[allow(dead_code)]
mod params;

use params::{Problem, TmaArgs};

struct Case {
    /// The fused bias + GELU kernel's Params (else the plain GEMM's).
    bias: bool,
    problem: Problem,
    encodes: Vec<String>,
    grid: String,
    bytes: Vec<Option<u8>>,
}

/// What the harness prints, built and run once per test process (cached in the test target's
/// temporary folder by the harness's and the headers' contents); `None` without CUTLASS headers.
fn reference() -> Option<&'static str> {
    static TEXT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let required = std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_some();
        let Some(cutlass) = std::env::var_os("CUDA_EMBED_CUTLASS_DIR").map(std::path::PathBuf::from) else {
            assert!(!required, "CUDA_EMBED_CUTLASS_DIR is not set: run under scripts/with-cuda --with-cutlass");
            eprintln!("skipped: no CUTLASS headers (run under scripts/with-cuda --with-cutlass)");
            return None;
        };
        let root = std::path::PathBuf::from(
            std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into()),
        );
        let harness = root.join("tests/cutlass/harness.cu");
        let mut key = std::collections::hash_map::DefaultHasher::new();
        for f in [harness.clone(), root.join("examples/cutlass/gemm_sm90.cuh"), cutlass.join("cutlass/version.h")] {
            std::hash::Hash::hash(&std::fs::read(&f).unwrap_or_default(), &mut key);
        }
        std::hash::Hash::hash(&cutlass, &mut key);
        let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cutlass_params");
        std::fs::create_dir_all(&dir).unwrap();
        let cached = dir.join(format!("{:016x}.txt", std::hash::Hasher::finish(&key)));
        if let Ok(text) = std::fs::read_to_string(&cached) {
            return Some(text);
        }
        let nvcc = std::env::var_os("NVCC")
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::var_os("CUDA_EMBED_TOOLKIT").map(|t| std::path::PathBuf::from(t).join("bin/nvcc")))
            .unwrap_or_else(|| "nvcc".into());
        let exe = dir.join(format!("harness-{}", std::process::id()));
        let mut command = std::process::Command::new(&nvcc);
        command.args(["-O0", "-std=c++17", "-arch=sm_90a", "--expt-relaxed-constexpr"]).arg("-I").arg(&cutlass);
        // The toolkit's static CUDA runtime, where a wheel toolkit keeps it (nvcc's own
        // configuration finds a system toolkit's).
        let lib = nvcc.parent().and_then(|bin| bin.parent()).map(|root| root.join("lib"));
        if let Some(lib) = lib.filter(|l| l.join("libcudart_static.a").exists()) {
            command.arg("-L").arg(lib);
        }
        let built = command
            .arg(&harness)
            .arg("-o")
            .arg(&exe)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", nvcc.display()));
        assert!(built.status.success(), "nvcc failed on the harness:\n{}", String::from_utf8_lossy(&built.stderr));
        let ran = std::process::Command::new(&exe).output().expect("the harness runs");
        let _ = std::fs::remove_file(&exe);
        assert!(ran.status.success(), "the harness failed:\n{}", String::from_utf8_lossy(&ran.stderr));
        // Each distinct line once per shape (A and B coincide for square shapes).
        let mut text = String::new();
        let mut seen = std::collections::HashSet::new();
        for line in String::from_utf8(ran.stdout).unwrap().lines() {
            if line.starts_with("shape") {
                seen.clear();
            }
            if seen.insert(line.to_string()) {
                text.push_str(line);
                text.push('\n');
            }
        }
        let tmp = dir.join(format!("{}.tmp", std::process::id()));
        std::fs::write(&tmp, &text).unwrap();
        let _ = std::fs::rename(&tmp, &cached);
        Some(text)
    })
    .as_deref()
}

fn cases() -> Vec<Case> {
    let Some(text) = reference() else { return Vec::new() };
    let mut out: Vec<Case> = Vec::new();
    let mut bias = false;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first().copied() {
            Some("params") => {
                bias = words[1] == "bias_gelu";
                assert_eq!(words[2].parse::<usize>().unwrap(), params::PARAMS_BYTES, "sizeof(Params)");
                assert_eq!(words[5].parse::<u32>().unwrap(), params::SHARED_BYTES, "SharedStorageSize");
                assert_eq!(words[7].parse::<u32>().unwrap(), params::THREADS, "MaxThreadsPerBlock");
            }
            Some("shape") => {
                let n = |i: usize| words[i].parse::<u32>().unwrap();
                let f = |i: usize| words[i].parse::<f32>().unwrap();
                let problem = Problem {
                    m: n(1),
                    n: n(2),
                    k: n(3),
                    sm_count: n(4),
                    alpha: f(5),
                    beta: f(6),
                    swizzle: n(7),
                    a: 0x70_0000_0000,
                    b: 0x71_0000_0000,
                    c: 0x72_0000_0000,
                    d: 0x73_0000_0000,
                };
                out.push(Case { bias, problem, encodes: Vec::new(), grid: String::new(), bytes: Vec::new() });
            }
            Some("encode") => out.last_mut().unwrap().encodes.push(line.to_string()),
            Some("grid") => out.last_mut().unwrap().grid = line.to_string(),
            Some("bytes") => {
                let hex = words[1].as_bytes();
                out.last_mut().unwrap().bytes = hex
                    .chunks(2)
                    .map(|c| std::str::from_utf8(c).ok().and_then(|s| u8::from_str_radix(s, 16).ok()))
                    .collect();
            }
            _ => {}
        }
    }
    out
}

/// An encode line as the harness prints it.
fn encode_line(t: &TmaArgs) -> String {
    let list = |v: &[u64]| v.iter().map(|x| format!("{x},")).collect::<String>();
    format!(
        "encode dt={} rank=3 addr={:#x} dims={} strides={} box={} es=1,1,1, il=0 sw={} l2={} oob=0",
        t.data_type,
        t.address,
        list(&t.dims),
        list(&t.strides),
        list(&t.boxes.map(u64::from)),
        t.swizzle,
        params::L2_PROMOTION
    )
}

#[test]
fn encode_arguments_match_cutlass() {
    let cases = cases();
    if reference().is_none() {
        return;
    }
    assert_eq!(cases.len(), 16);
    for case in &cases {
        let ours: Vec<String> = params::tma_args(&case.problem).iter().map(encode_line).collect();
        // The fixture lists each distinct call once per shape (A and B coincide for square shapes).
        for line in &case.encodes {
            assert!(ours.contains(line), "{:?}: CUTLASS encodes `{line}`, we encode {ours:#?}", case.problem);
        }
        for line in &ours {
            assert!(case.encodes.contains(line), "{:?}: we encode `{line}`, CUTLASS does not", case.problem);
        }
    }
}

#[test]
fn grid_matches_cutlass() {
    for case in cases() {
        let (x, y, z) = params::grid(&case.problem);
        assert_eq!(format!("grid {x} {y} {z}"), case.grid, "{:?}", case.problem);
    }
}

/// Padding that holds stale stack bytes in CUTLASS's `Params` (the same in both of the harness's
/// runs, so not masked): the 4 bytes after beta and after alpha (each is followed by an 8-aligned
/// pointer), the 6 after the bias's default value (bf16, followed by an 8-aligned stride) and the
/// byte after each epilogue descriptor.
const STALE_PADDING: &[(usize, usize)] = &[(772, 4), (804, 4), (842, 6), (1024, 1), (1280, 1)];

const BIAS: u64 = 0x74_0000_0000;

#[test]
fn every_params_byte_matches_cutlass() {
    for case in cases() {
        let fields = params::fields(case.bias);
        assert_eq!(case.bytes.len(), params::PARAMS_BYTES);
        let descriptors = [[0xEE; 128]; 4];
        let ours = if case.bias {
            params::params_bias_gelu(&case.problem, &descriptors, BIAS)
        } else {
            params::params(&case.problem, &descriptors)
        };
        for (i, theirs) in case.bytes.iter().enumerate() {
            if STALE_PADDING.iter().any(|&(at, len)| (at..at + len).contains(&i)) {
                assert!(!fields.iter().any(|&(at, len)| (at..at + len).contains(&i)), "byte {i} is padding");
                continue;
            }
            let written = fields.iter().any(|&(at, len)| (at..at + len).contains(&i));
            match theirs {
                // A byte CUTLASS sets is one we write, with its value.
                Some(v) if *v != 0 => {
                    assert!(
                        written,
                        "{:?}: byte {i} is {v:#04x} in CUTLASS's Params and not written here",
                        case.problem
                    );
                    assert_eq!(ours[i], *v, "{:?}: byte {i}", case.problem);
                }
                Some(_) => assert_eq!(ours[i], 0, "{:?}: byte {i} is 0 in CUTLASS's Params", case.problem),
                // Padding that differed between the runs, or a descriptor byte (the stand-in
                // encoder's 0xEE): ours is zero or the descriptor we were given.
                None => assert!(ours[i] == 0 || (written && ours[i] == 0xEE), "{:?}: byte {i}", case.problem),
            }
        }
    }
}
