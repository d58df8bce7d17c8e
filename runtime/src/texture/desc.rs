//! How a texture samples: [`TextureDesc`] (filter, address modes, coordinates, read mode) and
//! its checks, which run before the driver is called.

use super::format::{ChannelKind, Texel};
use crate::error::{Error, Result};
use cudarc::driver::sys;

/// How a texture turns a coordinate between texels into a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FilterMode {
    /// The nearest texel (`cudaFilterModePoint`).
    #[default]
    Point,
    /// Linear (1-D), bilinear (2-D) or trilinear (3-D) interpolation of the nearest texels
    /// (`cudaFilterModeLinear`). The hardware computes the weights in 9-bit fixed point (8 bits
    /// of fraction), so results are within about 1/256 of the texels' range of the exact
    /// interpolation. Needs a value that is read as a float: a float element type, or an 8-/16-bit
    /// integer with [`ReadMode::NormalizedFloat`].
    Linear,
}

/// What a texture returns for a coordinate outside `[0, size)` (or `[0, 1)` when normalised),
/// per dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AddressMode {
    /// Repeat the texture (`cudaAddressModeWrap`). Normalised coordinates only.
    Wrap,
    /// Repeat the edge texel (`cudaAddressModeClamp`).
    #[default]
    Clamp,
    /// Repeat the texture mirrored (`cudaAddressModeMirror`). Normalised coordinates only.
    Mirror,
    /// Return the border colour (`cudaAddressModeBorder`, zero unless
    /// [`TextureDesc::border_color`] sets it).
    Border,
}

impl AddressMode {
    fn raw(self) -> sys::CUaddress_mode {
        match self {
            AddressMode::Wrap => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
            AddressMode::Clamp => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
            AddressMode::Mirror => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
            AddressMode::Border => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER,
        }
    }
}

/// What a fetch of an integer texture returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ReadMode {
    /// The element type itself (`cudaReadModeElementType`): `tex2D<uchar4>` of a `UChar4`
    /// texture. Floats are always read as floats.
    #[default]
    ElementType,
    /// 8- and 16-bit integers as floats in `[0, 1]` (unsigned) or `[-1, 1]` (signed)
    /// (`cudaReadModeNormalizedFloat`): `tex2D<float4>` of a `UChar4` texture. Needed for linear
    /// filtering of integer data.
    NormalizedFloat,
}

/// How a texture over a [`CudaArray`](super::CudaArray) (or pitched memory) samples.
///
/// The default is CUDA's: point sampling, clamp in every dimension, unnormalised coordinates
/// (`[0, width)`, texel centres at `i + 0.5`), the element type read as itself.
///
/// ```
/// use cuda_embed_runtime::texture::{AddressMode, FilterMode, TextureDesc};
/// let desc = TextureDesc::new().filter(FilterMode::Linear).address(AddressMode::Wrap).normalized_coords(true);
/// desc.check::<f32>(2)?;                       // what `Texture::new` checks first
/// assert!(desc.check::<u8>(2).is_err());       // linear filtering of bytes read as bytes
/// # Ok::<(), cuda_embed_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TextureDesc {
    pub(crate) filter: FilterMode,
    pub(crate) address: [AddressMode; 3],
    pub(crate) normalized: bool,
    pub(crate) read: ReadMode,
    pub(crate) border: [f32; 4],
}

impl TextureDesc {
    /// The default description (see the type's docs).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the filter mode.
    pub fn filter(mut self, mode: FilterMode) -> Self {
        self.filter = mode;
        self
    }

    /// Sets the address mode of every dimension.
    pub fn address(mut self, mode: AddressMode) -> Self {
        self.address = [mode; 3];
        self
    }

    /// Sets the address modes of x, y and z separately (unused dimensions are ignored).
    pub fn address_xyz(mut self, x: AddressMode, y: AddressMode, z: AddressMode) -> Self {
        self.address = [x, y, z];
        self
    }

    /// Whether coordinates are normalised: `[0, 1)` spans the texture in each dimension.
    pub fn normalized_coords(mut self, on: bool) -> Self {
        self.normalized = on;
        self
    }

    /// Sets the read mode (matters only for integer element types).
    pub fn read_mode(mut self, mode: ReadMode) -> Self {
        self.read = mode;
        self
    }

    /// The value [`AddressMode::Border`] returns (per channel, as floats; default zero).
    pub fn border_color(mut self, rgba: [f32; 4]) -> Self {
        self.border = rgba;
        self
    }

    /// Checks that this description can sample a `dims`-dimensional texture of `T`, with the
    /// rules the driver would otherwise apply silently or report as a bare
    /// `CUDA_ERROR_INVALID_VALUE`:
    /// - linear filtering needs a float result: a float `T`, or [`ReadMode::NormalizedFloat`]
    ///   of an 8-/16-bit integer `T`;
    /// - [`ReadMode::NormalizedFloat`] exists for 8- and 16-bit integers only;
    /// - [`AddressMode::Wrap`] and [`AddressMode::Mirror`] need normalised coordinates (CUDA
    ///   would quietly clamp instead).
    pub fn check<T: Texel>(&self, dims: usize) -> Result<()> {
        let what = || format!("a {dims}-D texture of `{}`", T::CUDA_NAME);
        if self.read == ReadMode::NormalizedFloat && !T::KIND.is_float() && !T::KIND.normalizable() {
            return Err(Error::Texture {
                what: what(),
                cause: "ReadMode::NormalizedFloat needs 8- or 16-bit integer channels".into(),
                fix: Some("use ReadMode::ElementType, or store the data as 8-/16-bit integers or floats".into()),
            });
        }
        let reads_float = T::KIND.is_float() || self.read == ReadMode::NormalizedFloat;
        if self.filter == FilterMode::Linear && !reads_float {
            let fix = if T::KIND.normalizable() {
                "read it as a normalised float (`.read_mode(ReadMode::NormalizedFloat)`), use FilterMode::Point, or store floats"
            } else {
                "use FilterMode::Point, or store the data as floats (or 8-/16-bit integers read as normalised floats)"
            };
            return Err(Error::Texture {
                what: what(),
                cause: format!(
                    "linear filtering needs a float read type, but `{}` is read as itself (ReadMode::ElementType)",
                    T::CUDA_NAME
                ),
                fix: Some(fix.into()),
            });
        }
        if !self.normalized {
            for (axis, mode) in ["x", "y", "z"].iter().zip(self.address).take(dims) {
                if matches!(mode, AddressMode::Wrap | AddressMode::Mirror) {
                    return Err(Error::Texture {
                        what: what(),
                        cause: format!("address mode {mode:?} in {axis} needs normalised coordinates"),
                        fix: Some(
                            "add `.normalized_coords(true)` (and sample at `(i + 0.5) / size`), or use Clamp or Border"
                                .into(),
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The driver's texture descriptor for element type `T`.
    pub(crate) fn raw<T: Texel>(&self) -> sys::CUDA_TEXTURE_DESC {
        let mut flags = 0;
        let integer = matches!(T::KIND, ChannelKind::Signed(_) | ChannelKind::Unsigned(_));
        if integer && self.read == ReadMode::ElementType {
            flags |= sys::CU_TRSF_READ_AS_INTEGER;
        }
        if self.normalized {
            flags |= sys::CU_TRSF_NORMALIZED_COORDINATES;
        }
        let filter = match self.filter {
            FilterMode::Point => sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT,
            FilterMode::Linear => sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR,
        };
        sys::CUDA_TEXTURE_DESC {
            addressMode: self.address.map(AddressMode::raw),
            filterMode: filter,
            flags,
            maxAnisotropy: 0,
            mipmapFilterMode: sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT,
            mipmapLevelBias: 0.0,
            minMipmapLevelClamp: 0.0,
            maxMipmapLevelClamp: 0.0,
            borderColor: self.border,
            reserved: [0; 12],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Float4, UChar4};

    fn message(r: Result<()>) -> String {
        r.expect_err("the description should be refused").to_string()
    }

    #[test]
    fn linear_filtering_of_integers_read_as_integers_is_refused_with_the_fix() {
        let linear = TextureDesc::new().filter(FilterMode::Linear);
        let m = message(linear.check::<u8>(2));
        assert!(m.contains("linear filtering needs a float read type"), "{m}");
        assert!(m.contains("ReadMode::NormalizedFloat"), "{m}");
        let m = message(linear.check::<i32>(1));
        assert!(m.contains("use FilterMode::Point"), "{m}");
        linear.read_mode(ReadMode::NormalizedFloat).check::<UChar4>(2).unwrap();
        linear.check::<Float4>(3).unwrap();
        linear.check::<crate::types::f16>(2).unwrap();
    }

    #[test]
    fn normalized_read_of_32_bit_integers_is_refused() {
        let m = message(TextureDesc::new().read_mode(ReadMode::NormalizedFloat).check::<u32>(2));
        assert!(m.contains("8- or 16-bit integer"), "{m}");
    }

    #[test]
    fn wrap_and_mirror_need_normalized_coordinates() {
        let m = message(TextureDesc::new().address(AddressMode::Wrap).check::<f32>(2));
        assert!(m.contains("address mode Wrap in x needs normalised coordinates"), "{m}");
        assert!(m.contains(".normalized_coords(true)"), "{m}");
        // Only the texture's own dimensions count.
        let d = TextureDesc::new().address_xyz(AddressMode::Clamp, AddressMode::Clamp, AddressMode::Mirror);
        d.check::<f32>(2).unwrap();
        assert!(d.check::<f32>(3).is_err());
        TextureDesc::new().address(AddressMode::Mirror).normalized_coords(true).check::<f32>(3).unwrap();
    }

    #[test]
    fn raw_descriptor_sets_the_driver_flags() {
        let d = TextureDesc::new().normalized_coords(true).border_color([1.0, 0.0, 0.0, 1.0]);
        let r = d.raw::<u8>();
        assert_eq!(r.flags, sys::CU_TRSF_READ_AS_INTEGER | sys::CU_TRSF_NORMALIZED_COORDINATES);
        assert_eq!(r.borderColor, [1.0, 0.0, 0.0, 1.0]);
        let r = d.read_mode(ReadMode::NormalizedFloat).filter(FilterMode::Linear).raw::<u8>();
        assert_eq!(r.flags, sys::CU_TRSF_NORMALIZED_COORDINATES);
        assert_eq!(r.filterMode, sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR);
        // Floats never get READ_AS_INTEGER.
        assert_eq!(TextureDesc::new().raw::<f32>().flags, 0);
    }
}
