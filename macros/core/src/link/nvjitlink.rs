//! nvJitLink at build time: the device link of a module compiled by build-time NVRTC.
//!
//! Like libnvrtc ([`crate::oracle::nvrtc`]), the library is opened with the system's dynamic
//! loader when a module needs it. [`find`] looks, in order: `CUDA_EMBED_NVJITLINK` (the file or
//! its directory; set but unusable is an error), the directory libnvrtc was loaded from (the
//! toolkit's `lib64/`, or the wheels' `nvidia/cu13/lib/`, where the `nvidia-nvjitlink` wheel puts
//! it), `lib64/` and `lib/` of each toolkit root, then the system loader. It must be at least as
//! new as the NVRTC that wrote the LTO-IR it links.

use crate::oracle::nvrtc::Nvrtc;
use libloading::Library;
use std::ffi::{c_char, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The variable naming the nvJitLink library to use (the same one the runtime reads).
pub const NVJITLINK_VAR: &str = "CUDA_EMBED_NVJITLINK";

const NAMES: &[&str] = &["libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"];

type Handle = *mut c_void;
type Create = unsafe extern "C" fn(*mut Handle, u32, *const *const c_char) -> i32;
type Destroy = unsafe extern "C" fn(*mut Handle) -> i32;
type AddData = unsafe extern "C" fn(Handle, i32, *const c_void, usize, *const c_char) -> i32;
type Complete = unsafe extern "C" fn(Handle) -> i32;
type GetSize = unsafe extern "C" fn(Handle, *mut usize) -> i32;
type Get = unsafe extern "C" fn(Handle, *mut c_void) -> i32;
type Version = unsafe extern "C" fn(*mut u32, *mut u32) -> i32;

/// What one input to a link is (`nvJitLinkInputType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Relocatable SASS (`NVJITLINK_INPUT_CUBIN`).
    Cubin = 1,
    /// LTO-IR (`NVJITLINK_INPUT_LTOIR`).
    LtoIr = 3,
    /// A static library, e.g. `libcudadevrt.a` (`NVJITLINK_INPUT_LIBRARY`).
    Library = 6,
}

/// A loaded nvJitLink.
#[derive(Clone)]
pub struct NvJitLink {
    /// Where it was found.
    pub path: PathBuf,
    /// `(major, minor)` from `nvJitLinkVersion` (`(0, 0)` where it has none).
    pub version: (u32, u32),
    lib: Arc<Library>,
}

impl std::fmt::Debug for NvJitLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvJitLink").field("path", &self.path).field("version", &self.version).finish()
    }
}

/// Finds and loads nvJitLink for the toolkit of `nvrtc`, or says what to install. Loaded once per
/// process.
pub fn find(nvrtc: &Nvrtc) -> Result<NvJitLink, String> {
    static FOUND: OnceLock<Result<NvJitLink, String>> = OnceLock::new();
    FOUND.get_or_init(|| search(&nvrtc.path, std::env::var_os(NVJITLINK_VAR))).clone()
}

/// [`find`] without the per-process memo; `nvrtc` is where libnvrtc was loaded from, and
/// `explicit` the value of [`NVJITLINK_VAR`] (passed in, so that tests give their own values
/// without changing the process's environment under other tests).
pub(crate) fn search(nvrtc: &Path, explicit: Option<std::ffi::OsString>) -> Result<NvJitLink, String> {
    if let Some(explicit) = explicit.filter(|s| !s.is_empty()) {
        let p = PathBuf::from(explicit);
        let file = if p.is_dir() { NAMES.iter().map(|n| p.join(n)).find(|f| f.is_file()) } else { Some(p.clone()) };
        let Some(file) = file else {
            return Err(format!("{NVJITLINK_VAR}={}: no {} there", p.display(), NAMES.join(" or ")));
        };
        return open(&file).map_err(|e| format!("{NVJITLINK_VAR}={}: {e}", p.display()));
    }
    let mut dirs: Vec<PathBuf> =
        nvrtc.parent().filter(|d| !d.as_os_str().is_empty()).map(Path::to_path_buf).into_iter().collect();
    for root in cuda_embed_source::options::toolkit_roots() {
        dirs.push(root.join("lib64"));
        dirs.push(root.join("lib"));
    }
    for dir in &dirs {
        for name in NAMES {
            let f = dir.join(name);
            if f.is_file() {
                if let Ok(l) = open(&f) {
                    return Ok(l);
                }
            }
        }
    }
    for name in NAMES {
        if let Ok(l) = open(Path::new(name)) {
            return Ok(l);
        }
    }
    Err(format!(
        "no nvJitLink was found (looked at {NVJITLINK_VAR}, next to {}, lib64/ and lib/ of $CUDA_EMBED_TOOLKIT, \
         $CUDA_PATH and $CUDA_HOME, and the system loader): install the CUDA toolkit's nvJitLink or the \
         nvidia-nvjitlink wheel of the same release as NVRTC (scripts/with-cuda installs it), or set {NVJITLINK_VAR} \
         to libnvJitLink.so",
        nvrtc.display()
    ))
}

fn open(path: &Path) -> Result<NvJitLink, String> {
    // SAFETY: loading nvJitLink runs its initialisers, which have no preconditions; every symbol
    // is looked up with its documented C signature.
    let lib = unsafe { Library::new(path) }.map_err(|e| format!("cannot load {}: {e}", path.display()))?;
    let mut l = NvJitLink { path: path.to_path_buf(), version: (0, 0), lib: Arc::new(lib) };
    // Checks that every entry point is there before the library is used.
    l.sym::<Create>("nvJitLinkCreate")?;
    l.sym::<Destroy>("nvJitLinkDestroy")?;
    l.sym::<AddData>("nvJitLinkAddData")?;
    l.sym::<Complete>("nvJitLinkComplete")?;
    l.sym::<GetSize>("nvJitLinkGetLinkedCubinSize")?;
    l.sym::<Get>("nvJitLinkGetLinkedCubin")?;
    l.sym::<GetSize>("nvJitLinkGetErrorLogSize")?;
    l.sym::<Get>("nvJitLinkGetErrorLog")?;
    if let Ok(version) = l.sym::<Version>("nvJitLinkVersion") {
        let (mut major, mut minor) = (0u32, 0u32);
        // SAFETY: valid out-pointers.
        if unsafe { version(&mut major, &mut minor) } == 0 {
            l.version = (major, minor);
        }
    }
    Ok(l)
}

impl NvJitLink {
    /// `nvJitLink 13.0`.
    pub fn name(&self) -> String {
        format!("nvJitLink {}.{}", self.version.0, self.version.1)
    }

    /// Looks up `name` or the versioned alias `nvJitLink.h` maps it to (`__nvJitLinkCreate_13_0`).
    fn sym<F: Copy>(&self, name: &str) -> Result<F, String> {
        for n in [name.to_string(), format!("__{name}_13_0"), format!("__{name}_12_0")] {
            // SAFETY: every `F` used with this is the entry point's C signature (nvJitLink.h),
            // whichever alias resolves.
            if let Ok(s) = unsafe { self.lib.get::<F>(n.as_bytes()) } {
                return Ok(*s);
            }
        }
        Err(format!("{} has no `{name}`", self.path.display()))
    }

    /// Links `inputs` (`(kind, name, bytes)`; the name is how the log refers to it) for `sm` (e.g.
    /// `sm_80`) into a cubin, with link-time optimisation when `lto`. `Err` is nvJitLink's log.
    pub fn link(&self, sm: &str, lto: bool, inputs: &[(Input, &str, &[u8])]) -> Result<Vec<u8>, String> {
        let mut options = vec![format!("-arch={sm}")];
        if lto {
            options.push("-lto".into());
        }
        let c_options: Vec<CString> = options.iter().filter_map(|o| CString::new(o.as_str()).ok()).collect();
        let ptrs: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
        let (create, destroy) = (self.sym::<Create>("nvJitLinkCreate")?, self.sym::<Destroy>("nvJitLinkDestroy")?);
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: `ptrs` holds valid C strings that outlive the call; a valid out-pointer.
        let r = unsafe { create(&mut handle, ptrs.len() as u32, ptrs.as_ptr()) };
        if r != 0 || handle.is_null() {
            return Err(format!("nvJitLinkCreate failed ({r}) with options {options:?}"));
        }
        let result = self.link_with(handle, inputs);
        // SAFETY: created above, destroyed once.
        unsafe { destroy(&mut handle) };
        result
    }

    fn link_with(&self, handle: Handle, inputs: &[(Input, &str, &[u8])]) -> Result<Vec<u8>, String> {
        let add = self.sym::<AddData>("nvJitLinkAddData")?;
        for (kind, name, bytes) in inputs {
            let c_name = CString::new(*name).unwrap_or_default();
            // SAFETY: a live handle; `bytes` is the whole input (nvJitLink copies it); a valid C string.
            let r = unsafe { add(handle, *kind as i32, bytes.as_ptr() as *const c_void, bytes.len(), c_name.as_ptr()) };
            if r != 0 {
                return Err(format!("nvJitLink could not add `{name}` (error {r}):\n{}", self.log(handle)));
            }
        }
        let complete = self.sym::<Complete>("nvJitLinkComplete")?;
        // SAFETY: a live handle with every input added.
        let r = unsafe { complete(handle) };
        if r != 0 {
            let log = self.log(handle);
            return Err(if log.is_empty() { format!("nvJitLinkComplete failed ({r})") } else { log });
        }
        let (size_of, get) =
            (self.sym::<GetSize>("nvJitLinkGetLinkedCubinSize")?, self.sym::<Get>("nvJitLinkGetLinkedCubin")?);
        let mut size = 0usize;
        // SAFETY: a live, completed handle; a valid out-pointer.
        let r = unsafe { size_of(handle, &mut size) };
        if r != 0 || size == 0 {
            return Err(format!("nvJitLinkGetLinkedCubinSize failed ({r})"));
        }
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` has the size nvJitLink reported.
        let r = unsafe { get(handle, cubin.as_mut_ptr() as *mut c_void) };
        if r != 0 {
            return Err(format!("nvJitLinkGetLinkedCubin failed ({r})"));
        }
        Ok(cubin)
    }

    fn log(&self, handle: Handle) -> String {
        let (Ok(size_of), Ok(get)) =
            (self.sym::<GetSize>("nvJitLinkGetErrorLogSize"), self.sym::<Get>("nvJitLinkGetErrorLog"))
        else {
            return String::new();
        };
        let mut size = 0usize;
        // SAFETY: a live handle; a valid out-pointer.
        if unsafe { size_of(handle, &mut size) } != 0 || size == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` has the size nvJitLink reported.
        if unsafe { get(handle, buf.as_mut_ptr() as *mut c_void) } != 0 {
            return String::new();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).trim().to_string()
    }
}
