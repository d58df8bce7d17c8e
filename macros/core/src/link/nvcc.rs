//! The nvcc side of separate compilation: each translation unit compiled to relocatable device
//! code (a relocatable fatbin; with LTO an object holding LTO-IR), then `nvlink` per
//! architecture with `libcudadevrt`, and `fatbinary` joining the linked cubins into the image.
//!
//! nvlink and fatbinary are called directly rather than through `nvcc -dlink`: with LTO, nvlink
//! loads libnvvm from `-nvvmpath`/lib64, and the pip wheels put libnvvm in `lib/` instead, where
//! `nvcc -dlink` never looks (see [`nvvm_dir`]).
//!
//! Each unit's compile is cached like a plain module ([`crate::oracle::nvcc`]): keyed by the nvcc
//! version, the mode, the arguments and the unit's full text; the headers it read are recorded
//! and checked on every hit. The link is not cached (it takes a fraction of the compile's time).

use crate::oracle::nvcc::{clean_log, parse_depfile, Arch, Nvcc};
use cuda_embed_source::cache::{self, Dep, Entry, Store};
use cuda_embed_source::key::Key;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The key scheme of relocatable unit compiles.
const KEY_SCHEME: &str = "cuda-embed rdc unit v1";

/// One translation unit's relocatable code.
#[derive(Debug, Clone)]
pub struct Object {
    /// The relocatable fatbin (or, with LTO, the host object holding the LTO-IR).
    pub bytes: Vec<u8>,
    /// Its PTX for the lowest architecture (probes, `.entry` lists, symbols).
    pub ptx: String,
    /// Headers it read outside the toolkit.
    pub deps: Vec<PathBuf>,
    /// Build-time NVRTC: `(sm_XX, relocatable cubin or LTO-IR)` per architecture, the link's
    /// inputs (`bytes` is then empty); empty for nvcc.
    pub per_arch: Vec<(String, Vec<u8>)>,
    /// Build-time NVRTC: `(probe key, symbol)` of the kernel addresses it resolved as name
    /// expressions; empty for nvcc (whose PTX holds them).
    pub symbols: Vec<(String, String)>,
}

/// How units are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `-rdc=true`: relocatable SASS, linked by nvlink.
    Rdc,
    /// `-dc` with `code=lto_XX`: LTO-IR, optimised across units at link time.
    Lto,
}

/// nvcc's arguments for one unit in `mode`: the plain module's arguments with the code
/// generation replaced (LTO: `lto_XX` per arch, plus PTX of the lowest for the probes).
pub fn unit_args(mode: Mode, archs: &[Arch], include_dirs: &[PathBuf], options: &[String]) -> Vec<String> {
    let plain = cuda_embed_source::options::nvcc_args(archs, include_dirs, options).args;
    match mode {
        Mode::Rdc => {
            let mut a = vec!["-fatbin".to_string(), "-rdc=true".to_string()];
            a.extend(plain);
            a
        }
        Mode::Lto => {
            let mut sorted = archs.to_vec();
            sorted.sort();
            sorted.dedup();
            let mut a = vec!["-dc".to_string()];
            for (n, arch) in sorted.iter().enumerate() {
                let c = arch.compute();
                let lto = format!("lto_{}{}", arch.number, arch.suffix);
                a.push(if n == 0 {
                    format!("-gencode=arch={c},code=[{lto},{c}]")
                } else {
                    format!("-gencode=arch={c},code={lto}")
                });
            }
            a.extend(plain.into_iter().filter(|x| !x.starts_with("-gencode")));
            a
        }
    }
}

/// The cache key of one unit: nvcc's version, the mode, the arguments, nvcc's environment
/// settings and host compiler (as for a plain module) and the full text.
pub fn unit_key(nvcc: &Nvcc, mode: Mode, args: &[String], text: &str) -> String {
    Key::new(KEY_SCHEME)
        .field("nvcc", &nvcc.version)
        .field("mode", format!("{mode:?}"))
        .list("args", args)
        .list("env", crate::oracle::nvcc::environment(args))
        .field("source", text)
        .finish()
}

/// Compiles one unit (`text` is everything nvcc reads: prologue, source, probes), or returns the
/// cached result. `label` names the unit in nvcc's log. `Err` is the log.
pub fn compile_unit(nvcc: &Nvcc, mode: Mode, args: &[String], text: &str, label: &str) -> Result<Object, String> {
    compile_unit_in(&Store::new(cache::build_dir(), "rdc"), nvcc, mode, args, text, label)
}

/// [`compile_unit`] with its entries in `store` (tests pass a directory of their own).
pub(crate) fn compile_unit_in(
    store: &Store,
    nvcc: &Nvcc,
    mode: Mode,
    args: &[String],
    text: &str,
    label: &str,
) -> Result<Object, String> {
    let key = unit_key(nvcc, mode, args, text);
    if let Some(hit) = store.read(&key).and_then(object) {
        return Ok(hit);
    }
    let (bytes, ptx, deps) = run(nvcc, mode, args, text, label)?;
    let deps: Vec<Dep> = deps
        .into_iter()
        .filter(|d| d.is_absolute())
        .filter(|d| !crate::oracle::nvcc::is_toolkit_or_system_header(d, &nvcc.root))
        .filter_map(Dep::of_file)
        .collect();
    let entry = Entry { blobs: vec![bytes], strings: vec![ptx], deps };
    let _ = store.write_atomic(&key, &entry); // an unwritable cache only costs time
    object(entry).ok_or_else(|| format!("nvcc produced no relocatable code for `{label}`"))
}

/// [`compile_unit`] for every `(args, text, label)`, in parallel (one thread per unit: nvcc is
/// one process per unit, and most of a unit's time is nvcc's own start-up and front end).
pub fn compile_units(nvcc: &Nvcc, mode: Mode, units: &[(Vec<String>, String, String)]) -> Vec<Result<Object, String>> {
    if units.len() < 2 {
        return units.iter().map(|(a, t, l)| compile_unit(nvcc, mode, a, t, l)).collect();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> =
            units.iter().map(|(a, t, l)| s.spawn(move || compile_unit(nvcc, mode, a, t, l))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("the thread compiling this unit panicked".to_string())))
            .collect()
    })
}

fn object(entry: Entry) -> Option<Object> {
    let Ok([bytes]) = <[Vec<u8>; 1]>::try_from(entry.blobs) else { return None };
    let Ok([ptx]) = <[String; 1]>::try_from(entry.strings) else { return None };
    (!bytes.is_empty()).then(|| Object {
        bytes,
        ptx,
        deps: entry.deps.into_iter().map(|d| d.path).collect(),
        per_arch: Vec::new(),
        symbols: Vec::new(),
    })
}

fn run(
    nvcc: &Nvcc,
    mode: Mode,
    args: &[String],
    text: &str,
    label: &str,
) -> Result<(Vec<u8>, String, Vec<PathBuf>), String> {
    let work = tempdir()?;
    let src = work.path().join("unit.cu");
    std::fs::write(&src, text).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let keep = work.path().join("keep");
    std::fs::create_dir_all(&keep).map_err(|e| e.to_string())?;
    let out = work.path().join(if mode == Mode::Lto { "unit.o" } else { "unit.fatbin" });
    let depfile = work.path().join("unit.d");
    let result = Command::new(&nvcc.path)
        .args(args)
        .arg("--keep")
        .arg("--keep-dir")
        .arg(&keep)
        // Non-system dependencies only, as for a module of one unit: the host compiler's own
        // headers (wherever it is installed, e.g. /opt/gcc) stay out.
        .arg("-MMD")
        .arg("-MF")
        .arg(&depfile)
        .arg("-o")
        .arg(&out)
        .arg("unit.cu")
        .current_dir(work.path())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvcc.path.display()))?;
    let log = format!("{}{}", String::from_utf8_lossy(&result.stdout), String::from_utf8_lossy(&result.stderr));
    if !result.status.success() {
        return Err(clean_log(&log).replace("\"unit.cu\"", &format!("\"{label}\"")));
    }
    let bytes = std::fs::read(&out).map_err(|e| format!("nvcc produced no output ({e}); its output:\n{log}"))?;
    let mut ptx_files: Vec<PathBuf> = std::fs::read_dir(&keep)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    ptx_files.sort();
    let ptx_file = ptx_files.first().ok_or("nvcc kept no PTX file")?;
    let ptx = std::fs::read_to_string(ptx_file).map_err(|e| e.to_string())?;
    let deps = std::fs::read_to_string(&depfile).map(|d| parse_depfile(&d)).unwrap_or_default();
    Ok((bytes, ptx, deps.into_iter().filter(|d| d != &src && !d.ends_with("unit.cu")).collect()))
}

fn tempdir() -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix("cuda-embed-link-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))
}

/// The directory holding `libcudadevrt.a` in the toolkit at `root`: `lib64/`, `lib/` (the pip
/// wheels) or `targets/<arch>/lib/`.
pub fn device_runtime_dir(root: &Path) -> Option<PathBuf> {
    let mut dirs = vec![root.join("lib64"), root.join("lib")];
    if let Ok(targets) = std::fs::read_dir(root.join("targets")) {
        dirs.extend(targets.filter_map(|t| t.ok()).map(|t| t.path().join("lib")));
    }
    dirs.into_iter().find(|d| d.join("libcudadevrt.a").is_file())
}

/// The `-nvvmpath` for LTO: `<root>/nvvm` when it has `lib64/libnvvm.so` (a full toolkit); else
/// (the pip wheels, which ship `lib/libnvvm.so.N`) a directory in the build cache whose
/// `lib64/libnvvm.so` links to it.
pub fn nvvm_dir(root: &Path) -> Result<PathBuf, String> {
    let standard = root.join("nvvm");
    if standard.join("lib64").join("libnvvm.so").exists() {
        return Ok(standard);
    }
    let lib = std::fs::read_dir(root.join("lib"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libnvvm.so")))
        .min()
        .ok_or_else(|| {
            format!(
                "`lto = true` needs libnvvm, which nvlink loads for link-time optimisation, but neither {} nor {} has it: \
                 install the CUDA toolkit's nvvm component (the nvidia-nvvm wheel), or drop `lto`",
                standard.join("lib64").display(),
                root.join("lib").display()
            )
        })?;
    let shim = cache::build_dir()
        .join(format!("nvvm-{}", &Key::new("nvvm shim").field("lib", lib.to_string_lossy().as_bytes()).finish()[..16]));
    let link = shim.join("lib64").join("libnvvm.so");
    if std::fs::read_link(&link).ok().as_deref() != Some(lib.as_path()) {
        std::fs::create_dir_all(shim.join("lib64")).map_err(|e| format!("cannot create {}: {e}", shim.display()))?;
        let tmp = shim.join("lib64").join(format!("libnvvm.so.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        symlink(&lib, &tmp).map_err(|e| format!("cannot link {} to {}: {e}", tmp.display(), lib.display()))?;
        std::fs::rename(&tmp, &link).map_err(|e| format!("cannot create {}: {e}", link.display()))?;
    }
    Ok(shim)
}

#[cfg(unix)]
fn symlink(target: &Path, at: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, at)
}

#[cfg(not(unix))]
fn symlink(target: &Path, at: &Path) -> std::io::Result<()> {
    std::fs::copy(target, at).map(|_| ())
}

/// Device-links `objects` (`(label, object)`, in order) with `libcudadevrt` for every arch and
/// joins the cubins into one fatbin. `Err` is the linker's log, with each unit's temporary file
/// name replaced by its label.
pub fn device_link(nvcc: &Nvcc, mode: Mode, archs: &[Arch], objects: &[(&str, &[u8])]) -> Result<Vec<u8>, String> {
    let bin = nvcc.path.parent().unwrap_or(Path::new("."));
    let work = tempdir()?;
    let ext = if mode == Mode::Lto { "o" } else { "fatbin" };
    let mut files = Vec::new();
    for (i, (_, bytes)) in objects.iter().enumerate() {
        let f = format!("unit{i}.{ext}");
        std::fs::write(work.path().join(&f), bytes).map_err(|e| format!("cannot write {f}: {e}"))?;
        files.push(f);
    }
    let devrt = device_runtime_dir(&nvcc.root);
    let nvvm = if mode == Mode::Lto { Some(nvvm_dir(&nvcc.root)?) } else { None };
    let mut sorted = archs.to_vec();
    sorted.sort();
    sorted.dedup();
    let mut fatbinary = Command::new(bin.join("fatbinary"));
    fatbinary.arg("--create=linked.fatbin").arg("-64");
    for arch in &sorted {
        let cubin = format!("linked_{}.cubin", arch.sm());
        let mut cmd = Command::new(bin.join("nvlink"));
        cmd.arg("-m64").arg(format!("--arch={}", arch.sm()));
        if let Some(dir) = &devrt {
            cmd.arg(format!("-L{}", dir.display()));
        }
        if let Some(dir) = &nvvm {
            // `-ignore-host-info`: with LTO, nvlink by default keeps only the kernels that the
            // units' host code refers to, once any unit's host code refers to one. The module is
            // loaded by name through the driver, never through host stubs, so the only host
            // references are the shadows of the address probes (`__device__ void* p =
            // &scale_square<float, 3>;`): with one of those, every other kernel of the module
            // was dropped from the image. Every kernel stays.
            cmd.arg("-dlto").arg(format!("-nvvmpath={}", dir.display())).arg("-ignore-host-info");
        }
        cmd.args(&files);
        if devrt.is_some() {
            cmd.arg("-lcudadevrt");
        }
        let out = cmd
            .arg("-o")
            .arg(&cubin)
            .current_dir(work.path())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.join("nvlink").display()))?;
        let mut log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if !out.status.success() {
            for (i, (label, _)) in objects.iter().enumerate() {
                log = log.replace(&format!("unit{i}.{ext}"), label);
            }
            if devrt.is_none() && log.contains("__cudaCDP") {
                log.push_str(&format!(
                    "\nno libcudadevrt.a was found under {} (lib64/, lib/, targets/*/lib/): kernels that launch kernels \
                     need the CUDA device runtime library (the nvidia-cuda-runtime wheel ships it)",
                    nvcc.root.display()
                ));
            }
            return Err(log.trim().to_string());
        }
        fatbinary.arg(format!("--image3=kind=elf,sm={},file={cubin}", arch.sm().trim_start_matches("sm_")));
    }
    let out = fatbinary.current_dir(work.path()).output().map_err(|e| format!("cannot run fatbinary: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "fatbinary failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::read(work.path().join("linked.fatbin")).map_err(|e| format!("fatbinary produced no fatbin: {e}"))
}
