//! The device-buffer parameters of generated launchers: `const T*` takes `&impl DeviceBuffer<T>`,
//! `T*` takes `&mut impl DeviceBufferMut<T>`.
//!
//! They are cudarc's `DevicePtr`/`DevicePtrMut` with one difference: they are implemented for
//! each buffer type directly (`CudaSlice<T>`, `CudaView<T>`, `CudaViewMut<T>`), not through a
//! blanket impl, so a buffer of the wrong element type is reported with this crate's message on
//! the argument ("`CudaSlice<f64>` is not a device buffer of `f32`") instead of an unsatisfied
//! bound inside cudarc. Another buffer type (a wrapper of your own) opts in with an empty impl,
//! given that it implements cudarc's trait.

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DevicePtr, DevicePtrMut};

/// Device memory a kernel reads as `T` (a `const T*` parameter).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a device buffer of `{T}`",
    label = "expected `&CudaSlice<{T}>` or a view of `{T}` here",
    note = "for a template kernel, `{T}` is the instance the other arguments (or the one listed instance) selected; \
            pass a buffer of `{T}` or list the instance you meant in `instances = [...]`"
)]
pub trait DeviceBuffer<T>: DevicePtr<T> {}

/// Device memory a kernel writes as `T` (a `T*` parameter).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a writable device buffer of `{T}`",
    label = "expected `&mut CudaSlice<{T}>` or a `CudaViewMut<{T}>` here",
    note = "for a template kernel, `{T}` is the instance the other arguments (or the one listed instance) selected; \
            pass a buffer of `{T}` or list the instance you meant in `instances = [...]`"
)]
pub trait DeviceBufferMut<T>: DevicePtrMut<T> {}

impl<T> DeviceBuffer<T> for CudaSlice<T> {}
impl<T> DeviceBuffer<T> for CudaView<'_, T> {}
impl<T> DeviceBuffer<T> for CudaViewMut<'_, T> {}
impl<T> DeviceBufferMut<T> for CudaSlice<T> {}
impl<T> DeviceBufferMut<T> for CudaViewMut<'_, T> {}
