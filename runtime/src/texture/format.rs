//! Element types of CUDA arrays and textures ([`Texel`]): the driver's channel format and count
//! for each Rust type.

use crate::types::{
    f16, Char2, Char4, DeviceSafe, Float2, Float4, Half2, Int2, Int4, Short2, Short4, UChar2, UChar4, UInt2, UInt4,
    UShort2, UShort4,
};
use cudarc::driver::sys::CUarray_format;
use cudarc::driver::ValidAsZeroBits;

/// What one channel of a [`Texel`] holds; decides which read modes and filters a texture of it
/// may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    /// 32-bit float.
    Float,
    /// 16-bit float (`__half`): sampled as `float`.
    Half,
    /// Signed integer of this many bits (8, 16, 32).
    Signed(u32),
    /// Unsigned integer of this many bits (8, 16, 32).
    Unsigned(u32),
}

impl ChannelKind {
    /// Whether a texture may return this channel as a normalised float (`[0, 1]` unsigned,
    /// `[-1, 1]` signed): 8- and 16-bit integers only (CUDA's rule for
    /// `cudaReadModeNormalizedFloat`).
    pub fn normalizable(self) -> bool {
        matches!(self, ChannelKind::Signed(8 | 16) | ChannelKind::Unsigned(8 | 16))
    }

    /// Whether the channel is a floating-point type (sampled as `float` in every read mode).
    pub fn is_float(self) -> bool {
        matches!(self, ChannelKind::Float | ChannelKind::Half)
    }
}

/// A type a [`CudaArray`](super::CudaArray) or a texture can hold: a scalar or a 2-/4-channel
/// CUDA vector type whose channels the texture hardware knows.
///
/// | Rust | CUDA | channels |
/// |---|---|---|
/// | `f32`, [`Float2`], [`Float4`] | `float`, `float2`, `float4` | 1, 2, 4 |
/// | [`f16`](struct@f16), [`Half2`] | `__half`, `__half2` | 1, 2 |
/// | `u8`, [`UChar2`], [`UChar4`] / `i8`, [`Char2`], [`Char4`] | `unsigned char`.. / `signed char`.. | 1, 2, 4 |
/// | `u16`, [`UShort2`], [`UShort4`] / `i16`, [`Short2`], [`Short4`] | `unsigned short`.. / `short`.. | 1, 2, 4 |
/// | `u32`, [`UInt2`], [`UInt4`] / `i32`, [`Int2`], [`Int4`] | `unsigned int`.. / `int`.. | 1, 2, 4 |
///
/// Three-channel types have no CUDA array format (the driver takes 1, 2 or 4 channels).
///
/// # Safety
/// `Self` must be `CHANNELS` values of the channel type `FORMAT` names, packed with no padding
/// (its size is `CHANNELS` times the channel's size): the driver copies and samples it as such.
pub unsafe trait Texel: DeviceSafe + ValidAsZeroBits {
    /// The driver's channel format.
    const FORMAT: CUarray_format;
    /// The number of channels: 1, 2 or 4.
    const CHANNELS: u32;
    /// What each channel holds.
    const KIND: ChannelKind;
    /// The CUDA spelling, for messages (`float4`).
    const CUDA_NAME: &'static str;
}

macro_rules! texels {
    ($($t:ty => $fmt:ident, $n:literal, $kind:expr, $name:literal;)*) => { $(
        // SAFETY: `$t` is `$n` packed channels of `$fmt` (the vector types are repr(C) with
        // their CUDA layout, checked in types.rs, and no padding for 1/2/4 channels).
        unsafe impl Texel for $t {
            const FORMAT: CUarray_format = CUarray_format::$fmt;
            const CHANNELS: u32 = $n;
            const KIND: ChannelKind = $kind;
            const CUDA_NAME: &'static str = $name;
        }
    )* };
}

use ChannelKind::{Float, Half, Signed, Unsigned};
texels! {
    f32 => CU_AD_FORMAT_FLOAT, 1, Float, "float";
    Float2 => CU_AD_FORMAT_FLOAT, 2, Float, "float2";
    Float4 => CU_AD_FORMAT_FLOAT, 4, Float, "float4";
    f16 => CU_AD_FORMAT_HALF, 1, Half, "__half";
    Half2 => CU_AD_FORMAT_HALF, 2, Half, "__half2";
    u8 => CU_AD_FORMAT_UNSIGNED_INT8, 1, Unsigned(8), "unsigned char";
    UChar2 => CU_AD_FORMAT_UNSIGNED_INT8, 2, Unsigned(8), "uchar2";
    UChar4 => CU_AD_FORMAT_UNSIGNED_INT8, 4, Unsigned(8), "uchar4";
    i8 => CU_AD_FORMAT_SIGNED_INT8, 1, Signed(8), "signed char";
    Char2 => CU_AD_FORMAT_SIGNED_INT8, 2, Signed(8), "char2";
    Char4 => CU_AD_FORMAT_SIGNED_INT8, 4, Signed(8), "char4";
    u16 => CU_AD_FORMAT_UNSIGNED_INT16, 1, Unsigned(16), "unsigned short";
    UShort2 => CU_AD_FORMAT_UNSIGNED_INT16, 2, Unsigned(16), "ushort2";
    UShort4 => CU_AD_FORMAT_UNSIGNED_INT16, 4, Unsigned(16), "ushort4";
    i16 => CU_AD_FORMAT_SIGNED_INT16, 1, Signed(16), "short";
    Short2 => CU_AD_FORMAT_SIGNED_INT16, 2, Signed(16), "short2";
    Short4 => CU_AD_FORMAT_SIGNED_INT16, 4, Signed(16), "short4";
    u32 => CU_AD_FORMAT_UNSIGNED_INT32, 1, Unsigned(32), "unsigned int";
    UInt2 => CU_AD_FORMAT_UNSIGNED_INT32, 2, Unsigned(32), "uint2";
    UInt4 => CU_AD_FORMAT_UNSIGNED_INT32, 4, Unsigned(32), "uint4";
    i32 => CU_AD_FORMAT_SIGNED_INT32, 1, Signed(32), "int";
    Int2 => CU_AD_FORMAT_SIGNED_INT32, 2, Signed(32), "int2";
    Int4 => CU_AD_FORMAT_SIGNED_INT32, 4, Signed(32), "int4";
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel_bytes(kind: ChannelKind) -> usize {
        match kind {
            ChannelKind::Float => 4,
            ChannelKind::Half => 2,
            ChannelKind::Signed(b) | ChannelKind::Unsigned(b) => b as usize / 8,
        }
    }

    fn packed<T: Texel>() {
        assert_eq!(std::mem::size_of::<T>(), T::CHANNELS as usize * channel_bytes(T::KIND), "{}", T::CUDA_NAME);
    }

    #[test]
    fn every_texel_is_its_channels_packed() {
        packed::<f32>();
        packed::<Float2>();
        packed::<Float4>();
        packed::<f16>();
        packed::<Half2>();
        packed::<u8>();
        packed::<UChar2>();
        packed::<UChar4>();
        packed::<i8>();
        packed::<Char2>();
        packed::<Char4>();
        packed::<u16>();
        packed::<UShort2>();
        packed::<UShort4>();
        packed::<i16>();
        packed::<Short2>();
        packed::<Short4>();
        packed::<u32>();
        packed::<UInt2>();
        packed::<UInt4>();
        packed::<i32>();
        packed::<Int2>();
        packed::<Int4>();
    }

    #[test]
    fn only_narrow_integers_normalize() {
        assert!(ChannelKind::Unsigned(8).normalizable());
        assert!(ChannelKind::Signed(16).normalizable());
        assert!(!ChannelKind::Unsigned(32).normalizable());
        assert!(!ChannelKind::Float.normalizable());
        assert!(ChannelKind::Half.is_float());
    }
}
