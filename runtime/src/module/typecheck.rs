//! What the runtime checks when the macro had no compiler at build time, and how it picks the
//! code to load from an image NVRTC built at build time.
//!
//! - [`check_types`]: a module compiled at first use carries the macro's type probe (C++
//!   appended to the source that encodes each kernel parameter's type, as the compiler resolves
//!   it, into a `__device__` variable) and what each launcher parameter was generated for
//!   ([`ParamCheck`]). The module's source also holds the same check as `static_assert`s, so its
//!   compile checks it; the probe is compiled, loaded and its answers compared only when that
//!   compile failed (to name the parameter and its real type), or for a spec without the asserts.
//! - [`pick`]: the newest cubin the device runs, else the PTX.

use crate::error::{DriverCode, Error, Result};
use crate::module::image::c_string;
use crate::module::spec::{ModuleSpec, ParamCheck};
use cuda_embed_source::typecode;
use cudarc::driver::sys;

/// Reads every probe answer from `module` (loaded in the current context) and holds it to its
/// check: a parameter whose type the compiler resolved differently from what the launcher was
/// generated for is an [`Error::Signature`] naming the kernel, the parameter, the C++ type and the
/// Rust type.
pub(crate) fn check_types(
    spec: &ModuleSpec,
    module: sys::CUmodule,
    checks: &[ParamCheck],
    device: usize,
) -> Result<()> {
    for c in checks {
        let kernel = spec.kernels.get(c.kernel).map_or("?", |k| k.name);
        let signature =
            |detail: String| Error::Signature { kernel: kernel.to_string(), origin: spec.origin.to_string(), detail };
        let name = c_string(c.symbol).map_err(signature)?;
        let (mut ptr, mut bytes): (sys::CUdeviceptr, usize) = (0, 0);
        // SAFETY: a live module of the current context; valid out-pointers and C string.
        let r = unsafe { sys::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, module, name.as_ptr()) };
        if r != sys::CUresult::CUDA_SUCCESS || bytes != 8 {
            return Err(signature(format!(
                "the type probe of parameter `{}` (`{}`) is missing from the compiled module ({}); \
                 the module cannot be checked",
                c.name,
                c.cxx,
                DriverCode(r)
            )));
        }
        let mut code = 0u64;
        // SAFETY: `ptr` is an 8-byte device variable of this module; `code` is 8 writable bytes.
        let r = unsafe { sys::cuMemcpyDtoH_v2(&mut code as *mut u64 as *mut std::ffi::c_void, ptr, 8) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Driver { call: "cuMemcpyDtoH", device, cause: DriverCode(r) });
        }
        if let Some(detail) = mismatch(c, code) {
            return Err(signature(detail));
        }
    }
    Ok(())
}

/// The macro's type probe as NVRTC compiles it: the module's source with the probe appended.
pub(crate) struct ProbeUnit<'a> {
    pub(crate) text: &'a str,
    pub(crate) options: &'a [&'a str],
    pub(crate) headers: &'a [(&'a str, &'a str)],
    pub(crate) arch: u32,
}

/// What a passed load check of a `cuda_kernel!` module's NVRTC cubin is recorded under in the
/// cubin's cache entry ([`cuda_embed_source::key::checks_mark`]): the mark the macro embedded, or,
/// for a spec without one, the mark computed now.
pub(crate) fn checks_mark(source: &str, probe: &str, embedded: &str) -> Vec<u8> {
    if embedded.is_empty() {
        cuda_embed_source::key::checks_mark(source, probe).into_bytes()
    } else {
        embedded.as_bytes().to_vec()
    }
}

/// Checks the module's parameter types with the probe, compiled on its own (its cubin cached like
/// any other) and loaded only for the check. A passed check is recorded by the caller in the
/// module cubin's cache entry ([`checks_mark`]), so a later process skips it.
pub(crate) fn check_probe(spec: &ModuleSpec, unit: &ProbeUnit<'_>, checks: &[ParamCheck], device: usize) -> Result<()> {
    // The probe's own exprs: none (its answers are plain variables, read by name).
    let len = unit.text.len();
    let compiled =
        crate::BUILD.compile(spec.origin, unit.text, len, unit.options, unit.headers, &[], None, unit.arch)?;
    let module = crate::module::image::load_raw(&compiled.cubin).map_err(|(code, log)| Error::Signature {
        kernel: spec.kernels.first().map_or("?", |k| k.name).to_string(),
        origin: spec.origin.to_string(),
        detail: format!(
            "the type probe compiled but could not be loaded to check the parameter types: {}",
            crate::module::image::with_log(code, &log)
        ),
    })?;
    let checked = check_types(spec, module, checks, device);
    // SAFETY: loaded just above in the current context, used only by `check_types`, unloaded once.
    unsafe { sys::cuModuleUnload(module) };
    checked
}

/// Why the probe answer `code` does not fit check `c`, if it does not.
pub(crate) fn mismatch(c: &ParamCheck, code: u64) -> Option<String> {
    if code & c.mask == c.value {
        return None;
    }
    Some(format!(
        "parameter `{}` (`{}` as written) is `{}` to the compiler, but the launcher was generated for `{}`: \
         no compiler ran at build time, so the macro read the type from the source text, and a typedef, macro \
         or `#if` changes it; build with nvcc or libnvrtc available (the compiler then decides the types), or \
         write the type out",
        c.name,
        c.cxx,
        typecode::describe(code),
        c.rust
    ))
}

/// What to load for a device of compute capability `arch` from cubins built for `cubins`
/// (`sm_80`, `sm_90a`, ...): the index of the newest cubin it runs (same major version, minor not
/// above the device's; an `a` target only on exactly its architecture, an `f` target on its
/// family), or `None` for the PTX.
pub(crate) fn pick(cubins: &[&str], arch: u32) -> Option<usize> {
    // Ranked by architecture, then by how specific the target is (`a` over `f` over plain).
    let mut best: Option<((u32, u8), usize)> = None;
    for (i, name) in cubins.iter().enumerate() {
        let t = name.strip_prefix("sm_").unwrap_or(name);
        let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
        let Ok(n) = digits.parse::<u32>() else { continue };
        let (runs, specific) = match &t[digits.len()..] {
            "" => (n / 10 == arch / 10 && n <= arch, 0),
            "f" => (n / 10 == arch / 10 && n <= arch, 1),
            "a" => (n == arch, 2),
            _ => (false, 0),
        };
        if runs && best.is_none_or(|(b, _)| (n, specific) > b) {
            best = Some(((n, specific), i));
        }
    }
    best.map(|(_, i)| i)
}

/// Whether PTX for `ptx_target` (`compute_80`) can be JIT-compiled for `arch`.
pub(crate) fn ptx_runs(ptx_target: &str, arch: u32) -> bool {
    let t = ptx_target.strip_prefix("compute_").unwrap_or(ptx_target);
    let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
    digits.parse::<u32>().is_ok_and(|n| n <= arch) && t.len() == digits.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_embed_source::typecode::{encode, kind, CONST_MASK, DEPTH_MASK, KIND_MASK, SIZE_MASK};

    /// The mark a load records its passed checks under is the one the macro embedded; a spec
    /// without one (built by hand, `Image::source`) gets the same mark computed at load.
    #[test]
    fn the_embedded_checks_mark_is_used_and_matches_one_computed_at_load() {
        let (source, probe) = ("extern \"C\" __global__ void k(int* x) {}", "probe text");
        let computed = checks_mark(source, probe, "");
        assert_eq!(computed, cuda_embed_source::key::checks_mark(source, probe).into_bytes());
        assert_eq!(checks_mark(source, probe, std::str::from_utf8(&computed).unwrap()), computed);
        assert_eq!(checks_mark(source, probe, "checked embedded"), b"checked embedded", "no hashing on a hit");
        assert_ne!(checks_mark(source, "another probe", ""), computed);
    }

    #[test]
    fn picks_the_newest_cubin_the_device_runs() {
        let c = ["sm_80", "sm_86", "sm_90", "sm_90a"];
        assert_eq!(pick(&c, 80), Some(0));
        assert_eq!(pick(&c, 89), Some(1), "sm_86 runs on sm_89, sm_90 does not");
        assert_eq!(pick(&c, 90), Some(3));
        assert_eq!(pick(&c[..3], 90), Some(2));
        assert_eq!(pick(&c, 100), None, "another major version: the PTX");
        assert_eq!(pick(&c, 75), None);
        assert_eq!(pick(&["sm_100f"], 103), Some(0));
        assert!(ptx_runs("compute_80", 90) && !ptx_runs("compute_90", 80) && !ptx_runs("compute_90a", 100));
    }

    #[test]
    fn a_double_pointer_is_not_a_float_pointer() {
        let c = ParamCheck {
            kernel: 0,
            param: 0,
            name: "x",
            cxx: "real* x",
            rust: "&mut impl DevicePtrMut<f32>",
            symbol: "__cuda_embed_probe_u0_0",
            mask: KIND_MASK | DEPTH_MASK | CONST_MASK | SIZE_MASK,
            value: encode(kind::FLOAT, 1, false, 4),
        };
        assert_eq!(mismatch(&c, encode(kind::FLOAT, 1, false, 4) | (4 << 36)), None, "alignment is not checked");
        let e = mismatch(&c, encode(kind::DOUBLE, 1, false, 8)).unwrap();
        assert!(e.contains("parameter `x` (`real* x` as written) is `double*` to the compiler"), "{e}");
        assert!(e.contains("`&mut impl DevicePtrMut<f32>`"), "{e}");
        let e = mismatch(&c, encode(kind::FLOAT, 1, true, 4)).unwrap();
        assert!(e.contains("`const float*`"), "{e}");
    }
}
