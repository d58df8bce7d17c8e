//! What `cuda_kernel!` embeds and how it becomes a loaded module on each device: the spec the
//! macro generates, the first-load type check, loading one module on one device,
//! the lazy per-device registry, the driver's view of parameter lists, and `Global` handles with
//! their stream ordering.

pub(crate) mod build; // how images are built at first use: the trait the loader calls
pub(crate) mod global; // Global<T>
pub(crate) mod image; // images into driver modules (load, symbol lookup, JIT log)
pub(crate) mod kernel; // KernelRef: one kernel of a module, by index
pub(crate) mod load; // one module on one device
pub(crate) mod order; // stream ordering of Global copies and launches
pub(crate) mod params; // the driver's view of a kernel's parameter list
pub(crate) mod prefault; // the first load's code mapped ahead
pub(crate) mod registry; // the registry: lazy per-device loading
pub(crate) mod spec; // what cuda_kernel! embeds (ModuleSpec, Image, KernelSpec, GlobalSpec)
pub(crate) mod typecheck; // first-load type check, cubin choice
