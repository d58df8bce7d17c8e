//! The shape/stride arithmetic of N-D views, on plain numbers (no device memory): construction
//! checked against a buffer length, permutation, stepped slicing, broadcasting, reshaping, and
//! the collapse of dimensions that are contiguous for every operand (CuPy's `reduce_dims`).
//!
//! Errors are plain messages; [`NdView`](crate::NdView) turns them into [`crate::Error::Shape`].

/// The largest rank of a view.
pub const MAX_RANK: usize = 8;

/// A shape, strides (in elements, may be negative or zero) and the offset of element `[0, ..]`
/// in its buffer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Layout {
    rank: usize,
    shape: [usize; MAX_RANK],
    strides: [isize; MAX_RANK],
    offset: usize,
}

/// `[a, b, c]` for messages.
pub fn show<T: std::fmt::Display>(v: &[T]) -> String {
    format!("[{}]", v.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
}

/// The row-major (C order) strides of `shape`.
pub fn row_major_strides(shape: &[usize]) -> Vec<isize> {
    let mut s = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for k in (0..shape.len()).rev() {
        s[k] = acc;
        acc = acc.saturating_mul(shape[k].max(1) as isize);
    }
    s
}

/// The number of elements of `shape`, or an error when it overflows.
fn count(shape: &[usize]) -> Result<usize, String> {
    shape
        .iter()
        .try_fold(1usize, |a, &n| a.checked_mul(n))
        .ok_or_else(|| format!("shape {} has too many elements", show(shape)))
}

fn rank_error(rank: usize) -> String {
    format!("rank {rank} is above the largest supported rank {MAX_RANK}")
}

impl Layout {
    /// A row-major layout of `shape` starting at element `offset`, checked to fit a buffer of
    /// `len` elements.
    pub fn row_major(shape: &[usize], offset: usize, len: usize) -> Result<Layout, String> {
        Layout::strided(shape, &row_major_strides(shape), offset, len)
    }

    /// A layout with explicit strides (in elements), checked to fit a buffer of `len` elements:
    /// every element it can address lies in `0..len`.
    pub fn strided(shape: &[usize], strides: &[isize], offset: usize, len: usize) -> Result<Layout, String> {
        if shape.len() > MAX_RANK {
            return Err(rank_error(shape.len()));
        }
        if shape.len() != strides.len() {
            return Err(format!(
                "shape {} has {} dimensions but strides {} have {}",
                show(shape),
                shape.len(),
                show(strides),
                strides.len()
            ));
        }
        count(shape)?;
        let mut l = Layout { rank: shape.len(), shape: [1; MAX_RANK], strides: [0; MAX_RANK], offset };
        l.shape[..shape.len()].copy_from_slice(shape);
        l.strides[..shape.len()].copy_from_slice(strides);
        l.check_within(len)?;
        Ok(l)
    }

    /// The 1-D row-major layout of a whole buffer of `len` elements (always fits).
    pub fn flat(len: usize) -> Layout {
        let mut l = Layout { rank: 1, shape: [1; MAX_RANK], strides: [0; MAX_RANK], offset: 0 };
        l.shape[0] = len;
        l.strides[0] = 1;
        l
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The extent of each dimension.
    pub fn shape(&self) -> &[usize] {
        &self.shape[..self.rank]
    }

    /// The step between neighbours along each dimension, in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides[..self.rank]
    }

    /// The buffer index of element `[0, 0, ..]`.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The number of elements (the product of the shape; 1 for rank 0).
    pub fn len(&self) -> usize {
        self.shape().iter().product()
    }

    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The lowest and highest buffer index the layout addresses (`None` when empty), or an
    /// error when they do not fit in `isize`.
    pub fn extent(&self) -> Result<Option<(isize, isize)>, String> {
        if self.is_empty() {
            return Ok(None);
        }
        let overflow = || format!("shape {} with strides {} overflows", show(self.shape()), show(self.strides()));
        let (mut lo, mut hi) = (isize::try_from(self.offset).map_err(|_| overflow())?, 0isize);
        hi += lo;
        for (&n, &s) in self.shape().iter().zip(self.strides()) {
            let reach = isize::try_from(n - 1).ok().and_then(|m| m.checked_mul(s)).ok_or_else(overflow)?;
            if reach < 0 {
                lo = lo.checked_add(reach).ok_or_else(overflow)?;
            } else {
                hi = hi.checked_add(reach).ok_or_else(overflow)?;
            }
        }
        Ok(Some((lo, hi)))
    }

    /// An error unless every addressed element lies in `0..len`.
    pub fn check_within(&self, len: usize) -> Result<(), String> {
        match self.extent()? {
            None if self.offset <= len => Ok(()),
            None => Err(format!("offset {} is past the end of the buffer of {len} elements", self.offset)),
            Some((lo, hi)) if lo >= 0 && (hi as usize) < len => Ok(()),
            Some((lo, hi)) => Err(format!(
                "shape {} with strides {} at offset {} reaches elements {lo}..={hi}, outside the buffer of {len} elements",
                show(self.shape()),
                show(self.strides()),
                self.offset
            )),
        }
    }

    /// Whether no two indices address the same element (so the layout may be written).
    pub fn is_non_overlapping(&self) -> bool {
        if self.is_empty() {
            return true;
        }
        let mut dims: Vec<(usize, usize)> = self
            .shape()
            .iter()
            .zip(self.strides())
            .filter(|(&n, _)| n > 1)
            .map(|(&n, &s)| (s.unsigned_abs(), n))
            .collect();
        dims.sort_unstable();
        let mut reach = 0usize;
        for (s, n) in dims {
            if s <= reach {
                return false;
            }
            reach = match s.checked_mul(n - 1).and_then(|r| r.checked_add(reach)) {
                Some(r) => r,
                None => return false,
            };
        }
        true
    }

    /// Whether the layout is row-major with no gaps (C-contiguous).
    pub fn is_contiguous(&self) -> bool {
        let mut expect = 1isize;
        for k in (0..self.rank).rev() {
            if self.shape[k] != 1 && self.strides[k] != expect {
                return self.is_empty();
            }
            expect = expect.saturating_mul(self.shape[k] as isize);
        }
        true
    }

    /// The dimensions reordered: dimension `k` of the result is dimension `axes[k]` of `self`.
    pub fn permute(&self, axes: &[usize]) -> Result<Layout, String> {
        let mut seen = [false; MAX_RANK];
        let ok =
            axes.len() == self.rank && axes.iter().all(|&a| a < self.rank && !std::mem::replace(&mut seen[a], true));
        if !ok {
            return Err(format!("{} is not a permutation of the {} axes", show(axes), self.rank));
        }
        let mut l = *self;
        for (k, &a) in axes.iter().enumerate() {
            l.shape[k] = self.shape[a];
            l.strides[k] = self.strides[a];
        }
        Ok(l)
    }

    /// The axes in reverse order (the transpose of a matrix).
    pub fn transpose(&self) -> Layout {
        let mut l = *self;
        for k in 0..self.rank {
            l.shape[k] = self.shape[self.rank - 1 - k];
            l.strides[k] = self.strides[self.rank - 1 - k];
        }
        l
    }

    /// Indices `start, start + step, ..` below `end` of `axis` (`step > 0`), or, with `step < 0`,
    /// `end - 1, end - 1 + step, ..` down to `start` (NumPy's `x[start:end:step]` for a
    /// positive step, `x[end-1:start-1:step]` for a negative one).
    pub fn slice(&self, axis: usize, start: usize, end: usize, step: isize) -> Result<Layout, String> {
        if axis >= self.rank {
            return Err(format!("axis {axis} is out of range for rank {}", self.rank));
        }
        let n = self.shape[axis];
        if start > end || end > n {
            return Err(format!("range {start}..{end} is out of bounds for axis {axis} of length {n}"));
        }
        if step == 0 {
            return Err("a slice step of 0 is not allowed: use a positive or negative step".into());
        }
        let count = (end - start).div_ceil(step.unsigned_abs());
        let first = if step > 0 { start } else { end.saturating_sub(1) };
        let mut l = *self;
        l.shape[axis] = count;
        // The product can overflow only where the result never steps along the axis: with two
        // or more indices kept and every other axis non-empty, `first` and `first + step` are
        // both indices of the (non-empty, checked) parent, so `stride * step` is the distance
        // between two of its addresses and fits. Elsewhere (one index kept, or no element at
        // all) the stride is never multiplied by more than 0, and the parent's is kept.
        l.strides[axis] = self.strides[axis].checked_mul(step).unwrap_or(self.strides[axis]);
        if !l.is_empty() {
            // A non-empty result's first element is one of the parent's, so it fits: the parent
            // was checked.
            let moved = self.strides[axis] * first as isize;
            l.offset = (self.offset as isize + moved) as usize;
        }
        Ok(l)
    }

    /// The layout read as `shape` by NumPy's broadcasting rules: dimensions aligned from the
    /// right, a dimension of 1 (or a missing one) repeated with stride 0.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout, String> {
        if shape.len() > MAX_RANK {
            return Err(rank_error(shape.len()));
        }
        let fail = || format!("shape {} cannot be broadcast to {}", show(self.shape()), show(shape));
        if shape.len() < self.rank {
            return Err(fail());
        }
        count(shape)?;
        let lead = shape.len() - self.rank;
        let mut l = Layout { rank: shape.len(), shape: [1; MAX_RANK], strides: [0; MAX_RANK], offset: self.offset };
        for (k, &n) in shape.iter().enumerate() {
            l.shape[k] = n;
            if k >= lead {
                let (m, s) = (self.shape[k - lead], self.strides[k - lead]);
                l.strides[k] = if m == n {
                    s
                } else if m == 1 {
                    0
                } else {
                    return Err(fail());
                };
            }
        }
        Ok(l)
    }

    /// The same elements in row-major order as `shape`, without copying: an error when the
    /// strides do not allow it (NumPy would copy; copy into a contiguous buffer first).
    pub fn reshape(&self, shape: &[usize]) -> Result<Layout, String> {
        if shape.len() > MAX_RANK {
            return Err(rank_error(shape.len()));
        }
        let total = count(shape)?;
        if total != self.len() {
            return Err(format!(
                "cannot reshape shape {} ({} elements) to {} ({total} elements)",
                show(self.shape()),
                self.len(),
                show(shape)
            ));
        }
        let mut l = Layout { rank: shape.len(), shape: [1; MAX_RANK], strides: [0; MAX_RANK], offset: self.offset };
        l.shape[..shape.len()].copy_from_slice(shape);
        if total == 0 {
            l.strides[..shape.len()].copy_from_slice(&row_major_strides(shape));
            return Ok(l);
        }
        let old: Vec<(usize, isize)> =
            self.shape().iter().zip(self.strides()).filter(|(&n, _)| n != 1).map(|(&n, &s)| (n, s)).collect();
        let (mut oi, mut ni) = (0, 0);
        while oi < old.len() && ni < shape.len() {
            let (mut np, mut op) = (shape[ni], old[oi].0);
            let (mut nj, mut oj) = (ni + 1, oi + 1);
            while np != op {
                if np < op {
                    np *= shape[nj];
                    nj += 1;
                } else {
                    op *= old[oj].0;
                    oj += 1;
                }
            }
            for k in oi..oj - 1 {
                if old[k].1 != old[k + 1].1 * old[k + 1].0 as isize {
                    return Err(format!(
                        "shape {} with strides {} cannot be viewed as {} without a copy: make the data contiguous first",
                        show(self.shape()),
                        show(self.strides()),
                        show(shape)
                    ));
                }
            }
            let mut s = old[oj - 1].1;
            for k in (ni..nj).rev() {
                l.strides[k] = s;
                s *= shape[k] as isize;
            }
            (oi, ni) = (oj, nj);
        }
        for k in ni..shape.len() {
            l.strides[k] = 1;
        }
        Ok(l)
    }
}

/// The shape `a` and `b` broadcast to by NumPy's rules, or `None` when they do not.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let at = |v: &[usize], k: usize| if k + v.len() >= r { v[k + v.len() - r] } else { 1 };
    (0..r)
        .map(|k| match (at(a, k), at(b, k)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// A shape of several operands with dimensions that are contiguous for all of them merged and
/// dimensions of 1 dropped (CuPy's `reduce_dims`): the row-major index order is unchanged, so a
/// flat index in the original shape is the flat index in the collapsed one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collapsed {
    /// The merged extents (empty: one element).
    pub shape: Vec<usize>,
    /// Per operand, its strides over `shape`.
    pub strides: Vec<Vec<isize>>,
}

/// Collapses operands of one shape (`shape`, each operand's strides over it).
pub fn collapse(shape: &[usize], strides: &[&[isize]]) -> Collapsed {
    let mut out = Collapsed { shape: Vec::new(), strides: vec![Vec::new(); strides.len()] };
    for d in 0..shape.len() {
        let n = shape[d];
        if n == 1 {
            continue;
        }
        let merge =
            !out.shape.is_empty() && strides.iter().zip(&out.strides).all(|(s, o)| o[o.len() - 1] == s[d] * n as isize);
        if merge {
            let last = out.shape.len() - 1;
            out.shape[last] *= n;
            for (o, s) in out.strides.iter_mut().zip(strides) {
                o[last] = s[d];
            }
        } else {
            out.shape.push(n);
            for (o, s) in out.strides.iter_mut().zip(strides) {
                o.push(s[d]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::Layout;

    /// A slice that keeps at most one index of an axis, or no element at all, never uses that
    /// axis's stride times the step, which may overflow: it is an ordinary slice, not a panic.
    #[test]
    fn a_slice_of_at_most_one_index_takes_any_step() {
        let l = Layout::row_major(&[3, 3], 0, 9).unwrap();
        // 3 * isize::MAX overflows; the slice keeps row 0 only.
        let s = l.slice(0, 0, 3, isize::MAX).unwrap();
        assert_eq!((s.shape(), s.offset()), (&[1, 3][..], 0));
        s.check_within(9).unwrap();
        // The same backwards: row 2 only.
        let s = l.slice(0, 0, 3, isize::MIN).unwrap();
        assert_eq!((s.shape(), s.offset()), (&[1, 3][..], 6));
        s.check_within(9).unwrap();
        // An empty range along the axis.
        let s = l.slice(0, 1, 1, isize::MAX).unwrap();
        assert!(s.is_empty());
        // A huge stride on an axis of one index (any stride fits there), stepped.
        let h = Layout::strided(&[1, 2], &[isize::MAX / 2, 1], 0, 2).unwrap();
        let s = h.slice(0, 0, 1, 4).unwrap();
        assert_eq!((s.shape(), s.offset()), (&[1, 2][..], 0));
        // Another axis empty: the parent constrained no stride, so the product may overflow.
        let e = Layout::strided(&[4, 0], &[isize::MAX / 2, 1], 0, 0).unwrap();
        let s = e.slice(0, 0, 4, 3).unwrap();
        assert!(s.is_empty() && s.shape() == [2, 0]);
        // Two or more indices: the step's stride is exact.
        let s = l.slice(0, 0, 3, 2).unwrap();
        assert_eq!((s.shape(), s.strides()), (&[2, 3][..], &[6, 1][..]));
    }
}
