//! Launch plans: which of a reduction's three kernels runs, with which grid, and the scratch it
//! needs. A plan is a function of the shape, the vector width and the multiprocessor count only,
//! so the same input on one GPU always meets the same combination order.

use super::{BLOCK, BLOCKS_PER_SM, MAX_REDUCE_BYTES, ROWS_AT_ONCE, UNROLL};

/// Which kernel a plan launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanKind {
    /// `NAME_full`: `aux` blocks per segment.
    Segments,
    /// `NAME_rows`: `aux` threads per row.
    Rows,
    /// `NAME_cols`: `grid.1` row splits.
    Cols,
}

/// A launch plan: which kernel, its grid and block, and the scratch it needs. A function of the
/// shape, the vector width and the multiprocessor count only, so results are reproducible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The kernel.
    pub kind: PlanKind,
    /// Grid dimensions (x, y).
    pub grid: (u32, u32),
    /// Block dimensions (x, y).
    pub block: (u32, u32),
    /// Blocks per segment (`Segments`) or threads per row (`Rows`); unused for `Cols`.
    pub aux: u32,
    /// Partial values the kernel writes to scratch (each at most [`MAX_REDUCE_BYTES`]).
    pub partials: u64,
    /// Integer counters the kernel uses (zero before and after it runs).
    pub counters: u64,
}

impl Plan {
    /// Byte offset of the partials in the scratch buffer (the counters come first).
    pub fn partial_offset(&self) -> u64 {
        (self.counters * 4).div_ceil(256) * 256
    }

    /// Scratch bytes the plan needs.
    pub fn scratch_bytes(&self) -> u64 {
        self.partial_offset() + self.partials * MAX_REDUCE_BYTES as u64
    }
}

/// The most blocks one of at least a wave of long rows is split over (see [`plan_segments`]).
const LONG_ROW_SPLIT: u64 = 4;

fn div_ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// The plan that reduces `rows` contiguous segments of `n` elements each (the full reduction is
/// one segment). `sms`: the GPU's multiprocessor count; `v`: the vector width.
///
/// - Short rows (at most 128 vector groups): `NAME_rows`, a group of `g` lanes per row, each
///   group [`ROWS_AT_ONCE`] rows at a time so several loads are in flight.
/// - At least a wave of rows of at most `BLOCK * UNROLL` groups: one block per row, one launch
///   with a block per row (the hardware hands rows to multiprocessors as they free up).
/// - At least a wave of longer rows: each row over up to four blocks, one launch, the last block
///   of a row combining the row's partials in a fixed order.
/// - The full reduction of at most four blocks' worth of loads: one block.
/// - Otherwise (the full reduction, fewer rows than a wave) a persistent grid, each row's share
///   interleaved over several blocks.
pub fn plan_segments(sms: u32, rows: u64, n: u64, v: u32) -> Plan {
    let wave = u64::from(sms.max(1) * BLOCKS_PER_SM);
    let groups = div_ceil(n, u64::from(v));
    if rows > 1 && groups <= 128 {
        let g = groups.max(1).next_power_of_two().min(32);
        let rows_per_block = u64::from(BLOCK) / g * u64::from(ROWS_AT_ONCE);
        let grid = div_ceil(rows, rows_per_block).min(wave * 8) as u32;
        return Plan {
            kind: PlanKind::Rows,
            grid: (grid, 1),
            block: (BLOCK, 1),
            aux: g as u32,
            partials: 0,
            counters: 0,
        };
    }
    let per_block = u64::from(BLOCK * UNROLL);
    if rows >= wave && groups <= per_block {
        // A block per row, all in one launch (not a persistent grid): measured faster for rows
        // of at most one block's worth of loads (1.093x against 1.036x CuPy at 65536 x 4096).
        return Plan {
            kind: PlanKind::Segments,
            grid: (rows.min(u64::from(i32::MAX as u32)) as u32, 1),
            block: (BLOCK, 1),
            aux: 1,
            partials: 0,
            counters: 0,
        };
    }
    let split = div_ceil(groups, per_block).min(LONG_ROW_SPLIT);
    if rows >= wave && rows * split <= u64::from(i32::MAX as u32) {
        // At least a wave of longer rows: each row split over up to four blocks (interleaved
        // tiles), all in one launch, the last block to finish a row combining its partials in
        // part order. Measured on an H100 at 4096 x 65536 f32: 3118 GB/s against 3023 for a
        // persistent grid of one block per row, and against 2727 for a 16-way split, whose
        // last-block counters cost more than the extra parallelism gives.
        let (partials, counters) = if split > 1 { (rows * split, rows) } else { (0, 0) };
        return Plan {
            kind: PlanKind::Segments,
            grid: ((rows * split) as u32, 1),
            block: (BLOCK, 1),
            aux: split as u32,
            partials,
            counters,
        };
    }
    if rows == 1 && groups <= 4 * per_block {
        // One block, each thread up to four unrolled passes, rather than up to four blocks of
        // one pass: the last-block election and second combination of several blocks cost
        // more than their parallel loads save. Measured on an H100 (benches/reduction_sweep.rs,
        // f32, 2^14 elements = four blocks' worth): 3.68 us for one block against 4.71 us for
        // four; at 2^12, 3.00 us for one block against 4.83 us for two.
        return Plan { kind: PlanKind::Segments, grid: (1, 1), block: (BLOCK, 1), aux: 1, partials: 0, counters: 0 };
    }
    let tiles = div_ceil(groups, per_block).max(1);
    let mut bpr = (wave / rows.max(1)).clamp(1, tiles);
    if rows == 1 {
        // A full reduction: the fewest blocks that still take no more tiles each than a wave of
        // blocks would, so every block takes the same number of tiles (up to one) and no block
        // idles through a round the others spend on a tile. Measured on an H100
        // (benches/reduction_sweep.rs, f32): at 2^22, 512 blocks of 2 tiles 7.59 us against
        // 8.31 us for 528 blocks (496 of them with 2 tiles, 32 with 1); at 2^24, 512 blocks
        // 26.58 us against 27.28 us for 528.
        bpr = div_ceil(tiles, div_ceil(tiles, bpr));
    }
    let in_flight = rows.clamp(1, (2 * wave / bpr).max(1));
    let (partials, counters) = if bpr > 1 { (rows * bpr, rows) } else { (0, 0) };
    Plan {
        kind: PlanKind::Segments,
        grid: ((in_flight * bpr) as u32, 1),
        block: (BLOCK, 1),
        aux: bpr as u32,
        partials,
        counters,
    }
}

/// A full reduction (one segment) over exactly `blocks` blocks of `threads` threads, instead of
/// the plan [`plan_segments`] would choose: the configurations a tuner would try (each block
/// reads every `blocks`-th tile of `threads` vector groups; with more than one block the last to
/// finish combines the partials in block order). `threads` must be a multiple of 32 no larger
/// than [`BLOCK`] (the kernels' launch bound) and `blocks` at least 1: callers check.
pub fn plan_full_fixed(blocks: u32, threads: u32) -> Plan {
    let (partials, counters) = if blocks > 1 { (u64::from(blocks), 1) } else { (0, 0) };
    Plan { kind: PlanKind::Segments, grid: (blocks, 1), block: (threads, 1), aux: blocks, partials, counters }
}

/// The plan that reduces each of the `n` columns of a row-major `rows` x `n` matrix.
pub fn plan_cols(sms: u32, rows: u64, n: u64, v: u32) -> Plan {
    let wave = u64::from(sms.max(1) * BLOCKS_PER_SM);
    let groups = div_ceil(n, u64::from(v)).max(1);
    let tx = groups.next_power_of_two().min(32);
    let ty = u64::from(BLOCK) / tx;
    let gx = div_ceil(groups, tx);
    let max_splits = (rows / (ty * 8)).max(1);
    let splits = div_ceil(2 * wave, gx).clamp(1, max_splits).min(65535);
    let (partials, counters) = if splits > 1 { (splits * n, gx) } else { (0, 0) };
    Plan {
        kind: PlanKind::Cols,
        grid: (gx as u32, splits as u32),
        block: (tx as u32, ty as u32),
        aux: 0,
        partials,
        counters,
    }
}
