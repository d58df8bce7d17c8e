//! The front end never panics or hangs, whatever the input: the lexer, the signature reader, the
//! struct reader, the include scanner (both layers) and the PTX reader get many generated and
//! mutated inputs — seeded and reproducible — each within a time bound.
//!
//! A failure names the target, the seed and the input (written to the target's tmp dir too), so
//! it can be replayed. `ROBUSTNESS_CASES=N` changes the number of inputs per target (default 10000);
//! `ROBUSTNESS_SEED=S` the seed. For open-ended searching, `macros/core/fuzz/` has cargo-fuzz
//! targets for the same functions.

use cuda_embed_macros_core::{front::includes, lex, oracle::ptx, oracle::structs, signature};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// How long one input may run before the test calls it a hang (not a speed check: see `run`).
const HANG_GUARD: Duration = Duration::from_secs(120);

/// A small, fast, seeded generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Realistic CUDA sources to mutate: kernels, templates, globals, structs, the preprocessor,
/// comments, strings and raw strings.
const CUDA_SEEDS: &[&str] = &[
    r#"extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }"#,
    r#"#include "common.cuh"
#include <cuda_fp16.h>
#define BLOCK 256
#define FUSED(name, T) extern "C" __global__ void name##_k(const T* x, T* y) { y[0] = x[0]; }
FUSED(f32, float)
#ifdef USE_DOUBLE
typedef double real;
#else
typedef float real;
#endif
__constant__ real coeffs[BLOCK / 2][4];
namespace ns { namespace inner { __device__ unsigned long long calls; } }
template <typename T, int N = 4>
__global__ void __launch_bounds__(256, 2) scale(T* __restrict__ x, T a, size_t n) { }
struct Params { float scale; int n; double d[3]; };
__global__ void with_struct(Params p, const __half2* h, cudaTextureObject_t t) { }
"#,
    r#"/* a comment with __global__ void fake(int x) */ // another: __global__ void g();
const char* s = "__global__ void not_a_kernel(int)"; char c = '\'';
auto r = R"delim(__global__ void raw(int))delim";
__global__ void real_one(int** pp, const float4 v, unsigned char u, long long ll) { }
template <> __global__ void scale<float, 8>(float* x, float a, size_t n) { }
static __device__ __forceinline__ int helper(int x) { return x; }
__managed__ int counter = 0;
__device__ float* scratch;
extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(float (*arr)[4], int n) { }
"#,
    "#if defined(A) && (B > 3)\n#elif C\n#endif\n#line 10 \"x.cu\"\n#pragma unroll\n\\\n__global__ void cont\\\ninued(int x) {}\n",
];

/// PTX as nvcc writes it, to mutate for the PTX reader.
const PTX_SEEDS: &[&str] = &[r#".version 8.5
.target sm_90
.address_size 64
	// .globl	saxpy
.visible .entry saxpy(
	.param .f32 saxpy_param_0,
	.param .u64 .ptr .align 1 saxpy_param_1,
	.param .u64 saxpy_param_2,
	.param .u32 saxpy_param_3
)
.maxntid 256, 1, 1
{
	ret;
}
.visible .entry _ZN2ns5scaleIfEEvPT_S1_m(
	.param .align 16 .b8 _ZN2ns5scaleIfEEvPT_S1_m_param_0[24],
	.param .u64 _ZN2ns5scaleIfEEvPT_S1_m_param_1
)
{
	ret;
}
.visible .global .align 4 .b8 coeffs[64];
.entry empty()
{
	ret;
}
"#];

/// Fragments that stress tokenisation and nesting.
const FRAGMENTS: &[&str] = &[
    "\"",
    "'",
    "/*",
    "*/",
    "//",
    "\\\n",
    "\\",
    "\n",
    "#",
    "#define ",
    "#include ",
    "#if ",
    "#ifdef X\n",
    "#endif\n",
    "#else\n",
    "<",
    ">",
    "<<",
    ">>",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ",",
    ";",
    "::",
    ":",
    "*",
    "&",
    "&&",
    "...",
    "=",
    "__global__",
    "__device__",
    "__constant__",
    "__managed__",
    "template <",
    "typename",
    "extern \"C\"",
    "R\"(",
    ")\"",
    "R\"x(",
    "void",
    "struct",
    "namespace",
    "const",
    "unsigned",
    "long",
    "__launch_bounds__(",
    "operator",
    "99999999999999999999999",
    "0x",
    "0xFFFFFFFFFFFFFFFF",
    "1e309",
    "-",
    "ü",
    "𝕏",
    "\u{feff}",
    "\0",
    "\t",
    " ",
    ".param",
    ".entry",
    ".visible",
    ".u64",
    ".align",
    "[",
    "_param_",
    ".ptr",
    "ret;",
];

/// One mutated or generated input.
fn input(rng: &mut Rng, seeds: &[&str]) -> String {
    match rng.below(4) {
        // Token soup.
        0 => (0..rng.below(80)).map(|_| rng.pick(FRAGMENTS)).collect(),
        // Two seeds spliced at random byte offsets.
        1 => {
            let (a, b) = (seeds[rng.below(seeds.len())].as_bytes(), seeds[rng.below(seeds.len())].as_bytes());
            let (i, j) = (rng.below(a.len() + 1), rng.below(b.len() + 1));
            String::from_utf8_lossy(&[&a[..i], &b[j..]].concat()).into_owned()
        }
        // A seed with byte-level mutations: flips, inserted fragments, deletions, duplications.
        _ => {
            let mut bytes = seeds[rng.below(seeds.len())].as_bytes().to_vec();
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(bytes.len() + 1);
                match rng.below(5) {
                    0 if at < bytes.len() => bytes[at] = rng.next() as u8,
                    1 => {
                        let f = rng.pick(FRAGMENTS).as_bytes().to_vec();
                        bytes.splice(at..at, f);
                    }
                    2 => {
                        let end = (at + rng.below(40)).min(bytes.len());
                        bytes.drain(at..end);
                    }
                    3 => {
                        let end = (at + rng.below(60)).min(bytes.len());
                        let copy = bytes[at..end].to_vec();
                        bytes.splice(at..at, copy);
                    }
                    _ => bytes.truncate(at),
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
    }
}

/// Headers for the include scanner: guarded, unguarded, including each other and missing ones.
fn header_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let files = [
        ("common.cuh", "#pragma once\n#include \"other.cuh\"\n#define COMMON 1\n"),
        ("other.cuh", "#ifndef OTHER\n#define OTHER\n#include \"common.cuh\"\n#endif\n"),
        ("loop_a.cuh", "#include \"loop_b.cuh\"\n"),
        ("loop_b.cuh", "#include \"loop_a.cuh\"\n"),
        ("x.h", "#include <y.h>\n#include \"missing.h\"\n"),
    ];
    for (name, text) in files {
        std::fs::write(d.path().join(name), text).unwrap();
    }
    d
}

type Target = fn(&str, &Path);

fn targets() -> Vec<(&'static str, Target, &'static [&'static str])> {
    vec![
        ("lex", |s, _| drop(lex::lex(s)), CUDA_SEEDS),
        ("signature::parse", |s, _| drop(signature::parse(s)), CUDA_SEEDS),
        ("structs", |s, _| drop(structs::structs(s)), CUDA_SEEDS),
        (
            "includes::scan",
            |s, dir| {
                let _ = includes::scan(s, Some(dir), &[dir.to_path_buf()]);
                let _ = cuda_embed_source::includes::directives(s);
                let _ = cuda_embed_source::includes::guarded(s);
            },
            CUDA_SEEDS,
        ),
        (
            "ptx",
            |s, _| {
                let e = ptx::entries(s);
                let _ = ptx::find(&e, &["ns".into()], "scale", false);
                let _ = ptx::find(&e, &[], "saxpy", true);
            },
            PTX_SEEDS,
        ),
    ]
}

#[derive(Debug)]
enum Outcome {
    Done,
    Panicked(String),
}

/// Runs `target` over `cases` inputs on a worker thread. `limit` is a hang guard, not a speed
/// check: generous enough for a loaded CI machine, it only keeps a hang from stalling CI forever.
fn run(name: &str, target: Target, seeds: &[&str], seed: u64, cases: usize, dir: &Path, limit: Duration) {
    let mut rng = Rng(seed ^ name.len() as u64 ^ 0x9e37_79b9_7f4a_7c15);
    let inputs: Vec<String> = (0..cases).map(|_| input(&mut rng, seeds)).collect();
    let (tx, rx) = mpsc::channel();
    let (work, dir_owned) = (inputs.clone(), dir.to_path_buf());
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    std::thread::spawn(move || {
        for s in &work {
            let outcome = match catch_unwind(AssertUnwindSafe(|| target(s, &dir_owned))) {
                Ok(()) => Outcome::Done,
                Err(p) => Outcome::Panicked(
                    p.downcast_ref::<String>()
                        .cloned()
                        .or(p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default(),
                ),
            };
            if tx.send(outcome).is_err() {
                return;
            }
        }
    });
    let mut failure = None;
    for (i, s) in inputs.iter().enumerate() {
        match rx.recv_timeout(limit) {
            Ok(Outcome::Done) => {}
            Ok(Outcome::Panicked(msg)) => {
                failure = Some((i, s, format!("panicked: {msg}")));
                break;
            }
            Err(_) => {
                failure = Some((i, s, format!("did not finish within {limit:?} (a hang?)")));
                break;
            }
        }
    }
    std::panic::set_hook(hook);
    if let Some((i, s, what)) = failure {
        let file =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("robustness-{}-{i}.txt", name.replace("::", "_")));
        let _ = std::fs::write(&file, s);
        panic!("{name}: input #{i} (seed {seed}) {what}; input written to {}:\n{s:?}", file.display());
    }
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn the_front_end_never_panics_or_hangs() {
    let (seed, cases) = (setting("ROBUSTNESS_SEED", 0x5eed_cafe), setting("ROBUSTNESS_CASES", 10000) as usize);
    let dir = header_dir();
    for (name, target, seeds) in targets() {
        run(name, target, seeds, seed, cases, dir.path(), HANG_GUARD);
    }
}

#[test]
fn deep_nesting_and_long_inputs_stay_bounded() {
    let dir = header_dir();
    let long = [
        "(".repeat(20_000),
        "{".repeat(20_000),
        "template <".repeat(5_000),
        "/*".repeat(20_000),
        "\"".repeat(20_000),
        "#if X\n".repeat(5_000),
        "__global__ void k(".to_string() + &"int a, ".repeat(10_000) + ") {}",
        "extern \"C\" __global__ void k(float* x) {}\n".repeat(2_000),
        ".entry e(\n".to_string() + &".param .u64 p,\n".repeat(10_000),
    ];
    for (name, target, _) in targets() {
        for s in &long {
            let (tx, rx) = mpsc::channel();
            let (s2, d2) = (s.clone(), dir.path().to_path_buf());
            std::thread::spawn(move || {
                let r = catch_unwind(AssertUnwindSafe(|| target(&s2, &d2)));
                let _ = tx.send(r.is_ok());
            });
            let head: String = s.chars().take(40).collect();
            match rx.recv_timeout(HANG_GUARD) {
                Ok(true) => {}
                Ok(false) => panic!("{name} panicked on a long input starting {head:?}"),
                Err(_) => {
                    panic!("{name} did not finish within {HANG_GUARD:?} on a long input starting {head:?} (a hang?)")
                }
            }
        }
    }
}
