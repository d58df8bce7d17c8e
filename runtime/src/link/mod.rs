//! Linking at run time: [`Program::compile_to`] makes relocatable [`ObjectCode`] (PTX, cubin or
//! LTO-IR) and a [`Linker`] joins objects, cubins, fatbins and libraries (`libcudadevrt`, for
//! kernels that launch kernels) into one [`ProgramModule`], whose kernels are looked up and checked
//! like any program's.
//!
//! Two linkers, chosen by what is linked:
//! - the driver's (`cuLinkCreate`/`cuLinkAddData`/`cuLinkComplete`, through cudarc's bindings):
//!   always there with the driver; takes PTX, cubins, fatbins and `.a` libraries, but not LTO-IR
//!   (CUDA 12 removed the driver's link-time optimisation).
//! - nvJitLink (`libnvJitLink.so`, loaded when first needed, see [`nvjitlink`]): used for LTO —
//!   any LTO-IR object or [`Linker::lto`] — since only it optimises LTO-IR across objects. Where it
//!   cannot be found the error says what to install (the `nvidia-nvjitlink` wheel, or the toolkit).
//!
//! Linked cubins are cached on disk like a [`Program`]'s, under `<cache dir>/link/`, keyed by the
//! linker (driver version or nvJitLink version), the architecture, the options and every object's
//! kind and bytes: a hit loads the cubin without linking.

pub mod nvjitlink;
mod object;
pub use crate::program::nvrtc::CodeKind;
pub use object::{ObjectCode, ObjectKind};
#[cfg(test)]
mod tests;

use crate::driver::bind;
use crate::error::{DriverCode, Error, Result};
use crate::program::module::{ModuleInner, ProgramModule};
use crate::program::nvrtc;
use crate::Program;
use cuda_embed_source::cache::{Entry, Store};
use cuda_embed_source::key::Key;
use cudarc::driver::{sys, CudaContext};
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::Arc;

/// Joins device code into one loadable module: objects from [`Program::compile_to`], files,
/// cubins, fatbins and libraries such as [`ObjectCode::device_runtime`].
///
/// ```no_run
/// use cuda_embed_runtime::{link::{CodeKind, Linker, ObjectCode}, Program};
/// let ctx = cuda_embed_runtime::context(0)?;
/// let arch = 90;
/// let math = Program::new("__device__ float sq(float x) { return x * x; }").compile_to(CodeKind::Ptx, arch)?;
/// let main = Program::new(r#"__device__ float sq(float);
///     extern "C" __global__ void k(float* y) { y[threadIdx.x] = sq(y[threadIdx.x]); }"#)
///     .compile_to(CodeKind::Ptx, arch)?;
/// let module = Linker::new("squares").object(main).object(math).object(ObjectCode::device_runtime()?).load(&ctx)?;
/// let k = module.kernel_checked("k")?;
/// # Ok::<(), cuda_embed_runtime::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Linker {
    name: String,
    objects: Vec<ObjectCode>,
    lto: bool,
    optimization: Option<u32>,
    debug: bool,
    cache_dir: Option<PathBuf>,
    cache: bool,
    linker: Option<LinkerKind>,
}

/// Which linker did (or would do) the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkerKind {
    /// The driver's `cuLink*`.
    Driver,
    /// nvJitLink.
    NvJitLink,
}

impl Linker {
    /// An empty linker; `name` names the linked module in errors.
    pub fn new(name: impl Into<String>) -> Linker {
        Linker {
            name: name.into(),
            objects: Vec::new(),
            lto: false,
            optimization: None,
            debug: false,
            cache_dir: None,
            cache: true,
            linker: None,
        }
    }

    /// Adds an object (order matters for libraries: add them after the objects that use them).
    pub fn object(mut self, object: ObjectCode) -> Linker {
        self.objects.push(object);
        self
    }

    /// Link-time optimisation (nvJitLink's `-lto`); implied by any LTO-IR object.
    pub fn lto(mut self, on: bool) -> Linker {
        self.lto = on;
        self
    }

    /// Optimisation level of the final code generation (0-4; the linker's default otherwise).
    pub fn optimization(mut self, level: u32) -> Linker {
        self.optimization = Some(level.min(4));
        self
    }

    /// Device debug information (`-g`).
    pub fn debug(mut self, on: bool) -> Linker {
        self.debug = on;
        self
    }

    /// Caches linked cubins under `dir/link/` instead of the default cache directory.
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Linker {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Neither reads nor writes the disk cache: every [`Linker::load`] links (as cuda.core's
    /// `Linker` does).
    pub fn without_cache(mut self) -> Linker {
        self.cache = false;
        self
    }

    /// Links with `kind` instead of the one [`Linker::linker_kind`] would choose (nvJitLink for
    /// PTX and cubins too; the driver's linker for LTO-IR fails with a clear error).
    pub fn with_linker(mut self, kind: LinkerKind) -> Linker {
        self.linker = Some(kind);
        self
    }

    /// The linker this link uses: the one [`Linker::with_linker`] named, else nvJitLink for LTO
    /// and the driver's otherwise.
    pub fn linker_kind(&self) -> LinkerKind {
        if let Some(k) = self.linker {
            return k;
        }
        if self.lto || self.objects.iter().any(|o| o.kind == ObjectKind::LtoIr) {
            LinkerKind::NvJitLink
        } else {
            LinkerKind::Driver
        }
    }

    fn error(&self, arch: u32, cause: String) -> Error {
        Error::Compile { origin: format!("linker `{}`", self.name), arch, cause }
    }

    /// The cache key of this link for `sm_{arch}` by the linker identified by `linker`.
    fn key(&self, linker: &str, arch: u32) -> String {
        let mut k = Key::new("cuda-embed run-time link v2");
        k.field("linker", linker)
            .field("arch", arch.to_le_bytes())
            .field("lto", [self.lto as u8])
            .field("debug", [self.debug as u8])
            .field("optimization", self.optimization.map_or(-1i64, i64::from).to_le_bytes())
            .list("kinds", self.objects.iter().map(|o| o.kind.label()))
            .list("objects", self.objects.iter().map(|o| o.digest().as_slice()));
        k.finish()
    }

    /// Links for `sm_{arch}` (the driver's linker needs a current context: see [`Linker::load`]),
    /// or takes the cubin from the disk cache. Returns the cubin and whether it was cached.
    fn link_for(&self, arch: u32) -> Result<(Vec<u8>, bool, Option<PathBuf>)> {
        if self.objects.is_empty() {
            return Err(Error::Definition {
                origin: format!("linker `{}`", self.name),
                detail: "nothing to link: add objects with `Linker::object`".into(),
            });
        }
        let kind = self.linker_kind();
        let identity = match kind {
            LinkerKind::Driver => format!("driver {}", driver_version()),
            LinkerKind::NvJitLink => nvjitlink::NvJitLink::get().map_err(|e| self.error(arch, e))?.identity(),
        };
        // Without the cache, no key (it hashes every object's bytes) and no store.
        let cached = self.cache.then(|| {
            let dir =
                self.cache_dir.clone().unwrap_or_else(nvrtc::cache_dir).join(cuda_embed_source::cache::LINK_SUBDIR);
            (self.key(&identity, arch), Store::new(dir, "cubin"))
        });
        if let Some((key, store)) = &cached {
            if let Some(e) = store.read(key) {
                if let Ok([cubin]) = <[Vec<u8>; 1]>::try_from(e.blobs) {
                    if !cubin.is_empty() {
                        return Ok((cubin, true, Some(store.path(key))));
                    }
                }
            }
        }
        let cubin = match kind {
            LinkerKind::Driver => self.link_driver().map_err(|e| self.error(arch, e))?,
            LinkerKind::NvJitLink => nvjitlink::NvJitLink::get()
                .and_then(|l| l.link(arch, &self.objects, self.lto, self.optimization, self.debug))
                .map_err(|e| self.error(arch, e))?,
        };
        let Some((key, store)) = cached else {
            return Ok((cubin, false, None));
        };
        let entry = Entry { blobs: vec![cubin], strings: Vec::new(), deps: Vec::new() };
        let file = store.write_atomic(&key, &entry).ok();
        Ok((entry.blobs.into_iter().next().unwrap_or_default(), false, file))
    }

    /// Links through the driver (`cuLink*`) for the current context's device.
    fn link_driver(&self) -> std::result::Result<Vec<u8>, String> {
        let mut log = vec![0u8; 16384];
        use sys::CUjit_option::*;
        let mut options = vec![CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values: Vec<*mut c_void> =
            vec![log.as_mut_ptr() as *mut c_void, std::ptr::without_provenance_mut::<c_void>(log.len())];
        if let Some(level) = self.optimization {
            options.push(CU_JIT_OPTIMIZATION_LEVEL);
            values.push(std::ptr::without_provenance_mut::<c_void>(level as usize));
        }
        if self.debug {
            options.push(CU_JIT_GENERATE_DEBUG_INFO);
            values.push(std::ptr::without_provenance_mut::<c_void>(1));
        }
        let mut state: sys::CUlinkState = std::ptr::null_mut();
        // SAFETY: the option and value arrays have the same length and, with the log buffers,
        // outlive the link state (destroyed below before they are dropped).
        let r = unsafe {
            sys::cuLinkCreate_v2(options.len() as u32, options.as_mut_ptr(), values.as_mut_ptr(), &mut state)
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(format!("cuLinkCreate failed: {}", DriverCode(r)));
        }
        let text = |buf: &[u8]| {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).trim().to_string()
        };
        let result = (|| {
            for o in &self.objects {
                let input = match o.kind {
                    ObjectKind::Ptx => sys::CUjitInputType::CU_JIT_INPUT_PTX,
                    ObjectKind::Cubin => sys::CUjitInputType::CU_JIT_INPUT_CUBIN,
                    ObjectKind::Fatbin => sys::CUjitInputType::CU_JIT_INPUT_FATBINARY,
                    ObjectKind::Library => sys::CUjitInputType::CU_JIT_INPUT_LIBRARY,
                    ObjectKind::LtoIr => {
                        return Err(format!(
                            "`{}` is LTO-IR, which the driver's linker cannot take (CUDA 12 removed its LTO): link it with \
                             nvJitLink (the default for LTO-IR objects)",
                            o.name
                        ))
                    }
                };
                let data = o.linker_input();
                let name = CString::new(o.name.as_str()).unwrap_or_default();
                // SAFETY: a live link state; `data` holds the whole input and outlives the call
                // (the driver copies it and never writes through the pointer, which the C
                // signature leaves non-const); a valid C string; no per-input options.
                let r = unsafe {
                    sys::cuLinkAddData_v2(
                        state,
                        input,
                        data.as_ptr() as *mut c_void,
                        data.len(),
                        name.as_ptr(),
                        0,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                    )
                };
                if r != sys::CUresult::CUDA_SUCCESS {
                    return Err(format!(
                        "cannot add `{}` ({}): {}\n{}",
                        o.name,
                        o.kind.label(),
                        DriverCode(r),
                        text(&log)
                    ));
                }
            }
            let mut cubin: *mut c_void = std::ptr::null_mut();
            let mut size = 0usize;
            // SAFETY: a live link state with every input added; valid out-pointers.
            let r = unsafe { sys::cuLinkComplete(state, &mut cubin, &mut size) };
            if r != sys::CUresult::CUDA_SUCCESS || cubin.is_null() {
                return Err(format!("the link failed: {}\n{}", DriverCode(r), text(&log)));
            }
            // SAFETY: the driver's cubin is `size` bytes, owned by the state, copied before it is destroyed.
            Ok(unsafe { std::slice::from_raw_parts(cubin as *const u8, size) }.to_vec())
        })();
        // SAFETY: created above, destroyed once.
        unsafe { sys::cuLinkDestroy(state) };
        result
    }

    /// Links for `ctx`'s device (or takes the cubin from the disk cache) without loading it: the
    /// linked cubin, to store or to load later ([`ObjectKind::Cubin`]).
    pub fn link(&self, ctx: &Arc<CudaContext>) -> Result<ObjectCode> {
        let (_, arch) = device_arch(ctx)?;
        let (cubin, from_cache, _) = self.link_for(arch)?;
        let mut out = ObjectCode::from_bytes(ObjectKind::Cubin, format!("{}.cubin", self.name), cubin);
        out.symbols = self.objects.iter().flat_map(|o| o.symbols.iter().cloned()).collect();
        out.from_cache = from_cache;
        Ok(out)
    }

    /// Links for `ctx`'s device (or takes the cubin from the disk cache) and loads it: a
    /// [`ProgramModule`] whose kernels are found by name expression of any linked program,
    /// `extern "C"` name or symbol, and checked by [`ProgramModule::kernel_checked`] against the
    /// linked programs' sources.
    pub fn load(&self, ctx: &Arc<CudaContext>) -> Result<ProgramModule> {
        let (device, arch) = device_arch(ctx)?;
        let (cubin, from_cache, cache_file) = self.link_for(arch)?;
        let origin = format!("linker `{}`", self.name);
        let module = crate::module::image::load_raw(&cubin).map_err(|(code, log)| Error::Load {
            origin: origin.clone(),
            device,
            device_name: ctx.name().unwrap_or_else(|_| "unknown GPU".into()),
            arch,
            cause: crate::module::image::with_log(code, &log),
            fix: None,
        })?;
        let sources: Vec<&ObjectCode> = self.objects.iter().filter(|o| !o.source.is_empty()).collect();
        Ok(ProgramModule {
            inner: Arc::new(ModuleInner {
                ctx: ctx.clone(),
                module,
                origin,
                program: self.name.clone(),
                arch,
                names: self.objects.iter().flat_map(|o| o.symbols.iter().cloned()).collect(),
                param_counts: cuda_embed_source::cubin::param_counts(&cubin),
                from_cache,
                cache_file,
                source: sources.iter().map(|o| o.source.as_str()).collect::<Vec<_>>().join("\n"),
                options: sources.first().map(|o| o.options.clone()).unwrap_or_default(),
                headers: sources.iter().flat_map(|o| o.headers.iter().cloned()).collect(),
            }),
        })
    }
}

/// Binds `ctx` to this thread (the driver's linker needs a current context) and returns its
/// device ordinal and architecture (`90` for sm_90).
fn device_arch(ctx: &Arc<CudaContext>) -> Result<(usize, u32)> {
    let device = ctx.ordinal();
    bind(ctx)?;
    let (major, minor) = ctx.compute_capability().map_err(|e| Error::Driver {
        call: "cuDeviceGetAttribute",
        device,
        cause: DriverCode(e.0),
    })?;
    Ok((device, (major * 10 + minor) as u32))
}

fn driver_version() -> i32 {
    static VERSION: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *VERSION.get_or_init(|| {
        let mut v = 0i32;
        // SAFETY: a valid out-pointer; works before any context exists.
        let _ = unsafe { sys::cuDriverGetVersion(&mut v) };
        v
    })
}

/// The first load of a separately compiled module built with no compiler at build time
/// ([`ImageKind::Linked`](crate::module::spec::Image)): each unit compiled by NVRTC for `ctx`'s
/// device (relocatable cubin, or LTO-IR with `lto`; both cached on disk as
/// [`Program::compile_to`] caches them), then linked with `libcudadevrt` (the driver's linker, or
/// nvJitLink with `lto`; cached as [`Linker`] caches). Returns the cubin and the symbol of every
/// kernel, then every global, in the spec's order.
pub(crate) fn link_units(
    spec: &crate::module::spec::ModuleSpec,
    units: &[crate::module::spec::LinkedUnit],
    headers: &[(&str, &str)],
    lto: bool,
    ctx: &Arc<CudaContext>,
) -> Result<(Vec<u8>, Vec<String>)> {
    let (_, arch) = device_arch(ctx)?;
    let exprs: Vec<&str> =
        spec.kernels.iter().map(|k| k.name_expression).chain(spec.globals.iter().map(|g| g.name_expression)).collect();
    let kind = if lto { CodeKind::LtoIr } else { CodeKind::Cubin };
    let mut linker = Linker::new(spec.origin).lto(lto);
    for u in units {
        let mut program = Program::new(u.source).name(u.name).options(u.options.iter().copied());
        for (name, text) in headers {
            program = program.header(*name, *text);
        }
        for &i in u.exprs {
            if let Some(e) = exprs.get(i) {
                program = program.name_expression(*e);
            }
        }
        linker = linker.object(program.compile_to(kind, arch)?);
    }
    let devrt = ObjectCode::device_runtime().map_err(|e| Error::Compile {
        origin: spec.origin.to_string(),
        arch,
        cause: format!(
            "this module (`rdc`, `link` or `lto`, built with no compiler) is linked at first use with the CUDA \
             device runtime library: {e}"
        ),
    })?;
    let linked = linker.object(devrt).link(ctx)?;
    let symbols = exprs
        .iter()
        .map(|e| {
            linked.symbols.iter().find(|(x, _)| x == e).map(|(_, s)| s.clone()).ok_or_else(|| Error::Compile {
                origin: spec.origin.to_string(),
                arch,
                cause: format!("no unit of the module resolved `{e}`"),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((linked.bytes.to_vec(), symbols))
}
