//! Launch limits: what a configuration may ask of a kernel, checked before the driver is called,
//! and the attribute readers the checks and [`KernelAttributes`] use.

use crate::driver::func_attr;
use crate::error::Result;
use cudarc::driver::{sys, LaunchConfig};

/// Grid limits of every GPU CUDA 13 supports (compute capability 7.5 and newer).
const MAX_GRID_X: u32 = i32::MAX as u32;
const MAX_GRID_YZ: u32 = 65535;

/// What the driver reports about one kernel on one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelAttributes {
    /// Registers per thread.
    pub registers: u32,
    /// Most threads a block of this kernel can have on this device (device limit, registers and
    /// `__launch_bounds__` combined).
    pub max_threads_per_block: u32,
    /// Statically allocated shared memory per block, bytes.
    pub static_shared_bytes: u32,
    /// `__constant__` memory used, bytes.
    pub const_bytes: u32,
    /// Local memory per thread, bytes.
    pub local_bytes: u32,
    /// Current limit on dynamic shared memory per block, bytes (raise it with
    /// [`KernelRef::set_max_dynamic_shared_memory`](crate::KernelRef::set_max_dynamic_shared_memory)).
    pub max_dynamic_shared_bytes: u32,
    /// PTX version the kernel was compiled for, e.g. 80 for compute_80.
    pub ptx_version: u32,
    /// SASS version of the loaded binary, e.g. 90 for sm_90.
    pub binary_version: u32,
}

impl KernelAttributes {
    /// Reads every attribute of `f`; a failure names the attribute's driver call.
    pub(crate) fn read(f: sys::CUfunction) -> std::result::Result<Self, sys::CUresult> {
        use sys::CUfunction_attribute::*;
        let get = |a| func_attr(f, a);
        Ok(KernelAttributes {
            registers: get(CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            max_threads_per_block: get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            static_shared_bytes: get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            const_bytes: get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            local_bytes: get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            max_dynamic_shared_bytes: get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
            ptx_version: get(CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: get(CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        })
    }
}

/// A launch configuration a kernel cannot take, found before the driver is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Violation {
    /// A zero grid or block dimension.
    Empty,
    /// More threads per block than the kernel allows.
    Threads {
        /// The kernel's limit.
        max: u32,
    },
    /// A grid dimension over the device limits.
    Grid,
    /// More dynamic shared memory than the kernel's current limit.
    SharedMemory {
        /// The kernel's limit.
        max: u32,
    },
}

impl Violation {
    /// What is wrong and what to do, for the Error. The shared-memory fix is generic: callers
    /// name their own way to raise the limit.
    pub(crate) fn describe(self, cfg: &LaunchConfig) -> (String, String) {
        let (b, g) = (cfg.block_dim, cfg.grid_dim);
        let threads = b.0 as u128 * b.1 as u128 * b.2 as u128; // exact, for the message
        match self {
            Violation::Empty => (
                format!("empty launch: grid {g:?}, block {b:?}"),
                "every grid and block dimension must be at least 1".into(),
            ),
            Violation::Threads { max } => (
                format!(
                    "block of {}x{}x{} = {threads} threads exceeds the kernel's limit of {max} threads per block",
                    b.0, b.1, b.2
                ),
                format!("use at most {max} threads per block (the limit comes from the device, the kernel's registers and __launch_bounds__)"),
            ),
            Violation::Grid => (
                format!("grid {g:?} exceeds the grid limits ({MAX_GRID_X}, {MAX_GRID_YZ}, {MAX_GRID_YZ})"),
                "use fewer blocks per dimension, or loop inside the kernel (grid-stride loop)".into(),
            ),
            Violation::SharedMemory { max } => (
                format!("{} bytes of dynamic shared memory requested, the kernel allows {max}", cfg.shared_mem_bytes),
                "request less, or raise the kernel's limit first".into(),
            ),
        }
    }
}

/// Threads in a block of `b`; a product past `u64::MAX` (three dimensions near `u32::MAX`) is
/// `u64::MAX`, over every limit, not an overflow.
#[inline(always)]
fn block_threads(b: (u32, u32, u32)) -> u64 {
    (b.0 as u64 * b.1 as u64).saturating_mul(b.2 as u64)
}

/// Checks `cfg` against a kernel's thread and dynamic shared memory limits and the grid limits.
#[inline(always)]
pub(crate) fn check_config(cfg: &LaunchConfig, max_threads: u32, max_dyn_smem: u32) -> Result<(), Violation> {
    let (b, g) = (cfg.block_dim, cfg.grid_dim);
    let threads = block_threads(b);
    if threads == 0 || g.0 == 0 || g.1 == 0 || g.2 == 0 {
        Err(Violation::Empty)
    } else if threads > u64::from(max_threads) {
        Err(Violation::Threads { max: max_threads })
    } else if g.0 > MAX_GRID_X || g.1 > MAX_GRID_YZ || g.2 > MAX_GRID_YZ {
        Err(Violation::Grid)
    } else if cfg.shared_mem_bytes > max_dyn_smem {
        Err(Violation::SharedMemory { max: max_dyn_smem })
    } else {
        Ok(())
    }
}

/// Whether `cfg` passes [`check_config`]: the same answer in fewer compares, for the launch's
/// fast path (the violation itself is found by `check_config`, off that path). `x - 1` wraps 0
/// to the top of the range, so one unsigned compare tests "at least 1 and at most the limit".
#[inline(always)]
pub(crate) fn fits(cfg: &LaunchConfig, max_threads: u32, max_dyn_smem: u32) -> bool {
    let (b, g) = (cfg.block_dim, cfg.grid_dim);
    (block_threads(b).wrapping_sub(1) < u64::from(max_threads))
        & (g.0.wrapping_sub(1) < MAX_GRID_X)
        & (g.1.wrapping_sub(1) < MAX_GRID_YZ)
        & (g.2.wrapping_sub(1) < MAX_GRID_YZ)
        & (cfg.shared_mem_bytes <= max_dyn_smem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(grid: (u32, u32, u32), block: (u32, u32, u32), smem: u32) -> LaunchConfig {
        LaunchConfig { grid_dim: grid, block_dim: block, shared_mem_bytes: smem }
    }

    #[test]
    fn every_violation_is_found_in_order() {
        assert_eq!(check_config(&cfg((1, 1, 1), (256, 1, 1), 0), 1024, 48 << 10), Ok(()));
        assert_eq!(check_config(&cfg((0, 1, 1), (256, 1, 1), 0), 1024, 0), Err(Violation::Empty));
        assert_eq!(check_config(&cfg((1, 1, 1), (64, 32, 1), 0), 1024, 0), Err(Violation::Threads { max: 1024 }));
        assert_eq!(check_config(&cfg((1, 70000, 1), (32, 1, 1), 0), 1024, 0), Err(Violation::Grid));
        assert_eq!(check_config(&cfg((1, 1, 1), (32, 1, 1), 100), 1024, 64), Err(Violation::SharedMemory { max: 64 }));
        let (cause, fix) = Violation::Threads { max: 128 }.describe(&cfg((1, 1, 1), (256, 1, 1), 0));
        assert!(cause.contains("256 threads") && fix.contains("at most 128"), "{cause} / {fix}");
    }

    /// The check says what the limits, read one at a time with exact arithmetic, say: at and
    /// around every bound (0, 1, the limit, one past it, `u32::MAX`), for every combination of
    /// dimensions, limits and shared memory sizes; block sizes whose thread count does not fit
    /// in 64 bits included (they overflowed before: a panic in a debug build).
    #[test]
    fn the_check_agrees_with_the_limits_read_one_by_one() {
        fn plain(c: &LaunchConfig, max_threads: u32, max_smem: u32) -> Result<(), Violation> {
            let (b, g) = (c.block_dim, c.grid_dim);
            let threads = b.0 as u128 * b.1 as u128 * b.2 as u128;
            if threads == 0 || g.0 == 0 || g.1 == 0 || g.2 == 0 {
                Err(Violation::Empty)
            } else if threads > u128::from(max_threads) {
                Err(Violation::Threads { max: max_threads })
            } else if g.0 > MAX_GRID_X || g.1 > MAX_GRID_YZ || g.2 > MAX_GRID_YZ {
                Err(Violation::Grid)
            } else if c.shared_mem_bytes > max_smem {
                Err(Violation::SharedMemory { max: max_smem })
            } else {
                Ok(())
            }
        }
        let around = |limit: u32| [0, 1, limit.saturating_sub(1), limit, limit.saturating_add(1), u32::MAX];
        let (grid_x, grid_yz, block) = (around(MAX_GRID_X), around(MAX_GRID_YZ), around(1024));
        let mut checked = 0;
        for &gx in &grid_x {
            for &gy in &grid_yz {
                for &gz in &[0, 1, MAX_GRID_YZ, MAX_GRID_YZ + 1] {
                    for &bx in &block {
                        for &by in &[0, 1, 2, u32::MAX] {
                            for &bz in &[0, 1, 64] {
                                for &smem in &[0, 48 << 10, (48 << 10) + 1, u32::MAX] {
                                    for &(max_threads, max_smem) in &[(1024, 48 << 10), (0, 0), (u32::MAX, u32::MAX)] {
                                        let c = cfg((gx, gy, gz), (bx, by, bz), smem);
                                        let expected = plain(&c, max_threads, max_smem);
                                        assert_eq!(
                                            check_config(&c, max_threads, max_smem),
                                            expected,
                                            "{c:?}, max_threads {max_threads}, max_smem {max_smem}"
                                        );
                                        // The fast path's predicate says the same.
                                        assert_eq!(
                                            fits(&c, max_threads, max_smem),
                                            expected.is_ok(),
                                            "fits: {c:?}, max_threads {max_threads}, max_smem {max_smem}"
                                        );
                                        checked += 1;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 6 * 6 * 4 * 6 * 4 * 3 * 4 * 3);
        // A block whose thread count does not fit in 64 bits is refused and described, not an
        // arithmetic overflow (a panic in a debug build).
        let huge = cfg((1, 1, 1), (u32::MAX, u32::MAX, 64), 0);
        assert_eq!(check_config(&huge, 1024, 0), Err(Violation::Threads { max: 1024 }));
        assert!(!fits(&huge, u32::MAX, u32::MAX));
        let (cause, _) = Violation::Threads { max: 1024 }.describe(&huge);
        assert!(cause.contains(&(u32::MAX as u128 * u32::MAX as u128 * 64).to_string()), "{cause}");
    }
}
