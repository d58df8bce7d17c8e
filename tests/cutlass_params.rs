//! The host half of the CUTLASS GEMM (examples/cutlass/params.rs) against CUTLASS's own host code:
//! tests/cutlass/params_fixture.txt holds, for four shapes, the `cuTensorMapEncodeTiled` calls,
//! the grid and the bytes of `Params` (of the plain GEMM and of the fused bias + GELU one) that CUTLASS 4.2's `to_underlying_arguments` and
//! `get_grid_shape` produce (made by tests/cutlass/harness.cu). No GPU, no CUTLASS headers needed.

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

fn cases() -> Vec<Case> {
    let text = include_str!("cutlass/params_fixture.txt");
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
