//! The one error type of cuda-embed.
//!
//! Every variant names what failed (the kernel, the module's origin in the Rust source, the
//! device) and, where there is one, the fix. Driver error codes are kept ([`DriverCode`],
//! [`Error::driver_code`]) so callers can still match on them, but they are never the whole
//! message.

use cudarc::driver::sys::CUresult;
use std::fmt;

/// Result alias used throughout cuda-embed.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong at run time in cuda-embed.
///
/// Each variant names what failed — the kernel, where it comes from (`origin`: the
/// `cuda_kernel!` invocation's `file:line`, or ``program `name` `` for a run-time [`Program`]),
/// the device — and the fix when there is one. `{}` (Display) and `{:?}` (Debug) both print that
/// message, so `fn main() -> cuda_embed::Result<()>` reports it readably; `{:#?}` shows the fields.
/// Match on the variants for structured handling.
///
/// [`Program`]: crate::Program
///
/// ```
/// let e = cuda_embed_runtime::Error::NoDriver { detail: "libcuda.so not found".into() };
/// assert!(e.to_string().contains("NVIDIA driver"));
/// assert_eq!(format!("{e:?}"), e.to_string());
/// ```
#[derive(thiserror::Error)]
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

    /// Compiling CUDA source at run time failed: NVRTC rejected it (the log is in `cause`), NVRTC
    /// is missing, or a name expression names nothing.
    #[error("cannot compile the CUDA source of {origin} for sm_{arch}: {cause}")]
    Compile {
        /// `file:line` of the `cuda_kernel!` invocation, or ``program `name` ``.
        origin: String,
        /// Target architecture, e.g. `90`.
        arch: u32,
        /// What failed, with NVRTC's log.
        cause: String,
    },

    /// Compiled code could not be loaded on a device.
    #[error(
        "cannot load the CUDA module of {origin} on device {device} ({device_name}, sm_{arch}): {cause}{}",
        fix_suffix(fix)
    )]
    Load {
        /// `file:line` of the `cuda_kernel!` invocation, or ``program `name` ``.
        origin: String,
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

    /// A kernel's compiled parameter list disagrees with the signature the launcher was built for.
    #[error("kernel `{kernel}` of {origin}: {detail}")]
    Signature {
        /// Kernel name.
        kernel: String,
        /// Where the kernel comes from.
        origin: String,
        /// What differs.
        detail: String,
    },

    /// A module was asked for a kernel it does not have.
    #[error(
        "{origin} has no kernel `{kernel}`; it has: {}. Template instances are found by the name \
         expression given to `Program::name_expression` (e.g. `axpy<float>`), extern \"C\" kernels by \
         their name",
        known.join(", ")
    )]
    UnknownKernel {
        /// Where the module comes from.
        origin: String,
        /// The name that was asked for.
        kernel: String,
        /// The name expressions and symbols the module does have.
        known: Vec<String>,
    },

    /// A dynamic argument list disagrees with the kernel's compiled parameter list (count or a
    /// size). Nothing was launched.
    #[error("kernel `{kernel}` of {origin}: {}", argument_mismatch(expected, given))]
    Arguments {
        /// Kernel name.
        kernel: String,
        /// Where the kernel comes from.
        origin: String,
        /// Byte size of every parameter of the compiled kernel.
        expected: Vec<usize>,
        /// Byte size of every argument given.
        given: Vec<usize>,
    },

    /// The arrays given to a generated kernel (elementwise, reduction) do not have the lengths it
    /// needs. Nothing was launched.
    #[error("kernel `{kernel}` of {origin}: {detail}")]
    Length {
        /// Kernel name.
        kernel: String,
        /// Where the kernel comes from.
        origin: String,
        /// The parameters and their lengths, and what they should be.
        detail: String,
    },

    /// The definition of a kernel generated at run time ([`ElementwiseProgram`](crate::ElementwiseProgram))
    /// is wrong: a parameter list, an instance, an empty operation. Nothing was compiled.
    #[error("{origin}: {detail}")]
    Definition {
        /// ``elementwise program `name` ``.
        origin: String,
        /// What is wrong, quoting the text.
        detail: String,
    },

    /// An N-D view ([`NdView`](crate::NdView)) could not be made or used as asked: a shape
    /// that does not fit its buffer, an axis out of range, shapes that do not broadcast, a
    /// reshape the strides do not allow. Nothing was launched.
    #[error("{op}: {detail}")]
    Shape {
        /// What was asked (``NdView::reshape``, ``kernel `add` ``).
        op: String,
        /// What is wrong, with the shapes involved, and what to do.
        detail: String,
    },

    /// An argument of a checked launch ([`ElementwiseKernel`](crate::ElementwiseKernel)) does not
    /// fit its parameter: element type, value or buffer, read-only or writable. Nothing was
    /// launched.
    #[error("kernel `{kernel}` of {origin}: argument `{parameter}`: {detail}")]
    Argument {
        /// Kernel name.
        kernel: String,
        /// Where the kernel comes from.
        origin: String,
        /// The parameter's name.
        parameter: String,
        /// What is wrong and what was expected.
        detail: String,
    },

    /// A launch, or a change of a kernel's launch attributes, was rejected before or by the
    /// driver.
    #[error("launch of kernel `{kernel}` of {origin} on device {device} failed: {cause}{}", fix_suffix(fix))]
    Launch {
        /// Kernel name.
        kernel: String,
        /// Where the kernel comes from.
        origin: String,
        /// Device ordinal.
        device: usize,
        /// What is wrong, with the values involved.
        cause: String,
        /// What to do about it, when known.
        fix: Option<String>,
    },

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

    /// A CUDA graph could not be built, instantiated, updated or launched as asked, or one of its
    /// host nodes panicked.
    #[error("CUDA graph on device {device}: {cause}{}", fix_suffix(fix))]
    Graph {
        /// Device ordinal of the graph's context.
        device: usize,
        /// What went wrong, with the values involved.
        cause: String,
        /// What to do about it, when known.
        fix: Option<String>,
    },

    /// A CUDA array, texture or surface could not be created or copied as asked: a texture
    /// description the hardware cannot honour (linear filtering of integers read as integers), a
    /// size over the device's limits, a misaligned buffer, a copy of the wrong length.
    #[error("cannot create {what}: {cause}{}", fix_suffix(fix))]
    Texture {
        /// What was being made or done, with its element type, size and device when known.
        what: String,
        /// What is wrong, with the values involved.
        cause: String,
        /// What to do about it, when known.
        fix: Option<String>,
    },

    /// A tuned launch (`NAME::tuned`) or the tuning records could not do what was asked: a
    /// launch formula that overflows or is not positive for these arguments, a record file that
    /// cannot be read, parsed or written.
    #[error("autotuning of {what}: {cause}{}", fix_suffix(fix))]
    Tune {
        /// The kernel and where it comes from, or the record file.
        what: String,
        /// What is wrong, with the values involved.
        cause: String,
        /// What to do about it, when known.
        fix: Option<String>,
    },

    /// A bounds-checked `#[cuda_embed::kernel]` indexed a slice or shared array out of range
    /// (reported by the kernel's `check_errors`). The offending thread returned; the context is
    /// still usable, but the launch's results are not to be trusted.
    #[error(
        "kernel `{kernel}` indexed out of bounds at {location}: the index is {index} but the length is {len} \
         (the thread returned; the context is still usable)"
    )]
    IndexOutOfBounds {
        /// The kernel's name.
        kernel: String,
        /// The Rust `file:line` of the indexing expression.
        location: String,
        /// The index.
        index: u64,
        /// The slice's length.
        len: u64,
    },

    /// A driver error from a cudarc call in user code, reached through `?`.
    #[error("CUDA driver error: {0}")]
    Cudarc(#[from] cudarc::driver::DriverError),
}

/// Debug prints the message (as `anyhow` does), so `fn main() -> Result<()>` is readable;
/// the alternate form `{:#?}` prints the variant's fields.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !f.alternate() {
            return fmt::Display::fmt(self, f);
        }
        match self {
            Error::NoDriver { detail } => f.debug_struct("NoDriver").field("detail", detail).finish(),
            Error::NoDevice { ordinal, count, cause } => f
                .debug_struct("NoDevice")
                .field("ordinal", ordinal)
                .field("count", count)
                .field("cause", cause)
                .finish(),
            Error::Driver { call, device, cause } => {
                f.debug_struct("Driver").field("call", call).field("device", device).field("cause", cause).finish()
            }
            Error::Compile { origin, arch, cause } => {
                f.debug_struct("Compile").field("origin", origin).field("arch", arch).field("cause", cause).finish()
            }
            Error::Load { origin, device, device_name, arch, cause, fix } => f
                .debug_struct("Load")
                .field("origin", origin)
                .field("device", device)
                .field("device_name", device_name)
                .field("arch", arch)
                .field("cause", cause)
                .field("fix", fix)
                .finish(),
            Error::Shape { op, detail } => f.debug_struct("Shape").field("op", op).field("detail", detail).finish(),
            Error::Definition { origin, detail } => {
                f.debug_struct("Definition").field("origin", origin).field("detail", detail).finish()
            }
            Error::Argument { kernel, origin, parameter, detail } => f
                .debug_struct("Argument")
                .field("kernel", kernel)
                .field("origin", origin)
                .field("parameter", parameter)
                .field("detail", detail)
                .finish(),
            Error::Signature { kernel, origin, detail } => f
                .debug_struct("Signature")
                .field("kernel", kernel)
                .field("origin", origin)
                .field("detail", detail)
                .finish(),
            Error::UnknownKernel { origin, kernel, known } => f
                .debug_struct("UnknownKernel")
                .field("origin", origin)
                .field("kernel", kernel)
                .field("known", known)
                .finish(),
            Error::Arguments { kernel, origin, expected, given } => f
                .debug_struct("Arguments")
                .field("kernel", kernel)
                .field("origin", origin)
                .field("expected", expected)
                .field("given", given)
                .finish(),
            Error::Length { kernel, origin, detail } => f
                .debug_struct("Length")
                .field("kernel", kernel)
                .field("origin", origin)
                .field("detail", detail)
                .finish(),
            Error::Launch { kernel, origin, device, cause, fix } => f
                .debug_struct("Launch")
                .field("kernel", kernel)
                .field("origin", origin)
                .field("device", device)
                .field("cause", cause)
                .field("fix", fix)
                .finish(),
            Error::Global { name, origin, device, cause, fix } => f
                .debug_struct("Global")
                .field("name", name)
                .field("origin", origin)
                .field("device", device)
                .field("cause", cause)
                .field("fix", fix)
                .finish(),
            Error::Graph { device, cause, fix } => {
                f.debug_struct("Graph").field("device", device).field("cause", cause).field("fix", fix).finish()
            }
            Error::Texture { what, cause, fix } => {
                f.debug_struct("Texture").field("what", what).field("cause", cause).field("fix", fix).finish()
            }
            Error::Tune { what, cause, fix } => {
                f.debug_struct("Tune").field("what", what).field("cause", cause).field("fix", fix).finish()
            }
            Error::IndexOutOfBounds { kernel, location, index, len } => f
                .debug_struct("IndexOutOfBounds")
                .field("kernel", kernel)
                .field("location", location)
                .field("index", index)
                .field("len", len)
                .finish(),
            Error::Cudarc(e) => f.debug_tuple("Cudarc").field(e).finish(),
        }
    }
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
        // The names come from the driver library; without one (an error built by hand, a test)
        // cudarc would panic looking for it: print the code alone.
        static DRIVER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if !*DRIVER.get_or_init(crate::driver_available) {
            return write!(f, "{:?}", self.0);
        }
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

/// `e`, said of kernel `kernel` of `origin` (see `launch::Who::named`): a bare driver failure
/// ([`Error::Driver`], from making the context current or from binding the arguments) becomes an
/// [`Error::Launch`] naming the kernel and where it comes from; other errors already name what
/// they are about.
#[cold]
#[inline(never)]
pub(crate) fn of_kernel(e: Error, kernel: &str, origin: &str) -> Error {
    match e {
        Error::Driver { call, device, cause } => Error::Launch {
            kernel: kernel.to_string(),
            origin: origin.to_string(),
            device,
            cause: format!("{call}: {cause}"),
            fix: None,
        },
        e => e,
    }
}
