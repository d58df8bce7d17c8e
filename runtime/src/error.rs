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

    /// A run-time [`Program`](crate::Program) could not be built for a device: NVRTC rejected the
    /// source (the log is in `cause`), a name expression names no kernel, NVRTC is missing, or the
    /// driver could not load the result.
    #[error("CUDA program `{program}` for sm_{arch}: {cause}")]
    Program {
        /// The program's name ([`Program::name`](crate::Program::name)).
        program: String,
        /// Target architecture, e.g. `90`.
        arch: u32,
        /// What failed, with NVRTC's or the driver's log.
        cause: String,
    },

    /// [`ProgramModule::kernel`](crate::ProgramModule::kernel) was asked for a kernel the module
    /// does not have.
    #[error(
        "CUDA program `{program}` has no kernel `{kernel}`; it has: {}. Template instances are found by \
         the name expression given to `Program::name_expression` (e.g. `axpy<float>`), extern \"C\" \
         kernels by their name",
        known.join(", ")
    )]
    UnknownKernel {
        /// The program's name.
        program: String,
        /// The name that was asked for.
        kernel: String,
        /// The name expressions and symbols the module does have.
        known: Vec<String>,
    },

    /// The argument list of a [`ProgramKernel`](crate::ProgramKernel) launch disagrees with the
    /// kernel's compiled parameter list (count or a size). Nothing was launched.
    #[error("kernel `{kernel}` of CUDA program `{program}`: {}", argument_mismatch(expected, given))]
    Arguments {
        /// The program's name.
        program: String,
        /// The kernel, as it was looked up.
        kernel: String,
        /// Byte size of every parameter of the compiled kernel.
        expected: Vec<usize>,
        /// Byte size of every argument given.
        given: Vec<usize>,
    },

    /// A launch of a [`ProgramKernel`](crate::ProgramKernel) was rejected before the driver was
    /// called (launch limits, a stream of another device) or by the driver.
    #[error(
        "launch of kernel `{kernel}` of CUDA program `{program}` on device {device} failed: {cause}{}",
        fix_suffix(fix)
    )]
    ProgramLaunch {
        /// The program's name.
        program: String,
        /// The kernel, as it was looked up.
        kernel: String,
        /// Device ordinal of the launch stream.
        device: usize,
        /// What is wrong, with the values involved.
        cause: String,
        /// What to do about it, when known.
        fix: Option<String>,
    },

    /// Any other driver error reached through `?` on a cudarc call.
    #[error("CUDA driver error: {0}")]
    Cudarc(#[from] cudarc::driver::DriverError),

    /// A `__constant__`/`__device__` variable could not be used as asked.
    #[error("CUDA global `{name}` of {origin} on device {device}: {cause}{}", fix_suffix(fix))]
    Global {
        /// The variable's C++ name.
        name: &'static str,
        /// `file:line` of the `cuda_kernel!` invocation.
        origin: &'static str,
        /// Device ordinal.
        device: usize,
        /// What went wrong.
        cause: String,
        /// What to do about it, when known.
        fix: Option<String>,
    },
}

fn fix_suffix(fix: &Option<String>) -> String {
    match fix {
        Some(f) => format!("; {f}"),
        None => String::new(),
    }
}

fn argument_mismatch(expected: &[usize], given: &[usize]) -> String {
    if expected.len() != given.len() {
        return format!(
            "the kernel takes {} parameter(s) of {expected:?} bytes but {} argument(s) of {given:?} bytes were given",
            expected.len(),
            given.len()
        );
    }
    match expected.iter().zip(given).position(|(e, g)| e != g) {
        Some(i) => format!(
            "argument {i} (counting from 0) is {} bytes but parameter {i} of the kernel is {} bytes \
             (parameters: {expected:?} bytes, arguments: {given:?} bytes, {} of each)",
            given[i],
            expected[i],
            expected.len()
        ),
        None => format!("arguments of {given:?} bytes match the parameters"),
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
