//! Every path into the runtime crate that generated code names, in one place: when the runtime's
//! API moves, this file is what changes.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// The runtime crate, as generated code names it, at `span`.
fn root(span: Span) -> TokenStream {
    quote_spanned!(span=> ::cuda_embed)
}

/// A public item of the runtime crate: `::cuda_embed::NAME`.
fn public(name: &str) -> TokenStream {
    let root = root(Span::call_site());
    let name = format_ident!("{}", name);
    quote!(#root::#name)
}

/// An item generated code needs but users do not: `::cuda_embed::__private::NAME`, at `span`.
fn private(name: &str, span: Span) -> TokenStream {
    let root = root(span);
    let name = format_ident!("{}", name, span = span);
    quote_spanned!(span=> #root::__private::#name)
}

/// A type the runtime crate exports for a CUDA builtin (`Half2`, `Float4`, `f16`).
pub fn crate_type(name: &str) -> TokenStream {
    public(name)
}

/// The loaded-module handle (`Module`), its `new` taking a `&'static ModuleSpec`.
pub fn module() -> TokenStream {
    public("Module")
}

/// The static description of a module: origin, image, kernels, globals.
pub fn module_spec() -> TokenStream {
    private("ModuleSpec", Span::call_site())
}

/// One kernel's entry in a [`module_spec`].
pub fn kernel_spec() -> TokenStream {
    private("KernelSpec", Span::call_site())
}

/// One global's entry in a [`module_spec`].
pub fn global_spec() -> TokenStream {
    private("GlobalSpec", Span::call_site())
}

/// The embedded image: `Image::Fatbin { .. }` or `Image::Source { .. }`.
pub fn image() -> TokenStream {
    private("Image", Span::call_site())
}

/// One translation unit of a separately compiled module linked at first use.
pub fn linked_unit() -> TokenStream {
    private("LinkedUnit", Span::call_site())
}

/// One parameter's first-load type check (modules built with no compiler).
pub fn param_check() -> TokenStream {
    private("ParamCheck", Span::call_site())
}

/// The typed handle of a global variable, `Global<T>`.
pub fn global() -> TokenStream {
    public("Global")
}

/// A device address passed as is (pointers to pointers).
pub fn raw_device_ptr() -> TokenStream {
    public("RawDevicePtr")
}

/// The stream a launch runs on.
pub fn stream() -> TokenStream {
    public("CudaStream")
}

/// The context device-wide settings are made on.
pub fn context() -> TokenStream {
    public("CudaContext")
}

/// Grid and block dimensions of a launch.
pub fn launch_config() -> TokenStream {
    public("LaunchConfig")
}

/// Cluster dimensions of a cluster launch.
pub fn cluster_dim() -> TokenStream {
    public("ClusterDim")
}

/// A kernel's registers and limits.
pub fn kernel_attributes() -> TokenStream {
    public("KernelAttributes")
}

/// The runtime's `Result`.
pub fn result() -> TokenStream {
    public("Result")
}

/// `c_void`, what launch arguments point to.
pub fn c_void() -> TokenStream {
    private("c_void", Span::call_site())
}

/// The stream a launch binds its buffers on (the launch stream, or a side stream under capture).
pub fn binding() -> TokenStream {
    private("kernel_binding", Span::call_site())
}

/// The one checked path an operand takes to its address (`cuda_embed::bind`): `bind("input")`
/// is the device check of a read buffer, whose result's `bind(&__binding)` gives the address.
/// Every launcher family binds every operand through it.
pub fn bind(name: &str) -> TokenStream {
    let name = format_ident!("{}", name);
    let private = private("bind", Span::call_site());
    quote!(#private::#name)
}

/// Read-only device memory a kernel takes (`const T*`).
pub fn device_ptr() -> TokenStream {
    private("DevicePtr", Span::call_site())
}

/// Device memory a kernel may write (`T*`).
pub fn device_ptr_mut() -> TokenStream {
    private("DevicePtrMut", Span::call_site())
}

/// The parameter bound of a `const T*` argument: `&impl DeviceBuffer<T>`.
pub fn device_buffer() -> TokenStream {
    public("DeviceBuffer")
}

/// The parameter bound of a `T*` argument: `&mut impl DeviceBufferMut<T>`.
pub fn device_buffer_mut() -> TokenStream {
    public("DeviceBufferMut")
}

/// The trait a `cudaTextureObject_t`/`cudaSurfaceObject_t` parameter takes (`&Texture`,
/// `&Surface` or a raw handle), `ObjectArg<H>`.
pub fn object_arg_trait() -> TokenStream {
    private("ObjectArg", Span::call_site())
}

/// The trait a `const __grid_constant__ CUtensorMap` parameter takes (`&TensorMap`, `&mut
/// TensorMapMut`), `TensorMapArg`.
pub fn tensor_map_arg() -> TokenStream {
    private("TensorMapArg", Span::call_site())
}

/// The trait (implemented by nothing) a stream launcher takes for a
/// `cudaGraphConditionalHandle` parameter: `LaunchCondition`.
pub fn launch_condition() -> TokenStream {
    private("LaunchCondition", Span::call_site())
}

/// The function that turns such an argument into its handle, checking its context.
pub fn object_arg() -> TokenStream {
    private("object_arg", Span::call_site())
}

/// The `const fn` that fails to compile for a user type that cannot be copied to the device;
/// at `span`, so that the error points at the user's type.
pub fn assert_device_safe(span: Span) -> TokenStream {
    private("assert_device_safe", span)
}

/// The untyped kernel handle every launcher goes through (`KernelRef`).
pub fn kernel_ref() -> TokenStream {
    public("KernelRef")
}

/// The future of awaited GPU work, `GpuFuture<'a, T>`.
pub fn gpu_future() -> TokenStream {
    public("GpuFuture")
}

/// The typed kernel value, `Kernel<Sig>`.
pub fn kernel() -> TokenStream {
    public("Kernel")
}

/// How a launch is made (`LaunchKind::Plain`, ...).
pub fn launch_kind() -> TokenStream {
    public("LaunchKind")
}

/// A by-value kernel-node argument the macro already checked, `graph::ByValue`.
pub fn by_value() -> TokenStream {
    let root = root(Span::call_site());
    quote!(#root::graph::ByValue)
}

/// A CUDA graph under construction, `Graph<'a>`.
pub fn graph() -> TokenStream {
    public("Graph")
}

/// An instantiated graph, `GraphExec<'a>`.
pub fn graph_exec() -> TokenStream {
    public("GraphExec")
}

/// A graph node handle, `Node`.
pub fn graph_node() -> TokenStream {
    public("Node")
}

/// A typed kernel node, `KernelNode<Sig>`.
pub fn kernel_node() -> TokenStream {
    public("KernelNode")
}

/// One kernel-node argument for a parameter marker, `graph::NodeArg<'a, M>`.
pub fn node_arg() -> TokenStream {
    let root = root(Span::call_site());
    quote!(#root::graph::NodeArg)
}

/// cudarc's function handle.
pub fn cuda_function() -> TokenStream {
    public("CudaFunction")
}

/// A parameter marker of a kernel signature: `In<T>`, `Out<T>`, `InAny`, `OutAny`.
pub fn marker(name: &str, elem: Option<TokenStream>) -> TokenStream {
    let path = private(name, Span::call_site());
    match elem {
        Some(t) => quote!(#path<#t>),
        None => path,
    }
}

/// Kernels with more parameters than this have no typed `Kernel` value (the runtime implements
/// argument tuples up to this length); their launchers are unaffected.
pub const MAX_TYPED_PARAMS: usize = 20;

/// What reduction launchers use: `reduce` (plans, scratch, length errors), `PlanKind`,
/// `DeviceSlice` (lengths), `Error`.
pub fn reduction(name: &str) -> TokenStream {
    match name {
        "Error" => public("Error"),
        _ => private(name, Span::call_site()),
    }
}
