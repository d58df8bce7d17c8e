//! Records the triple this crate is built for. The crate runs inside the `cuda_kernel!` macro,
//! which is built for the host, so this is the host triple `host::ccbin` hands to the `cc` crate.
fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=CUDA_EMBED_BUILD_HOST={target}");
    println!("cargo:rerun-if-changed=build.rs");
}
