//! Run-time support of `elementwise_kernel!` and [`ElementwiseProgram`](crate::ElementwiseProgram):
//! the launch configuration chosen once per kernel and device, and the length check.
//!
//! The configuration gives each thread one step of the kernel's loop (one 16-byte vector of every
//! array, or the unrolled loop's 4 elements when an array is not aligned for the
//! vector; `cuda_embed_source::elementwise::flat_mode` says which): the block size that maximises occupancy
//! (`cuOccupancyMaxPotentialBlockSize`) and a grid that covers the whole array, capped at
//! [`MAX_WAVES`] times the blocks that are resident at once on the device; beyond that cap the
//! kernel's grid-stride loop covers the rest. Both numbers are asked of the driver on the first
//! launch on each device and kept in an atomic, so later launches make no driver query. (On an
//! H100, one vector per thread moved saxpy at 3054 GB/s against 2906 GB/s with a grid capped at
//! two waves.)

pub mod program; // the run-time twin of elementwise_kernel! (NVRTC, checked arguments)

use crate::driver::bind;
use crate::error::{Error, Result};
use crate::module::kernel::KernelRef;
use cudarc::driver::{sys, CudaContext, CudaStream, LaunchConfig};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many waves of resident blocks the automatic grid may hold at most; larger arrays are
/// covered by the grid-stride loop.
pub const MAX_WAVES: u32 = 1024;

/// The largest grid (x dimension) a launch may have.
const MAX_GRID: u64 = i32::MAX as u64;

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
        let ctx = stream.context();
        let packed = self.packed(ctx.ordinal(), || {
            let f = kernel.function(ctx)?;
            let (min_grid, block) = f.occupancy_max_potential_block_size(no_shared, 0, 0, None)?;
            Ok(pack(block.min(i32::MAX as u32) as i32, min_grid.min(i32::MAX as u32) as i32))
        })?;
        Ok(grid(packed, n, width))
    }

    /// The configuration for the raw function `f` of `ctx` (a run-time program's kernel).
    #[inline]
    pub(crate) fn config_raw(
        &self,
        f: sys::CUfunction,
        ctx: &CudaContext,
        n: usize,
        width: usize,
    ) -> Result<LaunchConfig> {
        let packed = self.packed(ctx.ordinal(), || {
            bind(ctx)?;
            let (mut min_grid, mut block) = (0i32, 0i32);
            // SAFETY: `f` is a live function of `ctx`, which is current; valid out-pointers; no
            // block-size callback.
            let r = unsafe { sys::cuOccupancyMaxPotentialBlockSize(&mut min_grid, &mut block, f, None, 0, 0) };
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(Error::Driver {
                    call: "cuOccupancyMaxPotentialBlockSize",
                    device: ctx.ordinal(),
                    cause: crate::error::DriverCode(r),
                });
            }
            Ok(pack(block, min_grid))
        })?;
        Ok(grid(packed, n, width))
    }

    /// Launches `kernel` over `n` elements with the automatic configuration. The configuration is
    /// valid by construction (the occupancy block size, a grid within the device limit), so the
    /// launch skips the limit checks of [`KernelRef::launch_raw`].
    ///
    /// # Safety
    /// As for [`KernelRef::launch_raw`].
    #[inline(always)]
    pub unsafe fn launch(
        &self,
        kernel: KernelRef,
        stream: &CudaStream,
        n: usize,
        width: usize,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let config = self.config(kernel, stream, n, width)?;
        // SAFETY: the caller's contract; the configuration is within the kernel's limits.
        unsafe { kernel.launch_unchecked(stream, &config, args) }
    }

    #[inline(always)]
    fn packed(&self, device: usize, query: impl FnOnce() -> Result<u64>) -> Result<u64> {
        match self.slots.get(device) {
            Some(slot) => match slot.load(Ordering::Relaxed) {
                0 => cold_fill(slot, query),
                v => Ok(v),
            },
            None => query(),
        }
    }
}

#[cold]
#[inline(never)]
fn cold_fill(slot: &AtomicU64, query: impl FnOnce() -> Result<u64>) -> Result<u64> {
    let v = query()?;
    slot.store(v, Ordering::Relaxed);
    Ok(v)
}

extern "C" fn no_shared(_block: std::ffi::c_int) -> usize {
    0
}

/// Block size (high half) and grid cap (low half): `min_grid` is the grid that fills the device
/// once at that block size.
fn pack(block: i32, min_grid: i32) -> u64 {
    let cap = (min_grid.max(1) as u64 * MAX_WAVES as u64).min(MAX_GRID);
    ((block.max(1) as u64) << 32) | cap
}

#[inline(always)]
fn grid(packed: u64, n: usize, width: usize) -> LaunchConfig {
    let (block, cap) = ((packed >> 32) as u32, packed as u32);
    let threads = n.div_ceil(width.max(1));
    let blocks = threads.div_ceil(block as usize).clamp(1, cap as usize) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (block, 1, 1), shared_mem_bytes: 0 }
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
        let packed = pack(256, 264);
        assert_eq!(packed as u32, 264 * MAX_WAVES);
        // One vector of 4 per thread over the whole array.
        let c = grid(packed, 1 << 28, 4);
        assert_eq!((c.grid_dim.0, c.block_dim.0), ((1 << 26) / 256, 256));
        // Capped: the grid-stride loop covers the rest.
        let c = grid(packed, 1 << 40, 1);
        assert_eq!(c.grid_dim.0, 264 * MAX_WAVES);
        assert_eq!(pack(1024, i32::MAX) as u32, i32::MAX as u32);
        let c = grid(packed, 1024, 4);
        assert_eq!(c.grid_dim.0, 1);
        let c = grid(packed, 1025, 1);
        assert_eq!(c.grid_dim.0, 5);
        let c = grid(packed, 0, 1);
        assert_eq!(c.grid_dim.0, 1);
    }
}
