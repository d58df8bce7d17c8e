//! Behaviour that must hold on machines without a GPU or driver (CI runs these).

#[test]
fn missing_driver_or_device_is_an_error_not_a_panic() {
    if cuda_embed::driver_available() {
        // A driver is present: an ordinal no machine has must be a NoDevice error.
        let err = cuda_embed::context(4096).unwrap_err();
        assert!(matches!(err, cuda_embed::Error::NoDevice { ordinal: 4096, .. }), "{err}");
        assert!(err.to_string().contains("4096"), "{err}");
    } else {
        let err = cuda_embed::context(0).unwrap_err();
        assert!(matches!(err, cuda_embed::Error::NoDriver { .. }), "{err}");
        assert!(err.to_string().contains("install the NVIDIA driver"), "{err}");
    }
}

/// The line of the `noop` source literal below (two lines down).
const NOOP_LINE: u32 = line!() + 2;
cuda_embed::cuda_kernel!(
    r#"
    extern "C" __global__ void noop(int* x) {}
"#
);

#[test]
fn module_is_not_loaded_until_first_launch() {
    assert_eq!(noop::module().loads(), 0);
    assert_eq!(noop::NAME, "noop");
    assert_eq!(noop::module().kernel_names().collect::<Vec<_>>(), ["noop"]);
    assert_eq!(noop::KERNEL.param_sizes(), &[8]);
    let origin = noop::module().origin();
    assert!(origin.ends_with(&format!("no_gpu.rs:{NOOP_LINE}")), "{origin}");
}

#[test]
fn macro_works_inside_a_function_body() {
    cuda_embed::cuda_kernel!(
        r#"
        extern "C" __global__ void local_kernel(float* x, int n) {}
    "#
    );
    assert_eq!(local_kernel::NAME, "local_kernel");
    assert_eq!(local_kernel::KERNEL.param_sizes(), &[8, 4]);
    assert_eq!(local_kernel::module().loads(), 0);
}

cuda_embed::cuda_kernel!(
    r#"
    extern "C" __global__ void move(float* x) {}
    extern "C" __global__ void type(const float* x, int match) {}
"#
);

#[test]
fn kernels_named_like_rust_keywords_become_raw_identifiers() {
    assert_eq!(r#move::NAME, "move");
    assert_eq!(r#type::NAME, "type");
    assert_eq!(r#type::KERNEL.param_sizes(), &[8, 4]);
}
