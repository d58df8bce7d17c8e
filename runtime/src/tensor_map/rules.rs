//! The rules a tiled tensor map must keep, checked on plain numbers (no driver, no device memory)
//! before `cuTensorMapEncodeTiled` is called: what the driver would refuse with a bare
//! `CUDA_ERROR_INVALID_VALUE` is refused here with the rule's name and the fix.
//!
//! CUDA orders a tensor map's dimensions innermost first; an [`NdView`](crate::NdView) orders them
//! outermost first (row-major). [`Encoding`] holds them in CUDA's order.

/// `[a, b, c]` for messages.
fn show<T: std::fmt::Display>(v: &[T]) -> String {
    format!("[{}]", v.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
}

/// The largest rank of a tiled tensor map.
pub const MAX_RANK: usize = 5;
/// The largest extent of a box dimension.
pub const MAX_BOX: u32 = 256;
/// The alignment in bytes of the global address and of every stride.
pub const ALIGN: u64 = 16;
/// Global dimensions must be at most this (2^32).
const MAX_DIM: u64 = 1 << 32;
/// Global strides must be below this (2^40 bytes).
const MAX_STRIDE: u64 = 1 << 40;

/// The numbers `cuTensorMapEncodeTiled` takes, innermost dimension first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoding {
    /// The rank.
    pub rank: usize,
    /// The extent of each dimension.
    pub dims: [u64; MAX_RANK],
    /// The stride in bytes of dimensions 1.. (dimension 0 is contiguous); `rank - 1` used.
    pub strides: [u64; MAX_RANK - 1],
    /// The box (tile) extent of each dimension.
    pub boxes: [u32; MAX_RANK],
}

/// Checks a view (`shape`, `strides` in elements, outermost first; element `[0, ..]` at device
/// address `address`; elements of `elem` bytes) and a `box_shape` (outermost first) against
/// the rules of a tiled tensor map, and returns the encoding. The message of an error names the
/// rule and the fix.
pub fn check(
    shape: &[usize],
    strides: &[isize],
    address: u64,
    elem: usize,
    box_shape: &[u32],
) -> Result<Encoding, String> {
    let rank = shape.len();
    if !(1..=MAX_RANK).contains(&rank) {
        return Err(format!(
            "rank: a tensor map has 1 to {MAX_RANK} dimensions, but the view has {rank} (shape {}); \
             reshape or slice the view to at most {MAX_RANK} dimensions",
            show(shape)
        ));
    }
    if box_shape.len() != rank {
        return Err(format!(
            "box rank: the box {} has {} dimensions but the view {} has {rank}; give one box extent per view dimension",
            show(box_shape),
            box_shape.len(),
            show(shape)
        ));
    }
    if !address.is_multiple_of(ALIGN) {
        return Err(format!(
            "alignment: the view's first element is at address {address:#x}, not a multiple of {ALIGN} bytes; \
             start the view at an element whose byte offset in the buffer is a multiple of {ALIGN}"
        ));
    }
    let (elem_u, mut enc) =
        (elem as u64, Encoding { rank, dims: [1; MAX_RANK], strides: [0; MAX_RANK - 1], boxes: [1; MAX_RANK] });
    for (k, (&n, &b)) in shape.iter().zip(box_shape).enumerate() {
        let cuda = rank - 1 - k; // CUDA's index of view axis `k`
        if n == 0 || n as u64 > MAX_DIM {
            return Err(format!(
                "extent: axis {k} of shape {} has extent {n}; each extent must be 1 to 2^32 (an empty view has \
                 nothing to map)",
                show(shape)
            ));
        }
        if !(1..=MAX_BOX).contains(&b) {
            return Err(format!(
                "box extent: axis {k} of box {} is {b}; each box extent must be 1 to {MAX_BOX}",
                show(box_shape)
            ));
        }
        enc.dims[cuda] = n as u64;
        enc.boxes[cuda] = b;
    }
    if strides[rank - 1] != 1 && shape[rank - 1] > 1 {
        return Err(format!(
            "contiguous inner axis: the last axis of a tensor map is read contiguously, but the view's strides {} \
             step {} elements along it; make the last axis contiguous (stride 1), e.g. copy or permute the view \
             so that the fastest-moving axis comes last",
            show(strides),
            strides[rank - 1]
        ));
    }
    let inner = u64::from(box_shape[rank - 1]) * elem_u;
    if !inner.is_multiple_of(ALIGN) {
        return Err(format!(
            "box inner bytes: the box's last extent {} times the element size {elem} is {inner} bytes, not a \
             multiple of {ALIGN}; use a last box extent that is a multiple of {}",
            box_shape[rank - 1],
            ALIGN / gcd(ALIGN, elem_u)
        ));
    }
    for k in 0..rank - 1 {
        let s = strides[k];
        let bytes = (s as i128) * elem as i128;
        if s <= 0 || !(bytes as u64).is_multiple_of(ALIGN) || bytes as u64 >= MAX_STRIDE {
            return Err(format!(
                "stride alignment: axis {k} of strides {} (elements) is {bytes} bytes; every stride but the last \
                 must be positive, a multiple of {ALIGN} bytes and below 2^40 (no broadcast or reversed axes); \
                 pad the rows so each is a multiple of {ALIGN} bytes",
                show(strides)
            ));
        }
        enc.strides[rank - 2 - k] = bytes as u64;
    }
    Ok(enc)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(r: Result<Encoding, String>) -> String {
        let e = r.expect_err("refused");
        e.split(':').next().unwrap_or_default().to_string()
    }

    #[test]
    fn a_row_major_view_is_encoded_innermost_first() {
        let e = check(&[4, 8, 32], &[256, 32, 1], 0x1000, 4, &[2, 4, 8]).unwrap();
        assert_eq!(e.rank, 3);
        assert_eq!(&e.dims[..3], &[32, 8, 4]);
        assert_eq!(&e.strides[..2], &[128, 1024]);
        assert_eq!(&e.boxes[..3], &[8, 4, 2]);
    }

    #[test]
    fn every_rank_from_one_to_five_is_accepted() {
        for rank in 1..=5 {
            let shape = vec![4usize; rank];
            let strides: Vec<isize> = (0..rank).rev().map(|k| 4isize.pow(k as u32)).collect();
            let boxes = vec![4u32; rank];
            assert!(check(&shape, &strides, 0, 4, &boxes).is_ok(), "rank {rank}");
        }
    }

    #[test]
    fn each_rule_is_named() {
        assert_eq!(rule(check(&[4; 6], &[1024, 256, 64, 16, 4, 1], 0, 4, &[4; 6])), "rank");
        assert_eq!(rule(check(&[], &[], 0, 4, &[])), "rank");
        assert_eq!(rule(check(&[4, 4], &[4, 1], 0, 4, &[4])), "box rank");
        assert_eq!(rule(check(&[64], &[1], 0x1004, 4, &[4])), "alignment");
        assert_eq!(rule(check(&[0, 4], &[4, 1], 0, 4, &[1, 4])), "extent");
        assert_eq!(rule(check(&[4, 4], &[4, 1], 0, 4, &[0, 4])), "box extent");
        assert_eq!(rule(check(&[4, 512], &[512, 1], 0, 4, &[257, 4])), "box extent");
        assert_eq!(rule(check(&[4, 8], &[1, 4], 0, 4, &[4, 4])), "contiguous inner axis");
        assert_eq!(rule(check(&[4, 8], &[8, 1], 0, 4, &[4, 2])), "box inner bytes");
        assert_eq!(rule(check(&[4, 6], &[6, 1], 0, 4, &[4, 4])), "stride alignment");
        assert_eq!(rule(check(&[4, 8], &[0, 1], 0, 4, &[4, 4])), "stride alignment");
        assert_eq!(rule(check(&[4, 8], &[-8, 1], 0x100, 4, &[4, 4])), "stride alignment");
    }

    #[test]
    fn messages_say_the_fix() {
        let e = check(&[4, 8], &[8, 1], 0, 2, &[4, 4]).unwrap_err();
        assert!(e.contains("multiple of 8"), "{e}");
        let e = check(&[64], &[1], 0x1004, 4, &[4]).unwrap_err();
        assert!(e.contains("0x1004") && e.contains("multiple of 16"), "{e}");
    }
}
