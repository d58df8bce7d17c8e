//! CPU references for the N-D tests: the elements a layout addresses, reductions over any set of
//! axes, and an element-wise comparison of results.

use cuda_embed::ndarray::Layout;

/// The elements of `buf` a layout addresses, in row-major index order.
pub fn gather<T: Copy>(buf: &[T], l: &Layout) -> Vec<T> {
    (0..l.len())
        .map(|flat| {
            let (mut rem, mut at) = (flat, l.offset() as isize);
            for d in (0..l.rank()).rev() {
                at += (rem % l.shape()[d]) as isize * l.strides()[d];
                rem /= l.shape()[d];
            }
            buf[at as usize]
        })
        .collect()
}

/// The element of the buffer behind `l` at coordinates `coord`.
pub fn element_at(l: &Layout, coord: &[usize]) -> usize {
    let at = l.offset() as isize + coord.iter().zip(l.strides()).map(|(&c, &s)| c as isize * s).sum::<isize>();
    at as usize
}

/// For each kept index (row-major over the axes not in `axes`), the sum over the reduced axes
/// (row-major over `axes`) of `f(coordinates in shape, reduced index)`.
pub fn reduce_axes(shape: &[usize], axes: &[usize], f: impl Fn(&[usize], usize) -> f64) -> Vec<f64> {
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let red: Vec<usize> = (0..shape.len()).filter(|a| axes.contains(a)).collect();
    let count = |ax: &[usize]| ax.iter().map(|&a| shape[a]).product::<usize>();
    let mut out = vec![0.0; count(&kept)];
    for (k, o) in out.iter_mut().enumerate() {
        let mut coord = vec![0usize; shape.len()];
        let mut rem = k;
        for &a in kept.iter().rev() {
            coord[a] = rem % shape[a];
            rem /= shape[a];
        }
        for r in 0..count(&red) {
            let mut rem = r;
            for &a in red.iter().rev() {
                coord[a] = rem % shape[a];
                rem /= shape[a];
            }
            *o += f(&coord, r);
        }
    }
    out
}

/// [`reduce_axes`] of `f(flat row-major index in shape)`.
pub fn reduce_flat(shape: &[usize], axes: &[usize], f: impl Fn(usize) -> f64) -> Vec<f64> {
    reduce_axes(shape, axes, |coord, _| f(coord.iter().zip(shape).fold(0usize, |acc, (&c, &n)| acc * n + c)))
}

/// Asserts every element of `got` is within 1e-9 relative (absolute below 1) of `want`.
pub fn all_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{what}: element {k}: got {g}, want {w}");
    }
}
