//! Run-time support of `elementwise_kernel!`: the launch configuration chosen once per kernel and
//! device, and the length check.
//!
//! The configuration is a grid-stride loop: the block size that maximises occupancy
//! (`cuOccupancyMaxPotentialBlockSize`) and a grid of at most [`WAVES`] times the blocks that are
//! resident at once on the device, fewer when the array is small. Both numbers are asked of the
//! driver on the first launch on each device and kept in an atomic, so later launches make no
//! driver query.

use crate::error::{Error, Result};
use crate::kernel::KernelRef;
use cudarc::driver::{CudaStream, LaunchConfig};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many waves of resident blocks the grid may hold: the grid-stride loop covers the rest.
pub const WAVES: u32 = 2;

/// Devices with an ordinal below this keep their configuration in a slot; others ask the driver
/// at each launch.
const SLOTS: usize = 16;

/// The block size and the grid cap of one kernel, per device, found on first use.
pub struct AutoConfig {
    slots: [AtomicU64; SLOTS],
}

impl Default for AutoConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for AutoConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoConfig").finish_non_exhaustive()
    }
}

impl AutoConfig {
    /// Nothing known yet.
    pub const fn new() -> Self {
        AutoConfig { slots: [const { AtomicU64::new(0) }; SLOTS] }
    }

    /// The configuration for `kernel` over `n` elements, `width` per thread and loop iteration.
    #[inline]
    pub fn config(&self, kernel: KernelRef, stream: &CudaStream, n: usize, width: usize) -> Result<LaunchConfig> {
        let device = stream.context().ordinal();
        let packed = match self.slots.get(device) {
            Some(slot) => match slot.load(Ordering::Relaxed) {
                0 => {
                    let v = query(kernel, stream)?;
                    slot.store(v, Ordering::Relaxed);
                    v
                }
                v => v,
            },
            None => query(kernel, stream)?,
        };
        Ok(grid(packed, n, width))
    }
}

#[inline]
fn grid(packed: u64, n: usize, width: usize) -> LaunchConfig {
    let (block, cap) = ((packed >> 32) as u32, packed as u32);
    let threads = n.div_ceil(width.max(1));
    let blocks = threads.div_ceil(block as usize).clamp(1, cap as usize) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (block, 1, 1), shared_mem_bytes: 0 }
}

#[cold]
fn query(kernel: KernelRef, stream: &CudaStream) -> Result<u64> {
    extern "C" fn no_shared(_block: std::ffi::c_int) -> usize {
        0
    }
    let f = kernel.function(stream.context())?;
    let (min_grid, block) = f.occupancy_max_potential_block_size(no_shared, 0, 0, None)?;
    let cap = min_grid.max(1).saturating_mul(WAVES);
    Ok(((block.max(1) as u64) << 32) | cap as u64)
}

/// The error for arrays of unequal lengths: names every array parameter and its length.
#[cold]
pub fn length_error(kernel: KernelRef, lengths: &[(&str, usize)]) -> Error {
    let list: Vec<String> = lengths.iter().map(|(p, n)| format!("`{p}` has {n}")).collect();
    Error::Length {
        kernel: kernel.name().to_string(),
        origin: kernel.module().origin().to_string(),
        detail: format!(
            "the array parameters must have the same length (one element per index), but {}",
            list.join(", ")
        ),
    }
}

/// The first length, or an error naming all when they differ; `None` when there are none.
#[inline]
pub fn common_length(kernel: KernelRef, lengths: &[(&str, usize)]) -> Result<usize> {
    let n = lengths.first().map_or(0, |l| l.1);
    if lengths.iter().any(|l| l.1 != n) {
        return Err(length_error(kernel, lengths));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids() {
        let packed = (256u64 << 32) | 528;
        let c = grid(packed, 1 << 28, 4);
        assert_eq!((c.grid_dim.0, c.block_dim.0), (528, 256));
        let c = grid(packed, 1024, 4);
        assert_eq!(c.grid_dim.0, 1);
        let c = grid(packed, 1025, 1);
        assert_eq!(c.grid_dim.0, 5);
        let c = grid(packed, 0, 1);
        assert_eq!(c.grid_dim.0, 1);
    }
}
