//! Tensor maps for Hopper's tensor memory accelerator (TMA), made from N-D views.
//!
//! A [`TensorMap`] (read) or [`TensorMapMut`] (written) describes an [`NdView`]/[`NdViewMut`]
//! and a box (tile) shape to `cuTensorMapEncodeTiled`. A kernel takes it as a
//! `const __grid_constant__ CUtensorMap` parameter and moves whole boxes between global and
//! shared memory with `cp.async.bulk.tensor` (sm_90 and newer). The launcher generated for such a
//! parameter takes `&TensorMap` or `&mut TensorMapMut` and passes the 128-byte descriptor by
//! value.
//!
//! Everything the driver would refuse with a bare `CUDA_ERROR_INVALID_VALUE` is checked when the
//! map is made, and is an [`Error::Shape`] naming the rule and the fix:
//!
//! | rule | what |
//! |---|---|
//! | rank | 1 to 5 dimensions (the `RANK` parameter also refuses others at compile time) |
//! | alignment | the view's first element at a 16-byte aligned address |
//! | extent | every extent 1 to 2^32 (no empty view) |
//! | box extent | every box extent 1 to 256 |
//! | contiguous inner axis | the view's last axis has stride 1 |
//! | box inner bytes | the box's last extent times the element size a multiple of 16 bytes |
//! | stride alignment | every other stride positive, a multiple of 16 bytes (no broadcast, no reversed axis) |
//!
//! The element type is checked at compile time: [`TensorMapElement`] is implemented for the types
//! the TMA moves (`u8`..`u64`, `i8`..`i64`, `f16`, `bf16`, `f32`, `f64`, the fp8 types).
//!
//! A map borrows its view's buffer for as long as it lives, so the buffer cannot be freed,
//! moved or re-pointed while a map describes it; a written map borrows it exclusively, so no
//! other map or view can alias it. A launch checks that the map's memory is in the launch
//! stream's context and orders it with the buffer's other uses as cudarc does for any buffer.
//!
//! ```no_run
//! use cuda_embed_runtime::tensor_map::{TensorMap, TensorMapMut};
//! use cuda_embed_runtime::{NdView, NdViewMut};
//! # fn main() -> cuda_embed_runtime::Result<()> {
//! let ctx = cuda_embed_runtime::context(0)?;
//! let stream = ctx.default_stream();
//! let x = stream.alloc_zeros::<f32>(1024 * 1024)?;
//! let mut y = stream.alloc_zeros::<f32>(1024 * 1024)?;
//! let src = TensorMap::new(&NdView::new(&x, &[1024, 1024])?, [64, 64])?; // 64 x 64 f32 tiles
//! let mut yv = NdViewMut::new(&mut y, &[1024, 1024])?;
//! let mut dst = TensorMapMut::new(&mut yv, [64, 64])?;
//! // unsafe { tma_copy::launch(&stream, cfg, &src, &mut dst)? };
//! # let _ = (src, &mut dst); Ok(()) }
//! ```

mod arg;
mod rules;

pub use arg::TensorMapArg;
pub use rules::{ALIGN, MAX_BOX, MAX_RANK};

use crate::error::{DriverCode, Error, Result};
use crate::ndarray::{NdView, NdViewMut};
use crate::types::{bf16, f16, F8E4M3, F8E5M2};
use cudarc::driver::{sys, CudaContext, CudaView, CudaViewMut, DevicePtr, DeviceSlice};
use std::sync::Arc;

/// CUDA's `CUtensorMap`: the 128-byte opaque descriptor a kernel's `const __grid_constant__
/// CUtensorMap` parameter receives (aligned to 128 bytes, as CUDA 13's `cuda.h` declares it; CUDA
/// 12's 64 is met too).
#[repr(C, align(128))]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawTensorMap(pub [u64; 16]);

impl std::fmt::Debug for RawTensorMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RawTensorMap(..)")
    }
}

mod sealed {
    pub trait Sealed {}
    pub trait SealedRank {}
}

/// An element type a tensor map can describe, with the `CUtensorMapDataType` it is encoded as.
/// Sealed: implemented for the types the TMA moves. Signed integers and fp8 are encoded as the
/// unsigned type of their size: the TMA copies them bit for bit.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type a tensor map can describe",
    label = "not a TMA element type",
    note = "tensor maps describe u8, u16, u32, u64, i8, i16, i32, i64, f16, bf16, f32, f64, F8E4M3 and F8E5M2 \
            views; view a struct or vector buffer as one of these (e.g. `Float4` as `f32` with a last axis of 4)"
)]
pub trait TensorMapElement: sealed::Sealed + Copy {
    /// How `cuTensorMapEncodeTiled` is told the element type.
    const DATA_TYPE: sys::CUtensorMapDataType;
}

macro_rules! elements {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl TensorMapElement for $t {
            const DATA_TYPE: sys::CUtensorMapDataType = sys::CUtensorMapDataType::$d;
        }
    )*};
}
elements!(
    u8 => CU_TENSOR_MAP_DATA_TYPE_UINT8,
    i8 => CU_TENSOR_MAP_DATA_TYPE_UINT8,
    F8E4M3 => CU_TENSOR_MAP_DATA_TYPE_UINT8,
    F8E5M2 => CU_TENSOR_MAP_DATA_TYPE_UINT8,
    u16 => CU_TENSOR_MAP_DATA_TYPE_UINT16,
    i16 => CU_TENSOR_MAP_DATA_TYPE_UINT16,
    u32 => CU_TENSOR_MAP_DATA_TYPE_UINT32,
    i32 => CU_TENSOR_MAP_DATA_TYPE_INT32,
    u64 => CU_TENSOR_MAP_DATA_TYPE_UINT64,
    i64 => CU_TENSOR_MAP_DATA_TYPE_INT64,
    f16 => CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    bf16 => CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
    f32 => CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    f64 => CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
);

/// The rank `N` of a tensor map type, as a type: [`SupportedRank`] holds for `Rank<1>` to
/// `Rank<5>` only, so `TensorMap<'_, T, 6>` does not compile.
pub struct Rank<const N: usize>;

/// The ranks a tiled tensor map can have (1 to 5). Sealed.
#[diagnostic::on_unimplemented(
    message = "a tensor map has 1 to 5 dimensions: `{Self}` is not one of them",
    label = "rank out of range",
    note = "reshape the view to at most 5 dimensions (merge contiguous axes) before making the map"
)]
pub trait SupportedRank: sealed::SealedRank {}
macro_rules! ranks {
    ($($n:literal),*) => {$(
        impl sealed::SealedRank for Rank<$n> {}
        impl SupportedRank for Rank<$n> {}
    )*};
}
ranks!(1, 2, 3, 4, 5);

/// What both kinds of map hold besides their view: the descriptor and what it describes.
#[derive(Clone, Copy)]
struct Described<const RANK: usize> {
    pub(crate) raw: RawTensorMap,
    shape: [usize; RANK],
    box_shape: [u32; RANK],
    /// The bytes the map can address: `lo..hi`.
    pub(crate) range: (u64, u64),
}

/// A tensor map the kernel reads through (TMA loads, `cp.async.bulk.tensor.*.global`): made
/// from an [`NdView`] and a box shape (outermost axis first, as the view's shape), and borrowing
/// the view's buffer for `'a`. See the [module docs](self) for the rules checked.
pub struct TensorMap<'a, T, const RANK: usize> {
    buf: CudaView<'a, T>,
    map: Described<RANK>,
}

/// A tensor map the kernel may write through (TMA stores, `cp.async.bulk.tensor.*.global.shared`),
/// made from an [`NdViewMut`] and borrowing it exclusively for `'a`: a launch takes it as
/// `&mut`, as it takes a buffer the kernel writes.
pub struct TensorMapMut<'a, T, const RANK: usize> {
    buf: CudaViewMut<'a, T>,
    map: Described<RANK>,
}

impl<'a, T: TensorMapElement, const RANK: usize> TensorMap<'a, T, RANK>
where
    Rank<RANK>: SupportedRank,
{
    /// Encodes `view` with boxes of `box_shape` (outermost axis first). An
    /// [`Error::Shape`] names a broken rule (see the [module docs](self));
    /// an [`Error::Driver`] is a refusal of the driver's.
    pub fn new(view: &NdView<'a, T>, box_shape: [u32; RANK]) -> Result<Self> {
        let buf = view.buffer().slice(..);
        let (base, guard) = buf.device_ptr(buf.stream());
        // The address only is needed here; a launch orders the map's uses (see `arg.rs`).
        std::mem::forget(guard);
        let map = describe::<T, RANK>("TensorMap::new", buf.stream().context(), base, view.layout(), box_shape)?;
        Ok(TensorMap { buf, map })
    }
}

impl<'a, T: TensorMapElement, const RANK: usize> TensorMapMut<'a, T, RANK>
where
    Rank<RANK>: SupportedRank,
{
    /// Encodes `view` with boxes of `box_shape` (outermost axis first), borrowing the view
    /// exclusively while the map lives. Errors as for [`TensorMap::new`].
    pub fn new(view: &'a mut NdViewMut<'_, T>, box_shape: [u32; RANK]) -> Result<Self> {
        let layout = *view.layout();
        let buf = view.buf.slice_mut(..);
        let (base, guard) = buf.device_ptr(buf.stream());
        std::mem::forget(guard);
        let map = describe::<T, RANK>("TensorMapMut::new", buf.stream().context(), base, &layout, box_shape)?;
        Ok(TensorMapMut { buf, map })
    }
}

macro_rules! accessors {
    ($ty:ident) => {
        impl<T, const RANK: usize> $ty<'_, T, RANK> {
            /// The shape of the view it describes (outermost axis first).
            pub fn shape(&self) -> [usize; RANK] {
                self.map.shape
            }
            /// The box shape (outermost axis first).
            pub fn box_shape(&self) -> [u32; RANK] {
                self.map.box_shape
            }
            /// The descriptor itself, for code that passes it by hand (a `cudarc` launch
            /// builder, a `Kernel` value): valid while this map lives.
            pub fn raw(&self) -> &RawTensorMap {
                &self.map.raw
            }
            /// The context the described memory belongs to.
            pub fn context(&self) -> &Arc<CudaContext> {
                self.buf.stream().context()
            }
        }

        impl<T, const RANK: usize> std::fmt::Debug for $ty<'_, T, RANK> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("shape", &self.map.shape)
                    .field("box_shape", &self.map.box_shape)
                    .field("bytes", &format_args!("{:#x}..{:#x}", self.map.range.0, self.map.range.1))
                    .finish()
            }
        }
    };
}
accessors!(TensorMap);
accessors!(TensorMapMut);

/// Checks and encodes the view at buffer address `base` with `layout`.
fn describe<T: TensorMapElement, const RANK: usize>(
    op: &str,
    ctx: &Arc<CudaContext>,
    base: u64,
    layout: &crate::ndarray::Layout,
    box_shape: [u32; RANK],
) -> Result<Described<RANK>> {
    let elem = std::mem::size_of::<T>();
    let address = base + (layout.offset() * elem) as u64;
    let shape_error = |detail: String| Error::Shape { op: op.to_string(), detail };
    let enc = rules::check(layout.shape(), layout.strides(), address, elem, &box_shape).map_err(shape_error)?;
    let mut shape = [0usize; RANK];
    shape.copy_from_slice(layout.shape());
    // The last byte the view addresses: strides are positive (checked), so element [n-1, ...].
    let reach: usize = layout.shape().iter().zip(layout.strides()).map(|(&n, &s)| (n - 1) * s as usize).sum();
    let range = (address, address + ((reach + 1) * elem) as u64);
    let raw = encode::<T>(ctx, address, &enc)?;
    Ok(Described { raw, shape, box_shape, range })
}

/// `cuTensorMapEncodeTiled` of a checked encoding: no interleave, no swizzle, L2 promotion of 256
/// bytes, out-of-range elements read as zero.
fn encode<T: TensorMapElement>(ctx: &Arc<CudaContext>, address: u64, enc: &rules::Encoding) -> Result<RawTensorMap> {
    let mut raw = RawTensorMap([0; 16]);
    let element_strides = [1u32; MAX_RANK];
    // SAFETY: `raw` is 128 writable bytes aligned to 128 (at least CUtensorMap's alignment); the
    // arrays hold `rank` (strides: `rank - 1`) entries that `rules::check` validated; the address
    // is device memory the caller's view borrows. The call only writes `raw`.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut raw as *mut RawTensorMap as *mut sys::CUtensorMap,
            T::DATA_TYPE,
            enc.rank as u32,
            address as *mut std::ffi::c_void,
            enc.dims.as_ptr(),
            enc.strides.as_ptr(),
            enc.boxes.as_ptr(),
            element_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(Error::Driver { call: "cuTensorMapEncodeTiled", device: ctx.ordinal(), cause: DriverCode(r) });
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptor_has_cuda_13s_layout() {
        assert_eq!((std::mem::size_of::<RawTensorMap>(), std::mem::align_of::<RawTensorMap>()), (128, 128));
    }

    #[test]
    fn element_types_map_to_their_tma_type_of_the_same_size() {
        fn size(d: sys::CUtensorMapDataType) -> usize {
            use sys::CUtensorMapDataType::*;
            match d {
                CU_TENSOR_MAP_DATA_TYPE_UINT8 => 1,
                CU_TENSOR_MAP_DATA_TYPE_UINT16 | CU_TENSOR_MAP_DATA_TYPE_FLOAT16 | CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 => {
                    2
                }
                CU_TENSOR_MAP_DATA_TYPE_UINT32 | CU_TENSOR_MAP_DATA_TYPE_INT32 | CU_TENSOR_MAP_DATA_TYPE_FLOAT32 => 4,
                _ => 8,
            }
        }
        fn same<T: TensorMapElement>() {
            assert_eq!(size(T::DATA_TYPE), std::mem::size_of::<T>(), "{}", std::any::type_name::<T>());
        }
        same::<u8>();
        same::<i8>();
        same::<F8E4M3>();
        same::<u16>();
        same::<f16>();
        same::<bf16>();
        same::<i32>();
        same::<f32>();
        same::<u64>();
        same::<f64>();
    }
}
