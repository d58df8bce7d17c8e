//! The host half of `gemm_sm90.cuh`'s `Plain` GEMM: what CUTLASS's
//! `GemmUniversal::to_underlying_arguments` computes for that one configuration (tile 128x256x64,
//! cluster 2x1x1, persistent cooperative kernel, TMA epilogue), in Rust, so the kernel's own
//! `Params` struct can be passed to the typed launcher with no host C++.
//!
//! Pure computation, no CUDA: the four TMA descriptors are encoded by the caller from
//! [`tma_args`] (on a GPU machine through `cuTensorMapEncodeTiled`), then [`params`] lays out the
//! bytes. `tests/cutlass_params.rs` checks every byte this writes, the encode arguments and the
//! grid against CUTLASS's own host code for several shapes (`tests/cutlass/harness.cu`, which
//! the test builds and runs against the installed headers); a new tile, cluster or CUTLASS
//! version means updating the harness and the offsets here.

/// CTA tile (M, N); K is 64.
pub const TILE: (u32, u32) = (128, 256);
/// Thread-block cluster (M, N, 1).
pub const CLUSTER: (u32, u32, u32) = (2, 1, 1);
/// `sizeof(Params)`.
pub const PARAMS_BYTES: usize = 1792;
/// The dynamic shared memory the kernel asks for (`GemmKernel::SharedStorageSize`).
pub const SHARED_BYTES: u32 = 230_400;
/// Threads per block (`GemmKernel::MaxThreadsPerBlock`: a producer and two consumer warp groups).
pub const THREADS: u32 = 384;

/// One problem: `D = alpha * A @ B + beta * C`, A `m x k` row-major, B given as `n x k`
/// row-major (column-major `k x n`), C and D `m x n` row-major; device addresses.
#[derive(Debug, Clone, Copy)]
pub struct Problem {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub a: u64,
    pub b: u64,
    pub c: u64,
    pub d: u64,
    pub alpha: f32,
    pub beta: f32,
    /// Multiprocessors of the GPU (the persistent grid's size).
    pub sm_count: u32,
    /// The scheduler's largest tile swizzle (CUTLASS's `max_swizzle_size`: 1, 2, 4 or 8): that
    /// many consecutive CTAs walk a column of tiles, so neighbours share their A or B tiles in L2.
    pub swizzle: u32,
}

impl Problem {
    /// Why CUTLASS cannot run this problem, if it cannot: TMA needs every row to start on 16
    /// bytes (`k` and `n` multiples of 8 bf16 elements).
    pub fn unsupported(&self) -> Option<String> {
        if self.m == 0 || self.n == 0 || self.k == 0 {
            return Some(format!("an empty problem ({}x{}x{})", self.m, self.n, self.k));
        }
        if !self.k.is_multiple_of(8) || !self.n.is_multiple_of(8) {
            return Some(format!(
                "k = {} and n = {} must be multiples of 8 (TMA needs 16-byte aligned rows)",
                self.k, self.n
            ));
        }
        None
    }
}

/// The arguments of one `cuTensorMapEncodeTiled` call (element strides are all 1, interleave
/// none, L2 promotion 256 B, out-of-bounds fill zeros).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TmaArgs {
    /// `CUtensorMapDataType`: 1 (`UINT16`) for the loads of A and B, 9 (`BFLOAT16`) for C and D.
    pub data_type: u32,
    pub address: u64,
    /// Elements, innermost first (rank 3: columns, rows, batch).
    pub dims: [u64; 3],
    /// Bytes, of dimensions 1 and 2.
    pub strides: [u64; 2],
    pub boxes: [u32; 3],
    /// `CUtensorMapSwizzle`: 3 (128 B) for A and B, 2 (64 B) for C and D.
    pub swizzle: u32,
}

/// `CU_TENSOR_MAP_L2_PROMOTION_L2_256B`, the promotion every descriptor uses.
pub const L2_PROMOTION: u32 = 2;

/// The TMA descriptors the kernel takes, in order A, B, C, D.
pub fn tma_args(p: &Problem) -> [TmaArgs; 4] {
    let (m, n, k) = (u64::from(p.m), u64::from(p.n), u64::from(p.k));
    let operand = |address, rows: u64| TmaArgs {
        data_type: 1,
        address,
        dims: [k, rows, 1],
        strides: [k * 2, rows * k * 2],
        boxes: [64, 128, 1],
        swizzle: 3,
    };
    let output = |address| TmaArgs {
        data_type: 9,
        address,
        dims: [n, m, 1],
        strides: [n * 2, m * n * 2],
        boxes: [32, 128, 1],
        swizzle: 2,
    };
    [operand(p.a, m), operand(p.b, n), output(p.c), output(p.d)]
}

/// CUTLASS's `FastDivmodU64`: divisor, multiplier, shift, round-up.
fn fast_divmod(divisor: u64) -> (u64, u64, u32, u32) {
    let shift = 63 - divisor.leading_zeros();
    if divisor.is_power_of_two() {
        return (divisor, 0, shift, 0);
    }
    let p2 = 1u128 << shift;
    let lo = ((p2 << 64) / u128::from(divisor)) as u64;
    let multiplier = (((p2 << 64) | p2) / u128::from(divisor)) as u64;
    (divisor, multiplier, shift, u32::from(lo == multiplier))
}

/// The persistent scheduler's tile counts: CTA tiles along M and N (rounded up to the cluster
/// and the swizzle), whether it rasterizes along N, and the log2 of the swizzle it uses.
fn blocks(p: &Problem) -> (u32, u32, bool, i32) {
    let (x, y) = (p.m.div_ceil(TILE.0).next_multiple_of(CLUSTER.0), p.n.div_ceil(TILE.1).next_multiple_of(CLUSTER.1));
    // get_log_swizzle_size
    let min = x.min(y);
    let log = match p.swizzle {
        s if s >= 8 && min >= 6 => 3,
        s if s >= 4 && min >= 3 => 2,
        s if s >= 2 && min >= 2 => 1,
        _ => 0,
    };
    let (bm, bn) = (x.next_multiple_of((1 << log) * CLUSTER.0), y.next_multiple_of((1 << log) * CLUSTER.1));
    (bm, bn, bn <= bm, log)
}

/// The launch grid (CUTLASS's `get_grid_shape` for this kernel, clusters of [`CLUSTER`]).
pub fn grid(p: &Problem) -> (u32, u32, u32) {
    let (bm, bn, along_n, _) = blocks(p);
    let total = bm * bn;
    // get_max_cta_occupancy(18 SMs per GPC, cluster 2x1, sm_count)
    let (sms, size, per_gpc) = (p.sm_count, CLUSTER.0 * CLUSTER.1, 18);
    let gpcs = if sms < per_gpc { 1 } else { sms / per_gpc };
    let mut ctas = gpcs * (per_gpc - per_gpc % size);
    let residual = if sms < per_gpc { 0 } else { sms % per_gpc };
    ctas += residual - residual % size;
    let ctas = ctas.min(sms);
    if along_n {
        (CLUSTER.0, (ctas / CLUSTER.0).min(total / CLUSTER.0), 1)
    } else {
        ((ctas / CLUSTER.1).min(total / CLUSTER.1), CLUSTER.1, 1)
    }
}

/// The byte ranges [`params`] writes (everything else is padding or a null pointer, zero);
/// with `bias`, those of [`params_bias_gelu`].
pub fn fields(bias: bool) -> Vec<(usize, usize)> {
    let mut f = vec![(0, 20), (128, 128), (384, 128), (640, 12), (768, 4), (800, 4), (896, 128), (1152, 128)];
    f.extend([(1408, 4), (1536, 12), (1576, 12), (1592, 12), (1608, 24), (1632, 24), (1656, 36), (1696, 8)]);
    if bias {
        f.push((832, 8));
    }
    f
}

/// The fused GEMM's `Params` (`BiasGelu` in gemm_sm90.cuh: `D = GELU(alpha * A @ B + beta * C +
/// bias[n])`): the same layout as [`params`] plus the bias pointer (one bf16 per column; its
/// default value and batch stride stay zero).
pub fn params_bias_gelu(p: &Problem, descriptors: &[[u8; 128]; 4], bias: u64) -> [u8; PARAMS_BYTES] {
    let mut out = params(p, descriptors);
    out[832..840].copy_from_slice(&bias.to_le_bytes());
    out
}

/// CUTLASS's `Params` for `p`, with the encoded descriptors of [`tma_args`] (A, B, C, D).
pub fn params(p: &Problem, descriptors: &[[u8; 128]; 4]) -> [u8; PARAMS_BYTES] {
    let mut out = [0u8; PARAMS_BYTES];
    let mut put = |at: usize, bytes: &[u8]| out[at..at + bytes.len()].copy_from_slice(bytes);
    // mode (kGemm = 0), problem shape (m, n, k, l)
    for (i, v) in [0, p.m, p.n, p.k, 1].iter().enumerate() {
        put(4 * i, &v.to_le_bytes());
    }
    // mainloop: TMA A, TMA B, transaction bytes (whole stage, A's, B's)
    put(128, &descriptors[0]);
    put(384, &descriptors[1]);
    for (i, v) in [49_152u32, 16_384, 32_768].iter().enumerate() {
        put(640 + 4 * i, &v.to_le_bytes());
    }
    // epilogue: beta and alpha (their pointers and strides null), TMA C, TMA D, C's bytes per stage
    put(768, &p.beta.to_le_bytes());
    put(800, &p.alpha.to_le_bytes());
    put(896, &descriptors[2]);
    put(1152, &descriptors[3]);
    put(1408, &8192u32.to_le_bytes());
    // hardware info: device 0, SM count, no max active clusters
    put(1540, &p.sm_count.to_le_bytes());
    // scheduler
    let (bm, bn, along_n, log_swizzle) = blocks(p);
    let (major, minor, blk) =
        if along_n { (CLUSTER.1, CLUSTER.0, bn / CLUSTER.1) } else { (CLUSTER.0, CLUSTER.1, bm / CLUSTER.0) };
    let pow2 = |d: u32| (u64::from(d), d.trailing_zeros());
    for (at, (d, s)) in [(1576, pow2(major)), (1592, pow2(minor))] {
        put(at, &d.to_le_bytes());
        put(at + 8, &s.to_le_bytes());
    }
    for (at, d) in [(1608, u64::from(bm) * u64::from(bn)), (1632, u64::from(blk))] {
        let (d, m, s, r) = fast_divmod(d);
        put(at, &d.to_le_bytes());
        put(at + 8, &m.to_le_bytes());
        put(at + 16, &s.to_le_bytes());
        put(at + 20, &r.to_le_bytes());
    }
    put(1656, &(u64::from(bm) * u64::from(bn)).to_le_bytes());
    put(1664, &log_swizzle.to_le_bytes());
    put(1668, &u32::from(along_n).to_le_bytes());
    for (i, v) in [bm / CLUSTER.0, bn / CLUSTER.1, 1, CLUSTER.0, CLUSTER.1].iter().enumerate() {
        put(1672 + 4 * i, &v.to_le_bytes());
    }
    out
}
