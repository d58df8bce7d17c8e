//! The device-buffer parameters of generated launchers: `const T*` takes `&impl DeviceBuffer<T>`,
//! `T*` takes `&mut impl DeviceBufferMut<T>`.
//!
//! They are cudarc's `DevicePtr`/`DevicePtrMut` with one difference: they are implemented for
//! each buffer type directly (`CudaSlice<T>`, `CudaView<T>`, `CudaViewMut<T>`), not through a
//! blanket impl, so a buffer of the wrong element type is reported with this crate's message on
//! the argument ("`CudaSlice<f64>` is not a device buffer of `f32`") instead of an unsatisfied
//! bound inside cudarc.
//!
//! They are `unsafe` traits because the safe launchers (`elementwise_kernel!`,
//! `reduction_kernel!`, [`ElementwiseProgram`](crate::ElementwiseProgram),
//! [`ReductionProgram`](crate::ReductionProgram)) check lengths with `len()` and then let the
//! kernel touch that many elements: cudarc's `DeviceSlice`/`DevicePtr` are safe to implement, so
//! a type of anyone's could report a length its memory does not have and make a safe launch
//! write past its end. Implementing these traits is where that promise is made. Another buffer
//! type (a wrapper of your own) opts in with an empty `unsafe impl` and the promise of the
//! `# Safety` sections below.

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DevicePtr, DevicePtrMut};

/// Device memory a kernel reads as `T` (a `const T*` parameter).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a device buffer of `{T}`",
    label = "expected `&CudaSlice<{T}>` or a view of `{T}` here",
    note = "a buffer type of your own is taken once it has an `unsafe impl DeviceBuffer<{T}>` (the launch trusts its \
            `len()`); for a template kernel, `{T}` is the instance the other arguments (or the one listed instance) \
            selected: pass a buffer of `{T}` or list the instance you meant in `instances = [...]`"
)]
///
/// # Safety
/// For every stream `s` of the buffer's context, the address `device_ptr(s)` returns must be the
/// start of `len()` elements of `T` (`len() * size_of::<T>()` bytes) of device memory of that
/// context (`stream().context()`), alive and not written by anything else while the guard it
/// returns lives; `len()` and `stream()` must not change while the buffer is borrowed.
pub unsafe trait DeviceBuffer<T>: DevicePtr<T> {}

/// Device memory a kernel writes as `T` (a `T*` parameter).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a writable device buffer of `{T}`",
    label = "expected `&mut CudaSlice<{T}>` or a `CudaViewMut<{T}>` here",
    note = "a buffer type of your own is taken once it has an `unsafe impl DeviceBufferMut<{T}>` (the launch trusts its \
            `len()`); for a template kernel, `{T}` is the instance the other arguments (or the one listed instance) \
            selected: pass a buffer of `{T}` or list the instance you meant in `instances = [...]`"
)]
///
/// # Safety
/// As for [`DeviceBuffer`], for the address `device_ptr_mut(s)` returns, which the kernel may
/// also write (nothing else reads or writes those elements while the guard lives).
pub unsafe trait DeviceBufferMut<T>: DevicePtrMut<T> {}

// SAFETY: cudarc's own buffers: `len()` elements from the pointer they give, in their context,
// ordered by cudarc's events while the guard lives.
unsafe impl<T> DeviceBuffer<T> for CudaSlice<T> {}
// SAFETY: as above (a view of a `CudaSlice`, within it).
unsafe impl<T> DeviceBuffer<T> for CudaView<'_, T> {}
// SAFETY: as above.
unsafe impl<T> DeviceBuffer<T> for CudaViewMut<'_, T> {}
// SAFETY: as above; borrowed exclusively, so nothing else uses the elements.
unsafe impl<T> DeviceBufferMut<T> for CudaSlice<T> {}
// SAFETY: as above.
unsafe impl<T> DeviceBufferMut<T> for CudaViewMut<'_, T> {}
