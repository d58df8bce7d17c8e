//! Rust twins of the CUDA runtime's plain structs that kernels take by value: `cudaExtent`,
//! `cudaPitchedPtr` and `cudaPos` (from `driver_types.h`, which nvcc includes in every `.cu`
//! file), so that `__global__ void k(cudaPitchedPtr p, cudaExtent e)` gets a launcher taking
//! [`CudaPitchedPtr`] and [`CudaExtent`] with no hand-written Rust.
//!
//! Each is `#[repr(C)]` with the CUDA field names, in the CUDA order, and records its fields in
//! [`DeviceSafe::LAYOUT`]: `cuda_kernel!` asks the compiler where each member of the toolkit's
//! struct lies and compares (as for any struct passed by value), besides checking the size
//! against the compiled kernel's parameter.

use crate::types::{AnyBitPattern, DeviceSafe, FieldLayout, RawDevicePtr};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use std::mem::{offset_of, size_of};

/// CUDA `cudaExtent`: the size of a 3-D region, `width` in bytes (or elements, for arrays),
/// `height` and `depth` in rows and slices; what `make_cudaExtent(w, h, d)` builds.
///
/// ```
/// let e = cuda_embed_runtime::CudaExtent::new(256, 64, 4);
/// assert_eq!((e.width, e.height, e.depth), (256, 64, 4));
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CudaExtent {
    /// Width in bytes (elements for a CUDA array).
    pub width: usize,
    /// Height in rows.
    pub height: usize,
    /// Depth in slices.
    pub depth: usize,
}

impl CudaExtent {
    /// `make_cudaExtent(width, height, depth)`.
    pub const fn new(width: usize, height: usize, depth: usize) -> Self {
        CudaExtent { width, height, depth }
    }
}

/// CUDA `cudaPitchedPtr`: a pitched 2-D/3-D allocation, what `make_cudaPitchedPtr(ptr, pitch,
/// xsize, ysize)` builds: `ptr` the device address of the first row, `pitch` the bytes from one
/// row to the next, `xsize` the logical row width (in elements or bytes, as the kernel reads it)
/// and `ysize` the rows per slice.
///
/// A device address is only a number here: the kernel that receives it may read and write the
/// memory behind it, which the launch's `unsafe` covers. Take it from a buffer with
/// [`RawDevicePtr::of`].
///
/// ```no_run
/// # fn f(stream: &cudarc::driver::CudaStream, buf: &cudarc::driver::CudaSlice<f32>) {
/// use cuda_embed_runtime::{CudaPitchedPtr, RawDevicePtr};
/// // 100 rows of 60 floats, each row padded to 256 bytes.
/// let p = CudaPitchedPtr::new(RawDevicePtr::of(buf, stream), 256, 60, 100);
/// # }
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CudaPitchedPtr {
    /// The device address of the first row.
    pub ptr: RawDevicePtr,
    /// Bytes from the start of one row to the next.
    pub pitch: usize,
    /// The logical width of a row.
    pub xsize: usize,
    /// The number of rows per slice.
    pub ysize: usize,
}

impl CudaPitchedPtr {
    /// `make_cudaPitchedPtr(ptr, pitch, xsize, ysize)`.
    pub const fn new(ptr: RawDevicePtr, pitch: usize, xsize: usize, ysize: usize) -> Self {
        CudaPitchedPtr { ptr, pitch, xsize, ysize }
    }
}

/// CUDA `cudaPos`: a position in a 3-D region, what `make_cudaPos(x, y, z)` builds.
///
/// ```
/// let p = cuda_embed_runtime::CudaPos::new(1, 2, 3);
/// assert_eq!((p.x, p.y, p.z), (1, 2, 3));
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CudaPos {
    /// x (bytes or elements, as the kernel reads it).
    pub x: usize,
    /// y (rows).
    pub y: usize,
    /// z (slices).
    pub z: usize,
}

impl CudaPos {
    /// `make_cudaPos(x, y, z)`.
    pub const fn new(x: usize, y: usize, z: usize) -> Self {
        CudaPos { x, y, z }
    }
}

macro_rules! toolkit_structs {
    ($($t:ident { $($f:ident: $ft:ty),* }),*) => { $(
        // SAFETY: repr(C) with the CUDA struct's fields (64-bit `size_t` and pointers), in the
        // CUDA order; plain data.
        unsafe impl DeviceSafe for $t {
            const LAYOUT: Option<&'static [FieldLayout]> = Some(&[
                $(FieldLayout { name: stringify!($f), offset: offset_of!($t, $f), size: size_of::<$ft>() }),*
            ]);
        }
        // SAFETY: as above.
        unsafe impl DeviceRepr for $t {}
        // SAFETY: all fields are integers (or a device address), for which zero is valid.
        unsafe impl ValidAsZeroBits for $t {}
        // SAFETY: every bit pattern of every field is valid.
        unsafe impl AnyBitPattern for $t {}
    )* };
}
toolkit_structs!(
    CudaExtent { width: usize, height: usize, depth: usize },
    CudaPitchedPtr { ptr: RawDevicePtr, pitch: usize, xsize: usize, ysize: usize },
    CudaPos { x: usize, y: usize, z: usize }
);

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::align_of;

    #[test]
    fn toolkit_structs_have_the_cuda_layout() {
        // From CUDA 13's driver_types.h (LP64): size_t and pointers are 8 bytes.
        assert_eq!((size_of::<CudaExtent>(), align_of::<CudaExtent>()), (24, 8));
        assert_eq!((size_of::<CudaPitchedPtr>(), align_of::<CudaPitchedPtr>()), (32, 8));
        assert_eq!((size_of::<CudaPos>(), align_of::<CudaPos>()), (24, 8));
        let names: Vec<(&str, usize)> = CudaPitchedPtr::LAYOUT.unwrap().iter().map(|f| (f.name, f.offset)).collect();
        assert_eq!(names, [("ptr", 0), ("pitch", 8), ("xsize", 16), ("ysize", 24)]);
        crate::types::check_layout::<CudaExtent>("cudaExtent", &[("width", 0, 8), ("height", 8, 8), ("depth", 16, 8)]);
    }
}
