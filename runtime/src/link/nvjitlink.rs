//! nvJitLink, loaded at run time with libloading: the only linker that takes LTO-IR.
//!
//! Found as `CUDA_EMBED_NVJITLINK` (a path), else `libnvJitLink.so.13`/`.so.12`/`.so` on the
//! loader's search path, else in `lib64/` or `lib/` of each toolkit root. Its functions are looked
//! up by their public names, then by the versioned names `nvJitLink.h` maps them to
//! (`__nvJitLinkCreate_13_0`, `__nvJitLinkCreate_12_0`).

use super::{ObjectCode, ObjectKind};
use libloading::Library;
use std::ffi::{c_char, c_void, CString};
use std::sync::OnceLock;

/// The variable naming the nvJitLink library to load.
pub const NVJITLINK_VAR: &str = "CUDA_EMBED_NVJITLINK";

type Handle = *mut c_void;
type Create = unsafe extern "C" fn(*mut Handle, u32, *const *const c_char) -> i32;
type Destroy = unsafe extern "C" fn(*mut Handle) -> i32;
type AddData = unsafe extern "C" fn(Handle, i32, *const c_void, usize, *const c_char) -> i32;
type Complete = unsafe extern "C" fn(Handle) -> i32;
type GetSize = unsafe extern "C" fn(Handle, *mut usize) -> i32;
type Get = unsafe extern "C" fn(Handle, *mut c_void) -> i32;
type Version = unsafe extern "C" fn(*mut u32, *mut u32) -> i32;

/// The loaded library and its entry points.
pub struct NvJitLink {
    create: Create,
    destroy: Destroy,
    add_data: AddData,
    complete: Complete,
    cubin_size: GetSize,
    cubin: Get,
    error_log_size: GetSize,
    error_log: Get,
    version: (u32, u32),
    path: String,
    // Keeps the functions above valid.
    _lib: Library,
}

impl NvJitLink {
    /// The process's nvJitLink, loaded on first use, or why there is none (with what to install).
    pub fn get() -> Result<&'static NvJitLink, String> {
        static ONE: OnceLock<Result<NvJitLink, String>> = OnceLock::new();
        ONE.get_or_init(load).as_ref().map_err(Clone::clone)
    }

    /// `nvJitLink 13.0 (path)`: what the cache key records.
    pub fn identity(&self) -> String {
        format!("nvJitLink {}.{} ({})", self.version.0, self.version.1, self.path)
    }

    /// Links `objects` for `sm_{arch}` into a cubin; `Err` holds nvJitLink's error log.
    pub fn link(
        &self,
        arch: u32,
        objects: &[ObjectCode],
        lto: bool,
        optimization: Option<u32>,
        debug: bool,
    ) -> Result<Vec<u8>, String> {
        let mut options = vec![format!("-arch=sm_{arch}")];
        if lto || objects.iter().any(|o| o.kind == ObjectKind::LtoIr) {
            options.push("-lto".into());
        }
        if let Some(o) = optimization {
            options.push(format!("-O{o}"));
        }
        if debug {
            options.push("-g".into());
        }
        let c_options: Vec<CString> = options.iter().filter_map(|o| CString::new(o.as_str()).ok()).collect();
        let ptrs: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: `ptrs` holds `len` valid C strings that outlive the call; a valid out-pointer.
        let r = unsafe { (self.create)(&mut handle, ptrs.len() as u32, ptrs.as_ptr()) };
        if r != 0 || handle.is_null() {
            return Err(format!("nvJitLinkCreate failed ({r}) with options {options:?}"));
        }
        let result = self.link_with(handle, objects);
        // SAFETY: created above, destroyed once.
        unsafe { (self.destroy)(&mut handle) };
        result
    }

    fn link_with(&self, handle: Handle, objects: &[ObjectCode]) -> Result<Vec<u8>, String> {
        for o in objects {
            let input = match o.kind {
                ObjectKind::Cubin => 1,
                ObjectKind::Ptx => 2,
                ObjectKind::LtoIr => 3,
                ObjectKind::Fatbin => 4,
                ObjectKind::Library => 6,
            };
            let data = o.linker_input();
            let name = CString::new(o.name.as_str()).unwrap_or_default();
            // SAFETY: a live handle; `data` holds the whole input (nvJitLink copies it); a valid C string.
            let r =
                unsafe { (self.add_data)(handle, input, data.as_ptr() as *const c_void, data.len(), name.as_ptr()) };
            if r != 0 {
                return Err(format!("cannot add `{}` ({}): error {r}\n{}", o.name, o.kind.label(), self.log(handle)));
            }
        }
        // SAFETY: a live handle with every input added.
        let r = unsafe { (self.complete)(handle) };
        if r != 0 {
            return Err(format!("the link failed (nvJitLink error {r}):\n{}", self.log(handle)));
        }
        let mut size = 0usize;
        // SAFETY: a live, completed handle; a valid out-pointer.
        let r = unsafe { (self.cubin_size)(handle, &mut size) };
        if r != 0 {
            return Err(format!("nvJitLinkGetLinkedCubinSize failed ({r})"));
        }
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` has the size nvJitLink reported.
        let r = unsafe { (self.cubin)(handle, cubin.as_mut_ptr() as *mut c_void) };
        if r != 0 {
            return Err(format!("nvJitLinkGetLinkedCubin failed ({r})"));
        }
        Ok(cubin)
    }

    fn log(&self, handle: Handle) -> String {
        let mut size = 0usize;
        // SAFETY: a live handle; a valid out-pointer.
        if unsafe { (self.error_log_size)(handle, &mut size) } != 0 || size == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` has the size nvJitLink reported.
        if unsafe { (self.error_log)(handle, buf.as_mut_ptr() as *mut c_void) } != 0 {
            return String::new();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).trim().to_string()
    }
}

fn candidates() -> Vec<String> {
    let mut out: Vec<String> = std::env::var(NVJITLINK_VAR).ok().filter(|v| !v.is_empty()).into_iter().collect();
    out.extend(["libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"].map(String::from));
    for root in super::object::toolkit_roots() {
        for dir in super::object::lib_dirs(&root) {
            for name in ["libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"] {
                let p = dir.join(name);
                if p.is_file() {
                    out.push(p.display().to_string());
                }
            }
        }
    }
    out
}

fn load() -> Result<NvJitLink, String> {
    let tried = candidates();
    for path in &tried {
        // SAFETY: loading nvJitLink runs its initialisers, which have no preconditions.
        let Ok(lib) = (unsafe { Library::new(path) }) else { continue };
        return bind(lib, path.clone());
    }
    Err(format!(
        "nvJitLink (needed to link LTO-IR) was not found (tried {}): install the CUDA toolkit or the nvidia-nvjitlink \
         wheel, or set {NVJITLINK_VAR} to libnvJitLink.so; without LTO, link PTX or cubins with the driver's linker",
        tried.join(", ")
    ))
}

fn bind(lib: Library, path: String) -> Result<NvJitLink, String> {
    fn sym<T: Copy>(lib: &Library, name: &str) -> Result<T, String> {
        for n in [name.to_string(), format!("__{name}_13_0"), format!("__{name}_12_0")] {
            // SAFETY: the nvJitLink entry points have the C signatures declared by the types
            // above (nvJitLink.h), whichever of the aliases resolves.
            if let Ok(s) = unsafe { lib.get::<T>(n.as_bytes()) } {
                return Ok(*s);
            }
        }
        Err(format!("the nvJitLink library has no `{name}`"))
    }
    let version = match sym::<Version>(&lib, "nvJitLinkVersion") {
        Ok(f) => {
            let (mut major, mut minor) = (0u32, 0u32);
            // SAFETY: valid out-pointers.
            unsafe { f(&mut major, &mut minor) };
            (major, minor)
        }
        Err(_) => (0, 0),
    };
    Ok(NvJitLink {
        create: sym(&lib, "nvJitLinkCreate")?,
        destroy: sym(&lib, "nvJitLinkDestroy")?,
        add_data: sym(&lib, "nvJitLinkAddData")?,
        complete: sym(&lib, "nvJitLinkComplete")?,
        cubin_size: sym(&lib, "nvJitLinkGetLinkedCubinSize")?,
        cubin: sym(&lib, "nvJitLinkGetLinkedCubin")?,
        error_log_size: sym(&lib, "nvJitLinkGetErrorLogSize")?,
        error_log: sym(&lib, "nvJitLinkGetErrorLog")?,
        version,
        path,
        _lib: lib,
    })
}
