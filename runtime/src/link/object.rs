//! Relocatable objects: what [`Program::compile_to`] makes (PTX, cubin or LTO-IR), objects read
//! from files or bytes, and the CUDA device runtime library found in the toolkit.

use crate::error::{Error, Result};
use crate::program::nvrtc::{self, CodeKind, Unit};
use crate::Program;
use cuda_embed_source::cache::{Entry, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What an [`ObjectCode`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    /// PTX text.
    Ptx,
    /// A cubin (ELF).
    Cubin,
    /// A fatbin.
    Fatbin,
    /// LTO-IR.
    LtoIr,
    /// An archive of device code (`libcudadevrt.a`, a library built by `nvcc -lib`).
    Library,
}

impl ObjectKind {
    pub(super) fn label(self) -> &'static str {
        match self {
            ObjectKind::Ptx => "ptx",
            ObjectKind::Cubin => "cubin",
            ObjectKind::Fatbin => "fatbin",
            ObjectKind::LtoIr => "ltoir",
            ObjectKind::Library => "library",
        }
    }

    /// The kind of a file by its extension: `.ptx`, `.cubin`, `.fatbin`, `.ltoir`, `.a`/`.lib`.
    ///
    /// ```
    /// use cuda_embed_runtime::link::ObjectKind;
    /// assert_eq!(ObjectKind::of_path("kernels/libcudadevrt.a".as_ref()), Some(ObjectKind::Library));
    /// assert_eq!(ObjectKind::of_path("k.o".as_ref()), None);
    /// ```
    pub fn of_path(path: &Path) -> Option<ObjectKind> {
        Some(match path.extension()?.to_str()? {
            "ptx" => ObjectKind::Ptx,
            "cubin" => ObjectKind::Cubin,
            "fatbin" => ObjectKind::Fatbin,
            "ltoir" => ObjectKind::LtoIr,
            "a" | "lib" => ObjectKind::Library,
            _ => return None,
        })
    }
}

/// Device code to link: compiled by [`Program::compile_to`], read from a file, or given as bytes.
#[derive(Debug, Clone)]
pub struct ObjectCode {
    pub(super) kind: ObjectKind,
    pub(super) name: String,
    /// Shared by clones (a library is a megabyte) and never changed.
    pub(super) bytes: Arc<[u8]>,
    /// SHA-256 of `bytes`, computed at the first cache key that needs it and shared by clones.
    pub(super) digest: Arc<std::sync::OnceLock<cuda_embed_source::key::Digest>>,
    /// (name expression, lowered symbol), from the program that made it.
    pub(super) symbols: Vec<(String, String)>,
    /// The program's source and options, for `kernel_checked` on the linked module.
    pub(super) source: String,
    pub(super) options: Vec<String>,
    pub(super) headers: Vec<String>,
    pub(super) from_cache: bool,
}

impl ObjectCode {
    /// Code of `kind` given as bytes, named `name` in the linker's log.
    ///
    /// ```
    /// use cuda_embed_runtime::link::{ObjectCode, ObjectKind};
    /// let ptx = ObjectCode::from_bytes(ObjectKind::Ptx, "k.ptx", b".version 8.0\n".to_vec());
    /// assert_eq!(ptx.kind(), ObjectKind::Ptx);
    /// ```
    pub fn from_bytes(kind: ObjectKind, name: impl Into<String>, bytes: Vec<u8>) -> ObjectCode {
        ObjectCode {
            kind,
            name: name.into(),
            bytes: bytes.into(),
            digest: Arc::default(),
            symbols: Vec::new(),
            source: String::new(),
            options: Vec::new(),
            headers: Vec::new(),
            from_cache: false,
        }
    }

    /// Reads a file whose extension says its kind (see [`ObjectKind::of_path`]).
    pub fn from_file(path: impl AsRef<Path>) -> Result<ObjectCode> {
        let path = path.as_ref();
        let bad = |detail: String| Error::Definition { origin: format!("object `{}`", path.display()), detail };
        let kind = ObjectKind::of_path(path).ok_or_else(|| {
            bad("the extension does not say what it holds: expected .ptx, .cubin, .fatbin, .ltoir or .a".into())
        })?;
        let bytes = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
        Ok(ObjectCode::from_bytes(kind, path.display().to_string(), bytes))
    }

    /// The CUDA device runtime library, `libcudadevrt.a`, which kernels that launch kernels
    /// (`<<<>>>` in device code) are linked with. Found in `lib64/`, `lib/` or `targets/*/lib/` of
    /// each toolkit root (`CUDA_EMBED_TOOLKIT`, `CUDA_PATH`, `CUDA_HOME`, the directory above the
    /// `bin/` of an `nvcc` on `PATH`, `/usr/local/cuda`).
    pub fn device_runtime() -> Result<ObjectCode> {
        let roots = toolkit_roots();
        for root in &roots {
            for dir in lib_dirs(root) {
                let p = dir.join("libcudadevrt.a");
                if p.is_file() {
                    return device_runtime_at(&p);
                }
            }
        }
        Err(Error::Definition {
            origin: "the device runtime library".into(),
            detail: format!(
                "libcudadevrt.a was not found in lib64/, lib/ or targets/*/lib/ of {}: install the CUDA toolkit (or the \
                 nvidia-cuda-runtime wheel, which ships lib/libcudadevrt.a) and set CUDA_EMBED_TOOLKIT to its root",
                if roots.is_empty() {
                    "any toolkit root (none is set)".to_string()
                } else {
                    roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
                }
            ),
        })
    }

    /// What it holds.
    pub fn kind(&self) -> ObjectKind {
        self.kind
    }

    /// Its name in the linker's log.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The code.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// `(name expression, symbol)` of each name expression of the program that made it.
    pub fn symbols(&self) -> &[(String, String)] {
        &self.symbols
    }

    /// Whether it came from the disk cache (NVRTC did not run).
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// The bytes a linker reads: PTX with a terminating NUL (a copy), anything else as it is (a
    /// library such as `libcudadevrt.a` is a megabyte, not copied for each link).
    pub(super) fn linker_input(&self) -> std::borrow::Cow<'_, [u8]> {
        if self.kind == ObjectKind::Ptx && self.bytes.last() != Some(&0) {
            let mut data = Vec::with_capacity(self.bytes.len() + 1);
            data.extend_from_slice(&self.bytes);
            data.push(0);
            return data.into();
        }
        self.bytes[..].into()
    }

    /// SHA-256 of the bytes, computed once per object and its clones.
    pub(super) fn digest(&self) -> &cuda_embed_source::key::Digest {
        self.digest.get_or_init(|| cuda_embed_source::key::sha256(&self.bytes))
    }
}

/// The library at `path`, read once per process while its size and modification time stay the
/// same: the clones share its bytes and its cache-key digest, so a link that takes it from the
/// disk cache neither reads nor hashes a megabyte again.
fn device_runtime_at(path: &Path) -> Result<ObjectCode> {
    type Seen = (PathBuf, Option<(u64, std::time::SystemTime)>, ObjectCode);
    static READ: std::sync::Mutex<Option<Seen>> = std::sync::Mutex::new(None);
    let stamp = std::fs::metadata(path).ok().and_then(|m| Some((m.len(), m.modified().ok()?)));
    let mut read = READ.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((p, s, o)) = read.as_ref() {
        if p == path && stamp.is_some() && *s == stamp {
            return Ok(o.clone());
        }
    }
    let o = ObjectCode::from_file(path)?;
    *read = Some((path.to_path_buf(), stamp, o.clone()));
    Ok(o)
}

pub(super) fn toolkit_roots() -> Vec<PathBuf> {
    let mut roots = cuda_embed_source::options::toolkit_roots();
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            if d.join("nvcc").is_file() {
                roots.extend(d.parent().map(Path::to_path_buf));
            }
        }
    }
    roots.push(PathBuf::from("/usr/local/cuda"));
    roots.dedup();
    roots
}

pub(super) fn lib_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.join("lib64"), root.join("lib")];
    if let Ok(targets) = std::fs::read_dir(root.join("targets")) {
        dirs.extend(targets.filter_map(|t| t.ok()).map(|t| t.path().join("lib")));
    }
    dirs
}

impl Program {
    /// Compiles the program to relocatable code of `kind` for `sm_{arch}` (`-rdc=true`; LTO-IR
    /// with `-dlto`), for a [`Linker`](crate::link::Linker), or takes it from the disk cache (the key is the
    /// program's, with these flags among the options). Needs NVRTC, not a GPU.
    ///
    /// ```no_run
    /// use cuda_embed_runtime::{link::CodeKind, Program};
    /// let math = Program::new("__device__ float sq(float x) { return x * x; }").name("math.cu");
    /// let object = math.compile_to(CodeKind::Ptx, 90)?;
    /// # Ok::<(), cuda_embed_runtime::Error>(())
    /// ```
    pub fn compile_to(&self, kind: CodeKind, arch: u32) -> Result<ObjectCode> {
        let mut options = self.nvrtc_options().to_vec();
        options.push("-rdc=true".into());
        if kind == CodeKind::LtoIr {
            options.push("-dlto".into());
        }
        let (name, source, headers, exprs) = self.parts();
        let unit =
            Unit { name, source, options: &options, headers, name_expressions: exprs, digest: None, scanned: None };
        let err = |cause: String| Error::Compile { origin: crate::program::origin_of(name), arch, cause };
        let identity = nvrtc::compiler_identity().map_err(err)?;
        let key = unit.key(&[format!("{identity}; output {kind:?}")], arch, &unit.scan());
        let store = Store::new(self.store_dir(), "obj");
        let object = |bytes: Vec<u8>, symbols: Vec<String>, from_cache: bool| ObjectCode {
            digest: Arc::default(),
            kind: match kind {
                CodeKind::Ptx => ObjectKind::Ptx,
                CodeKind::Cubin => ObjectKind::Cubin,
                CodeKind::LtoIr => ObjectKind::LtoIr,
            },
            name: name.to_string(),
            bytes: bytes.into(),
            symbols: exprs.iter().cloned().zip(symbols).collect(),
            source: source.to_string(),
            options: options.clone(),
            headers: headers.iter().map(|h| h.1.clone()).collect(),
            from_cache,
        };
        if let Some(e) = store.read(&key) {
            if let Ok([bytes]) = <[Vec<u8>; 1]>::try_from(e.blobs) {
                if !bytes.is_empty() && e.strings.len() == exprs.len() {
                    return Ok(object(bytes, e.strings, true));
                }
            }
        }
        let (bytes, symbols) = nvrtc::run_nvrtc_to(name, source, headers, &options, exprs, arch, kind)
            .map_err(|log| err(format!("NVRTC could not compile it:\n{log}")))?;
        let entry = Entry { blobs: vec![bytes], strings: symbols, deps: Vec::new() };
        let _ = store.write_atomic(&key, &entry); // an unwritable cache only costs time
        let Entry { blobs, strings, .. } = entry;
        Ok(object(blobs.into_iter().next().unwrap_or_default(), strings, false))
    }
}
