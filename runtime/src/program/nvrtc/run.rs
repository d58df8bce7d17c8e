//! The NVRTC calls: create a program, compile it with its headers and name expressions, read the
//! log, the lowered names and the output (a cubin, PTX or LTO-IR).

use super::*;

pub(super) struct Program(nv::nvrtcProgram);
impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the handle came from nvrtcCreateProgram and is destroyed exactly once.
        unsafe { nv::nvrtcDestroyProgram(&mut self.0) };
    }
}

/// Runs NVRTC on `source` (named `name` in diagnostics and for relative `#include`s) with the
/// in-memory `headers` (`(include name, contents)`), returning the cubin and the lowered symbol of
/// each name expression. The error is NVRTC's log, or why NVRTC could not run.
pub(crate) fn run_nvrtc<S: AsRef<str>>(
    name: &str,
    source: &str,
    headers: &[(String, String)],
    options: &[S],
    name_expressions: &[S],
    arch: u32,
) -> Result<(Vec<u8>, Vec<String>), String> {
    run_nvrtc_to(name, source, headers, options, name_expressions, arch, CodeKind::Cubin)
}

/// [`run_nvrtc`], returning the code `kind` asks for (PTX, cubin or LTO-IR; the options must
/// ask for LTO-IR with `-dlto` where `kind` is [`LtoIr`](CodeKind::LtoIr)).
pub(crate) fn run_nvrtc_to<S: AsRef<str>>(
    name: &str,
    source: &str,
    headers: &[(String, String)],
    options: &[S],
    name_expressions: &[S],
    arch: u32,
    kind: CodeKind,
) -> Result<(Vec<u8>, Vec<String>), String> {
    if !is_available() {
        return Err(missing_nvrtc());
    }
    // The device runtime's declarations nvcc would give the source (`cudaGraphSetConditional`).
    let prelude = cuda_embed_source::devrt::nvrtc_prelude(source);
    let src =
        CString::new(format!("{prelude}{source}")).map_err(|_| "the CUDA source contains a NUL byte".to_string())?;
    let name = CString::new(name).map_err(|_| "the program name contains a NUL byte".to_string())?;
    let header_names: Vec<CString> = headers
        .iter()
        .map(|(n, _)| CString::new(n.as_str()).map_err(|_| format!("header name `{n}` contains a NUL byte")))
        .collect::<Result<_, _>>()?;
    let header_texts: Vec<CString> = headers
        .iter()
        .map(|(n, t)| CString::new(t.as_str()).map_err(|_| format!("header `{n}` contains a NUL byte")))
        .collect::<Result<_, _>>()?;
    let name_ptrs: Vec<*const c_char> = header_names.iter().map(|h| h.as_ptr()).collect();
    let text_ptrs: Vec<*const c_char> = header_texts.iter().map(|h| h.as_ptr()).collect();
    let (text_arr, name_arr) = if headers.is_empty() {
        (std::ptr::null(), std::ptr::null())
    } else {
        (text_ptrs.as_ptr(), name_ptrs.as_ptr())
    };
    let mut prog: nv::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: valid C strings; the header arrays hold `headers.len()` valid C strings each (or are
    // null with a count of 0) and outlive the call, which copies them.
    let r = unsafe {
        nv::nvrtcCreateProgram(&mut prog, src.as_ptr(), name.as_ptr(), headers.len() as i32, text_arr, name_arr)
    };
    check(r, "nvrtcCreateProgram")?;
    let prog = Program(prog);
    let exprs: Vec<CString> = name_expressions
        .iter()
        .map(|n| {
            let n = n.as_ref();
            CString::new(n).map_err(|_| format!("name expression `{n}` contains a NUL byte"))
        })
        .collect::<Result<_, _>>()?;
    for e in &exprs {
        // SAFETY: live program, valid C string.
        check(unsafe { nv::nvrtcAddNameExpression(prog.0, e.as_ptr()) }, "nvrtcAddNameExpression")?;
    }
    let opts: Vec<CString> = options::nvrtc_args(arch, options)
        .into_iter()
        .map(|o| CString::new(o).map_err(|_| "an NVRTC option contains a NUL byte".to_string()))
        .collect::<Result<_, _>>()?;
    let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: live program; `opt_ptrs` holds `len` valid C strings that outlive the call.
    let r = unsafe { nv::nvrtcCompileProgram(prog.0, opt_ptrs.len() as i32, opt_ptrs.as_ptr()) };
    if r != nv::nvrtcResult::NVRTC_SUCCESS {
        let log = program_log(&prog).unwrap_or_else(|| format!("nvrtcCompileProgram failed: {r:?}"));
        return Err(with_library_hint(log));
    }
    let cubin = nvrtc_output(prog.0, kind)?;
    let mut symbols = Vec::with_capacity(exprs.len());
    for (e, text) in exprs.iter().zip(name_expressions) {
        let mut lowered: *const c_char = std::ptr::null();
        // SAFETY: live, compiled program; the expression was added before compiling.
        let r = unsafe { nv::nvrtcGetLoweredName(prog.0, e.as_ptr(), &mut lowered) };
        if r != nv::nvrtcResult::NVRTC_SUCCESS || lowered.is_null() {
            return Err(format!("NVRTC could not resolve the kernel name `{}` ({r:?})", text.as_ref()));
        }
        // SAFETY: NVRTC returns a NUL-terminated string owned by the program, copied here.
        symbols.push(unsafe { CStr::from_ptr(lowered) }.to_string_lossy().into_owned());
    }
    Ok((cubin, symbols))
}

pub(super) fn program_log(prog: &Program) -> Option<String> {
    let mut size = 0usize;
    // SAFETY: live program; valid out-pointer.
    if unsafe { nv::nvrtcGetProgramLogSize(prog.0, &mut size) } != nv::nvrtcResult::NVRTC_SUCCESS {
        return None;
    }
    let mut buf = vec![0u8; size.max(1)];
    // SAFETY: `buf` has the size NVRTC reported.
    if unsafe { nv::nvrtcGetProgramLog(prog.0, buf.as_mut_ptr() as *mut c_char) } != nv::nvrtcResult::NVRTC_SUCCESS {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).trim_end().to_string())
}

pub(crate) fn check(r: nv::nvrtcResult, call: &str) -> Result<(), String> {
    if r == nv::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed: {r:?}"))
    }
}

/// NVRTC's `log` with a `help:` line appended when it reports a CUDA library's header (cuBLAS,
/// cuRAND, NVTX, ...) as missing. At run time NVRTC looks only in the toolkit include folder that
/// [`options::toolkit_include_dirs`] finds and in the program's own include options, and a machine
/// with just the driver and NVRTC has no library headers.
pub(super) fn with_library_hint(log: String) -> String {
    let Some((header, library)) = missing_library_header(&log) else { return log };
    format!(
        "{log}\nhelp: `{header}` is a header of {library}, which NVRTC did not find on this machine: set \
         `CUDA_EMBED_TOOLKIT` (or `CUDA_PATH`) to a CUDA toolkit that has {library}'s headers, or pass the folder \
         holding them as an `--include-path=DIR` option; a `cuda_kernel!` module can instead be compiled when the \
         crate builds (`CUDA_EMBED_LIBRARY_HEADERS=1 scripts/with-cuda cargo build`), so nothing compiles at run time"
    )
}

/// What [`Program::compile_to`](crate::Program::compile_to) produces (NVRTC's output kinds for
/// linking; also `cuda_embed::link::CodeKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodeKind {
    /// PTX text (relocatable: `-rdc=true`).
    Ptx,
    /// A relocatable cubin (`-rdc=true`).
    Cubin,
    /// LTO-IR (`-dlto`), linked with link-time optimisation by nvJitLink.
    LtoIr,
}

/// NVRTC's output of `kind` for a compiled program.
pub(crate) fn nvrtc_output(prog: nv::nvrtcProgram, kind: CodeKind) -> std::result::Result<Vec<u8>, String> {
    let mut size = 0usize;
    type Size = unsafe fn(nv::nvrtcProgram, *mut usize) -> nv::nvrtcResult;
    type Get = unsafe fn(nv::nvrtcProgram, *mut c_char) -> nv::nvrtcResult;
    let (size_fn, get_fn, what): (Size, Get, &str) = match kind {
        CodeKind::Ptx => (nv::nvrtcGetPTXSize, nv::nvrtcGetPTX, "nvrtcGetPTX"),
        CodeKind::Cubin => (nv::nvrtcGetCUBINSize, nv::nvrtcGetCUBIN, "nvrtcGetCUBIN"),
        CodeKind::LtoIr => (nv::nvrtcGetLTOIRSize, nv::nvrtcGetLTOIR, "nvrtcGetLTOIR"),
    };
    // SAFETY: a live, compiled program; a valid out-pointer.
    check(unsafe { size_fn(prog, &mut size) }, what)?;
    let mut out = vec![0u8; size];
    // SAFETY: `out` has the size NVRTC reported.
    check(unsafe { get_fn(prog, out.as_mut_ptr() as *mut c_char) }, what)?;
    if kind == CodeKind::Ptx {
        // The PTX's terminating NUL stays out of the object; the linker gets its own.
        while out.last() == Some(&0) {
            out.pop();
        }
    }
    Ok(out)
}
