//! The one error type of cuda-embed.
//!
//! Every variant names what failed (the kernel, the module's origin in the Rust source, the
//! device) and, where there is one, the fix. Driver error codes are kept (`code`) so callers can
//! still match on them, but they are never the whole message.

use cudarc::driver::sys::CUresult;
use std::fmt;

/// Result alias used throughout cuda-embed.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong at run time in cuda-embed.
///
/// ```
/// let e = cuda_embed_runtime::Error::NoDriver { detail: "libcuda.so not found".into() };
/// assert!(e.to_string().contains("NVIDIA driver"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No CUDA driver library (`libcuda.so` / `nvcuda.dll`) could be loaded.
    #[error(
        "no NVIDIA driver found ({detail}): install the NVIDIA driver, or add the directory \
         holding libcuda.so to LD_LIBRARY_PATH"
    )]
    NoDriver {
        /// What was tried.
        detail: String,
    },

    /// The driver is present but the requested device does not exist.
    #[error("CUDA device {ordinal} is not available ({cause}); this machine has {count} CUDA device(s)")]
    NoDevice {
        /// The ordinal that was asked for.
        ordinal: usize,
        /// Number of devices the driver reports.
        count: usize,
        /// The driver's answer.
        cause: DriverCode,
    },

    /// A driver call failed outside of any particular kernel.
    #[error("CUDA driver call {call} failed on device {device}: {cause}")]
    Driver {
        /// The driver entry point, e.g. `cuCtxSetCurrent`.
        call: &'static str,
        /// Device ordinal.
        device: usize,
        /// The driver's answer.
        cause: DriverCode,
    },

    /// The embedded module could not be loaded on a device.
    #[error(
        "cannot load the CUDA module of {origin} on device {device} ({device_name}, sm_{arch}): {cause}{}",
        fix_suffix(fix)
    )]
    Load {
        /// `file:line` of the `cuda_kernel!` invocation.
        origin: &'static str,
        /// Device ordinal.
        device: usize,
        /// Device name as reported by the driver.
        device_name: String,
        /// Compute capability as a number, e.g. `90`.
        arch: u32,
        /// What failed (driver code plus the JIT log when there is one).
        cause: String,
        /// What to do about it, when known.
        fix: Option<String>,
    },

    /// NVRTC rejected the embedded source at first use (no nvcc was found at build time).
    #[error("NVRTC failed to compile the CUDA source of {origin} for sm_{arch}:\n{log}")]
    Nvrtc {
        /// `file:line` of the `cuda_kernel!` invocation.
        origin: &'static str,
        /// Target architecture.
        arch: u32,
        /// NVRTC's log, or the reason it could not run.
        log: String,
    },

    /// A kernel's compiled parameter list disagrees with the signature the launcher was built for.
    #[error("kernel `{kernel}` of {origin}: {detail}")]
    Signature {
        /// Kernel name.
        kernel: &'static str,
        /// `file:line` of the `cuda_kernel!` invocation.
        origin: &'static str,
        /// What differs.
        detail: String,
    },

    /// A launch was rejected before or by the driver.
    #[error("launch of kernel `{kernel}` on device {device} failed: {cause}{}", fix_suffix(fix))]
    Launch {
        /// Kernel name.
        kernel: &'static str,
        /// Device ordinal.
        device: usize,
        /// What is wrong, with the values involved.
        cause: String,
        /// What to do about it, when known.
        fix: Option<String>,
    },

    /// Reading or writing the on-disk compile cache failed.
    #[error("cuda-embed cache at {path}: {source}")]
    Cache {
        /// The file or directory involved.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// Any other driver error reached through `?` on a cudarc call.
    #[error("CUDA driver error: {0}")]
    Cudarc(#[from] cudarc::driver::DriverError),
}

fn fix_suffix(fix: &Option<String>) -> String {
    match fix {
        Some(f) => format!("; {f}"),
        None => String::new(),
    }
}

/// A driver result code with its name, printed as `CUDA_ERROR_X (code N): description`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverCode(pub CUresult);

impl fmt::Display for DriverCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = cudarc::driver::DriverError(self.0);
        let name = e.error_name().map(|s| s.to_string_lossy().into_owned());
        let text = e.error_string().map(|s| s.to_string_lossy().into_owned());
        match (name, text) {
            (Ok(n), Ok(t)) => write!(f, "{n} ({t})"),
            _ => write!(f, "{:?}", self.0),
        }
    }
}

impl Error {
    /// The driver result code behind this error, when there is one.
    pub fn driver_code(&self) -> Option<CUresult> {
        match self {
            Error::NoDevice { cause, .. } | Error::Driver { cause, .. } => Some(cause.0),
            Error::Cudarc(e) => Some(e.0),
            _ => None,
        }
    }
}
