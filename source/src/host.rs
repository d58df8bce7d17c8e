//! nvcc's host compiler (`-ccbin`), chosen the way the `cc` crate chooses the C++ compiler for every
//! other C/C++ build in cargo.
//!
//! nvcc runs the host C++ compiler even for device-only output (to preprocess the source), and
//! fails when its default (`g++` on `PATH`) is missing or a version it does not support. Users
//! already tell cargo's C++ builds which compiler to use through `CXX_<target>`,
//! `CXX_<target_with_underscores>`, `HOST_CXX` and `CXX`; when one of those is set, the `cc` crate
//! resolves it (wrappers such as `ccache g++` included) and nvcc gets that compiler as `-ccbin`.
//! When none is set, nvcc keeps its own default. `NVCC_CCBIN` (which nvcc reads itself) or a
//! `-ccbin` in the macro's options always wins.

use std::path::PathBuf;

/// The host triple this crate was built for (the macro runs on the host).
const HOST: &str = env!("CUDA_EMBED_BUILD_HOST");

/// The variables the `cc` crate consults for the host's C++ compiler, most specific first.
pub fn cxx_vars() -> Vec<String> {
    vec![format!("CXX_{HOST}"), format!("CXX_{}", HOST.replace('-', "_")), "HOST_CXX".into(), "CXX".into()]
}

/// The `-ccbin` to give nvcc, or `None` to leave nvcc's own choice: see the module docs.
/// `options` are the macro's nvcc options.
pub fn ccbin(options: &[String]) -> Option<PathBuf> {
    let set = |v: &str| std::env::var_os(v).is_some_and(|s| !s.is_empty());
    if set("NVCC_CCBIN")
        || options.iter().any(|o| o == "-ccbin" || o.starts_with("-ccbin=") || o.starts_with("--compiler-bindir"))
    {
        return None;
    }
    if !cxx_vars().iter().any(|v| set(v)) {
        return None;
    }
    let tool = cc::Build::new()
        .cpp(true)
        .target(HOST)
        .host(HOST)
        .opt_level(0)
        .debug(false)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .try_get_compiler()
        .ok()?;
    Some(tool.path().to_path_buf())
}

/// The host compiler nvcc will run for `args` (nvcc's arguments, `-ccbin` included when one is
/// given): `-ccbin`/`--compiler-bindir` (a directory means its `g++`), else `NVCC_CCBIN`, else
/// nvcc's default `g++` on `PATH`.
pub fn host_compiler(args: &[String]) -> PathBuf {
    let mut chosen: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(v) = a.strip_prefix("-ccbin=").or_else(|| a.strip_prefix("--compiler-bindir=")) {
            chosen = Some(v.to_string());
        } else if a == "-ccbin" || a == "--compiler-bindir" {
            chosen = it.next().cloned();
        }
    }
    let chosen = chosen.or_else(|| std::env::var("NVCC_CCBIN").ok().filter(|v| !v.is_empty()));
    match chosen {
        Some(c) if std::path::Path::new(&c).is_dir() => PathBuf::from(c).join("g++"),
        Some(c) => PathBuf::from(c),
        None => PathBuf::from("g++"),
    }
}

/// What identifies the host compiler nvcc will run for `args`, for cache keys: the first line of
/// its `--version` (compiler and version), or a note that it could not be run (nvcc then fails
/// anyway). Asked once per compiler per process (a few milliseconds, once per crate build).
pub fn host_compiler_identity(args: &[String]) -> String {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static SEEN: Mutex<Option<HashMap<PathBuf, String>>> = Mutex::new(None);
    let compiler = host_compiler(args);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let seen = seen.get_or_insert_with(HashMap::new);
    if let Some(id) = seen.get(&compiler) {
        return id.clone();
    }
    let id = match std::process::Command::new(&compiler).arg("--version").output() {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            format!("{} {}", compiler.display(), text.lines().next().unwrap_or("").trim())
        }
        Ok(out) => format!("{} exited with {}", compiler.display(), out.status),
        Err(e) => format!("{} not runnable ({})", compiler.display(), e.kind()),
    };
    seen.insert(compiler, id.clone());
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules read and change process-wide environment variables, which other tests running
    /// in parallel threads read too: they run in a child process of this test binary, alone.
    #[test]
    fn the_host_compiler_is_read_from_the_arguments() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(host_compiler(&a(&["-O3", "-ccbin=/opt/gcc-12/bin/g++"])), PathBuf::from("/opt/gcc-12/bin/g++"));
        assert_eq!(host_compiler(&a(&["-ccbin", "/opt/clang/bin/clang++"])), PathBuf::from("/opt/clang/bin/clang++"));
        // A directory names the folder nvcc takes its `g++` from.
        let dir = std::env::temp_dir();
        assert_eq!(host_compiler(&a(&[&format!("--compiler-bindir={}", dir.display())])), dir.join("g++"));
        // A compiler that cannot run is still an identity (nvcc reports the real error).
        let id = host_compiler_identity(&a(&["-ccbin=/nonexistent/cuda-embed-test/g++"]));
        assert!(id.contains("/nonexistent/cuda-embed-test/g++") && id.contains("not runnable"), "{id}");
    }

    #[test]
    fn ccbin_rules() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "host::tests::ccbin_rules_in_a_child_process", "--nocapture", "--test-threads=1"])
            .env("CUDA_EMBED_HOST_TEST_CHILD", "1")
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
    }

    #[test]
    fn ccbin_rules_in_a_child_process() {
        if std::env::var_os("CUDA_EMBED_HOST_TEST_CHILD").is_none() {
            return; // run by `ccbin_rules`, in its own process
        }
        let mut vars = cxx_vars();
        vars.push("NVCC_CCBIN".into());
        for v in &vars {
            std::env::remove_var(v);
        }
        assert_eq!(ccbin(&[]), None, "nothing set: nvcc's own default");
        std::env::set_var("CXX", "/opt/gcc-12/bin/g++");
        assert_eq!(ccbin(&[]), Some(PathBuf::from("/opt/gcc-12/bin/g++")), "CXX, as cc reads it");
        std::env::set_var(format!("CXX_{}", HOST.replace('-', "_")), "/opt/gcc-13/bin/g++");
        assert_eq!(ccbin(&[]), Some(PathBuf::from("/opt/gcc-13/bin/g++")), "the target-specific variable wins");
        assert_eq!(ccbin(&["-ccbin=/x/g++".into()]), None, "the macro's own -ccbin wins");
        std::env::set_var("NVCC_CCBIN", "/y/g++");
        assert_eq!(ccbin(&[]), None, "nvcc reads NVCC_CCBIN itself");
    }
}
