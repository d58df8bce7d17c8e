//! Host-only code in a module that NVRTC will compile at first use. A whole-program `.cu` file
//! (a host `main`, `printf` through `<stdio.h>`, POSIX headers) builds with nvcc, which compiles
//! its host side with the host compiler; NVRTC compiles device code only and has no C library
//! headers, so the same file cannot compile at first use. With no compiler at build time the
//! build itself cannot tell, so the macro reads the source text for the signs and says so with a
//! warning at the macro, naming what it found, instead of leaving the failure to the first launch
//! on a user's machine.

use proc_macro2::TokenStream;

/// Headers of the C and C++ standard libraries and POSIX that NVRTC does not have (it provides
/// only the toolkit's device headers): the ones whole programs include for their host side.
const HOST_HEADERS: &[&str] = &[
    "unistd.h",
    "stdio.h",
    "cstdio",
    "stdlib.h",
    "cstdlib",
    "string.h",
    "cstring",
    "time.h",
    "ctime",
    "errno.h",
    "fcntl.h",
    "dirent.h",
    "signal.h",
    "getopt.h",
    "pthread.h",
    "omp.h",
    "mpi.h",
    "iostream",
    "fstream",
    "sstream",
    "iomanip",
    "vector",
    "string",
    "map",
    "unordered_map",
    "set",
    "list",
    "deque",
    "chrono",
    "thread",
    "mutex",
    "memory",
    "algorithm",
    "functional",
    "random",
];

/// What in `text` (a module's source, or a header it includes) only a host compiler can take:
/// each host-only header it includes (`<unistd.h>`, `"iostream"`, any `sys/...`) and a host `main`,
/// in order, once each.
pub(crate) fn host_only_code(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut push = |what: String| {
        if !found.contains(&what) {
            found.push(what);
        }
    };
    for line in text.lines() {
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix('#') {
            let Some(rest) = rest.trim_start().strip_prefix("include") else { continue };
            let rest = rest.trim_start();
            let (open, close) = match rest.chars().next() {
                Some('<') => ('<', '>'),
                Some('"') => ('"', '"'),
                _ => continue,
            };
            let Some(name) = rest[1..].split(close).next() else { continue };
            if HOST_HEADERS.contains(&name) || name.starts_with("sys/") {
                push(format!("`#include {open}{name}{close}`"));
            }
        } else if ["int main(", "int main (", "auto main(", "void main("].iter().any(|m| line.starts_with(m)) {
            push("a host `main` function".to_string());
        }
    }
    found
}

/// A warning at the macro (a `deprecated` item it uses) when the source of a module that NVRTC
/// compiles at first use, or a header captured with it, holds host-only code; nothing otherwise.
pub(crate) fn host_only_warning<'a>(
    text: &str,
    headers: impl IntoIterator<Item = &'a (String, String)>,
) -> TokenStream {
    let mut found = host_only_code(text);
    for (name, header) in headers {
        for what in host_only_code(header) {
            let what = format!("{what} (in `{name}`)");
            if !found.contains(&what) {
                found.push(what);
            }
        }
    }
    if found.is_empty() {
        return TokenStream::new();
    }
    let note = format!(
        "cuda-embed: this module will be compiled by NVRTC at first use (no CUDA compiler ran at build time), \
         and its source holds host code NVRTC cannot compile: {}. Its first launch would fail. A whole-program \
         `.cu` file (a host `main`, host headers) builds only through nvcc: install the CUDA toolkit or run \
         cargo through cuda-embed's `scripts/with-cuda`; or give the macro a file of the device code alone",
        found.join(", ")
    );
    super::build_warning("HostCodeNvrtcCannotCompile", &note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_headers_and_a_host_main_are_found_once_each() {
        let src = "#include <unistd.h>\n#  include \"vector\"\n#include <sys/time.h>\n#include <cuda_fp16.h>\n\
                   #include \"my_kernels.cuh\"\n__global__ void k(float* x) {}\nint main(int argc, char** argv) {\n\
                   return 0;\n}\n#include <unistd.h>\n";
        assert_eq!(
            host_only_code(src),
            ["`#include <unistd.h>`", "`#include \"vector\"`", "`#include <sys/time.h>`", "a host `main` function"]
        );
        assert!(
            host_only_code("#include <cuda_fp16.h>\n__global__ void k(float* x) { printf(\"%f\", x[0]); }").is_empty()
        );
    }

    #[test]
    fn the_warning_names_what_it_found_also_in_headers() {
        let headers = [("util.cuh".to_string(), "#include <iostream>\n".to_string())];
        let w = host_only_warning("extern \"C\" __global__ void k() {}", &headers).to_string();
        assert!(w.contains("deprecated") && w.contains("`#include <iostream>` (in `util.cuh`)"), "{w}");
        assert!(w.contains("builds only through nvcc"), "{w}");
        assert!(host_only_warning("extern \"C\" __global__ void k() {}", &[]).is_empty());
    }
}
