use super::*;
use std::path::Path;

const MATH: &str = "__device__ float sq(float x) { return x * x; }\n";

#[test]
fn object_kinds_follow_file_extensions() {
    assert_eq!(ObjectKind::of_path(Path::new("a.ptx")), Some(ObjectKind::Ptx));
    assert_eq!(ObjectKind::of_path(Path::new("a.cubin")), Some(ObjectKind::Cubin));
    assert_eq!(ObjectKind::of_path(Path::new("a.fatbin")), Some(ObjectKind::Fatbin));
    assert_eq!(ObjectKind::of_path(Path::new("a.ltoir")), Some(ObjectKind::LtoIr));
    assert_eq!(ObjectKind::of_path(Path::new("lib/libcudadevrt.a")), Some(ObjectKind::Library));
    assert_eq!(ObjectKind::of_path(Path::new("a.cu")), None);
    let e = ObjectCode::from_file("kernel.o").unwrap_err().to_string();
    assert!(e.contains("expected .ptx, .cubin, .fatbin, .ltoir or .a"), "{e}");
}

#[test]
fn linkers_read_ptx_with_a_nul_and_libraries_without_a_copy() {
    let ptx = ObjectCode::from_bytes(ObjectKind::Ptx, "a.ptx", b".version 8.0".to_vec());
    assert_eq!(&*ptx.linker_input(), b".version 8.0\0");
    let terminated = ObjectCode::from_bytes(ObjectKind::Ptx, "a.ptx", b".version 8.0\0".to_vec());
    assert_eq!(&*terminated.linker_input(), b".version 8.0\0");
    let lib = ObjectCode::from_bytes(ObjectKind::Library, "libcudadevrt.a", b"!<arch>\n".to_vec());
    let input = lib.linker_input();
    assert!(matches!(input, std::borrow::Cow::Borrowed(_)) && input.as_ptr() == lib.bytes().as_ptr());
}

#[test]
fn lto_ir_needs_nvjitlink_and_everything_else_the_driver() {
    let ptx = ObjectCode::from_bytes(ObjectKind::Ptx, "a.ptx", b"x".to_vec());
    let lto = ObjectCode::from_bytes(ObjectKind::LtoIr, "a.ltoir", b"x".to_vec());
    assert_eq!(Linker::new("l").object(ptx.clone()).linker_kind(), LinkerKind::Driver);
    assert_eq!(Linker::new("l").object(ptx.clone()).lto(true).linker_kind(), LinkerKind::NvJitLink);
    assert_eq!(Linker::new("l").object(ptx).object(lto).linker_kind(), LinkerKind::NvJitLink);
}

#[test]
fn the_link_cache_key_covers_objects_options_and_arch() {
    let a = ObjectCode::from_bytes(ObjectKind::Ptx, "a.ptx", b"one".to_vec());
    let b = ObjectCode::from_bytes(ObjectKind::Ptx, "a.ptx", b"two".to_vec());
    let l = Linker::new("l").object(a.clone());
    assert_eq!(l.key("driver 13000", 90), Linker::new("l").object(a.clone()).key("driver 13000", 90));
    assert_ne!(l.key("driver 13000", 90), Linker::new("l").object(b).key("driver 13000", 90));
    assert_ne!(l.key("driver 13000", 90), l.key("driver 13000", 80));
    assert_ne!(l.key("driver 13000", 90), l.key("driver 13010", 90));
    assert_ne!(l.key("driver 13000", 90), l.clone().optimization(3).key("driver 13000", 90));
    assert_ne!(l.key("driver 13000", 90), l.clone().debug(true).key("driver 13000", 90));
    let lib = ObjectCode::from_bytes(ObjectKind::Library, "a.ptx", b"one".to_vec());
    assert_ne!(l.key("driver 13000", 90), Linker::new("l").object(lib).key("driver 13000", 90));
}

/// NVRTC (no GPU needed) makes relocatable PTX, cubins and LTO-IR; skipped without libnvrtc.
#[test]
fn compile_to_makes_relocatable_objects() {
    if !crate::program::nvrtc::is_available() {
        eprintln!("no NVRTC: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = Program::new(MATH).name("math.cu").cache_dir(dir.path());
    let ptx = p.compile_to(CodeKind::Ptx, 80).unwrap();
    let text = String::from_utf8_lossy(ptx.bytes()).into_owned();
    assert!(text.contains(".visible .func") && text.contains("_Z2sqf"), "{text}");
    assert!(!ptx.from_cache());
    assert!(p.compile_to(CodeKind::Ptx, 80).unwrap().from_cache());
    let cubin = p.compile_to(CodeKind::Cubin, 80).unwrap();
    assert_eq!(&cubin.bytes()[..4], b"\x7fELF");
    let lto = p.compile_to(CodeKind::LtoIr, 80).unwrap();
    assert_eq!(lto.kind(), ObjectKind::LtoIr);
    assert!(!lto.bytes().is_empty() && lto.bytes() != cubin.bytes());
    let e = Program::new("__device__ float f( {").compile_to(CodeKind::Ptx, 80).unwrap_err().to_string();
    assert!(e.contains("NVRTC could not compile it"), "{e}");
}

#[test]
fn an_empty_linker_says_so() {
    let e = Linker::new("empty").link_for(90).unwrap_err().to_string();
    assert!(e.contains("nothing to link"), "{e}");
}

#[test]
fn the_device_runtime_is_an_archive_or_a_clear_error() {
    match ObjectCode::device_runtime() {
        Ok(o) => {
            assert_eq!(o.kind(), ObjectKind::Library);
            assert!(o.bytes().starts_with(b"!<arch>"), "an ar archive");
            // Read once per process: a second call shares the bytes and, once hashed, the digest.
            let again = ObjectCode::device_runtime().unwrap();
            assert_eq!(again.bytes().as_ptr(), o.bytes().as_ptr());
            let digest = *o.digest();
            assert!(std::ptr::eq(again.digest(), o.digest()));
            assert_eq!(digest, cuda_embed_source::key::sha256(again.bytes()));
        }
        Err(e) => assert!(e.to_string().contains("libcudadevrt.a was not found"), "{e}"),
    }
}

/// A unit with an in-memory header and a path for a name, as a module linked at first use
/// compiles it (LTO-IR and relocatable cubin). The header is given twice, as the module's
/// units each list it: NVRTC refuses two headers of one name, so the second replaces the first
/// (this failed with `nvrtcCreateProgram: NVRTC_ERROR_INVALID_INPUT` on the GPU machine).
#[test]
fn compile_to_with_headers_and_a_path_name() {
    if !crate::program::nvrtc::is_available() {
        eprintln!("no NVRTC: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let main = "#include \"shared.cuh\"\nextern \"C\" __global__ void k(float* y) { y[0] = twice(y[0]); }\n";
    let p = Program::new(main)
        .name("tests/kernels/link/main.cu")
        .header("shared.cuh", "__device__ float twice(float x);\n")
        .header("shared.cuh", "__device__ float twice(float x);\n")
        .name_expression("k")
        .cache_dir(dir.path());
    for kind in [CodeKind::LtoIr, CodeKind::Cubin] {
        let o = p.compile_to(kind, 90).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert!(!o.bytes().is_empty());
    }
}
