//! CPU tests of the view arithmetic: construction, permutation, slicing, broadcasting, reshape,
//! collapse, and a seeded property test that no view reaches outside its buffer.

use crate::args::layout::*;

/// Every buffer index a layout addresses, in row-major index order.
fn addresses(l: &Layout) -> Vec<isize> {
    let mut out = Vec::new();
    let n = l.len();
    for flat in 0..n {
        let mut rem = flat;
        let mut at = l.offset() as isize;
        for d in (0..l.rank()).rev() {
            let c = rem % l.shape()[d];
            rem /= l.shape()[d];
            at += c as isize * l.strides()[d];
        }
        out.push(at);
    }
    out
}

#[test]
fn construction_is_checked() {
    assert!(Layout::row_major(&[4, 6], 0, 24).is_ok());
    let e = Layout::row_major(&[4, 7], 0, 24).unwrap_err();
    assert!(e.contains("outside the buffer of 24 elements"), "{e}");
    assert!(Layout::strided(&[3], &[-2], 4, 5).is_ok());
    assert!(Layout::strided(&[3], &[-2], 3, 5).is_err(), "reaches -1");
    assert!(Layout::strided(&[2, 2], &[1], 0, 5).unwrap_err().contains("strides"));
    assert!(Layout::row_major(&[1; 9], 0, 1).unwrap_err().contains("largest supported rank 8"));
    // Empty views fit anywhere up to the end.
    assert!(Layout::row_major(&[0, 5], 3, 3).is_ok());
    assert!(Layout::strided(&[usize::MAX, 2], &[isize::MAX, 1], 0, 10).is_err());
}

#[test]
fn permute_transpose_slice() {
    let l = Layout::row_major(&[2, 3, 4], 0, 24).unwrap();
    let p = l.permute(&[2, 0, 1]).unwrap();
    assert_eq!((p.shape(), p.strides()), (&[4, 2, 3][..], &[1, 12, 4][..]));
    assert!(l.permute(&[0, 0, 1]).is_err());
    assert!(l.permute(&[0, 1]).is_err());
    let t = l.transpose();
    assert_eq!(t.strides(), &[1, 4, 12]);
    let s = l.slice(2, 1, 4, 2).unwrap();
    assert_eq!((s.shape(), s.strides(), s.offset()), (&[2, 3, 2][..], &[12, 4, 2][..], 1));
    let r = l.slice(1, 0, 3, -1).unwrap();
    assert_eq!((r.shape()[1], r.strides()[1], r.offset()), (3, -4, 8));
    assert_eq!(addresses(&r)[..4], [8, 9, 10, 11]);
    assert!(l.slice(3, 0, 1, 1).is_err());
    assert!(l.slice(0, 0, 3, 1).is_err());
    assert!(l.slice(0, 0, 1, 0).is_err());
    assert_eq!(l.slice(0, 1, 1, 1).unwrap().len(), 0);
}

#[test]
fn broadcasting() {
    let bias = Layout::row_major(&[5], 0, 5).unwrap();
    let b = bias.broadcast_to(&[3, 5]).unwrap();
    assert_eq!(b.strides(), &[0, 1]);
    let col = Layout::row_major(&[3, 1], 0, 3).unwrap();
    assert_eq!(col.broadcast_to(&[2, 3, 5]).unwrap().strides(), &[0, 1, 0]);
    assert!(bias.broadcast_to(&[5, 3]).unwrap_err().contains("cannot be broadcast"));
    assert!(bias.broadcast_to(&[]).is_err());
    assert_eq!(broadcast_shapes(&[3, 1], &[5]), Some(vec![3, 5]));
    assert_eq!(broadcast_shapes(&[2, 1, 4], &[3, 1]), Some(vec![2, 3, 4]));
    assert_eq!(broadcast_shapes(&[2], &[3]), None);
    assert!(!b.is_non_overlapping());
    assert!(Layout::row_major(&[3, 5], 0, 15).unwrap().is_non_overlapping());
}

#[test]
fn reshape_where_the_layout_allows() {
    let l = Layout::row_major(&[4, 6], 0, 24).unwrap();
    let r = l.reshape(&[2, 2, 3, 2]).unwrap();
    assert!(r.is_contiguous());
    assert_eq!(addresses(&r), (0..24).collect::<Vec<_>>());
    // A column slice: rows stay apart, so merging them is refused but splitting them is fine.
    let s = l.slice(1, 0, 4, 1).unwrap(); // 4 x 4, strides [6, 1]
    assert!(s.reshape(&[16]).unwrap_err().contains("without a copy"));
    let split = s.reshape(&[2, 2, 2, 2, 1]).unwrap();
    assert_eq!(addresses(&split), addresses(&s));
    assert!(l.transpose().reshape(&[24]).is_err());
    assert!(l.reshape(&[5, 5]).unwrap_err().contains("24 elements"));
    assert_eq!(l.reshape(&[1, 24, 1]).unwrap().strides()[1], 1);
}

#[test]
fn collapse_merges_what_is_contiguous_for_all() {
    let c = collapse(&[64, 64, 256, 256], &[&[4194304, 65536, 256, 1], &[4194304, 65536, 256, 1]]);
    assert_eq!(c.shape, vec![1 << 28]);
    // Bias add: the bias's stride 0 row keeps two dims.
    let c = collapse(&[8, 4, 5], &[&[20, 5, 1], &[0, 0, 1]]);
    assert_eq!((c.shape, c.strides), (vec![32, 5], vec![vec![5, 1], vec![0, 1]]));
    // A per-channel scale over [n, c, h, w] with channel stride 1 broadcast over h*w.
    let c = collapse(&[2, 3, 4, 5], &[&[60, 20, 5, 1], &[0, 1, 0, 0]]);
    assert_eq!(c.shape, vec![2, 3, 20]);
    let c = collapse(&[1, 1], &[&[9, 3]]);
    assert!(c.shape.is_empty());
}

/// A tiny seeded generator (xorshift), so the property test needs no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn random_views_never_leave_their_buffer() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut made = 0;
    for _ in 0..4000 {
        let rank = rng.below(6);
        let shape: Vec<usize> = (0..rank).map(|_| rng.below(5)).collect();
        let strides: Vec<isize> = (0..rank).map(|_| rng.below(21) as isize - 10).collect();
        let len = rng.below(200);
        let offset = rng.below(220);
        let Ok(mut l) = Layout::strided(&shape, &strides, offset, len) else { continue };
        made += 1;
        // A chain of random operations: each result that is Ok must stay inside the buffer and
        // address exactly what its definition says.
        for _ in 0..6 {
            let before = addresses(&l);
            let next = match rng.below(5) {
                0 if l.rank() > 0 => {
                    let mut axes: Vec<usize> = (0..l.rank()).collect();
                    for k in (1..axes.len()).rev() {
                        axes.swap(k, rng.below(k + 1));
                    }
                    l.permute(&axes)
                }
                1 if l.rank() > 0 => {
                    let ax = rng.below(l.rank());
                    let n = l.shape()[ax];
                    let s = rng.below(n + 1);
                    let e = s + rng.below(n + 1 - s);
                    let step = [1isize, 2, 3, -1, -2][rng.below(5)];
                    l.slice(ax, s, e, step)
                }
                2 => {
                    let mut target: Vec<usize> = (0..rng.below(3)).map(|_| rng.below(4)).collect();
                    target.extend(l.shape().iter().map(|&n| if n == 1 { rng.below(4) } else { n }));
                    l.broadcast_to(&target)
                }
                3 => {
                    let total = l.len();
                    let mut shape = Vec::new();
                    let mut rest = total;
                    while rest > 1 && shape.len() < 4 {
                        let f = (2..=rest).find(|f| rest % f == 0).unwrap_or(rest);
                        shape.push(f);
                        rest /= f;
                    }
                    if rest != 1 || total == 0 {
                        shape.push(rest);
                    }
                    l.reshape(&shape).inspect(|r| {
                        // Same elements in the same order.
                        assert_eq!(addresses(r), before, "{l:?} -> {shape:?}");
                    })
                }
                _ => Ok(l.transpose()),
            };
            if let Ok(n) = next {
                for a in addresses(&n) {
                    assert!(a >= 0 && (a as usize) < len, "{n:?} addresses {a}, buffer {len}");
                }
                assert!(n.check_within(len).is_ok(), "{n:?} {len} {:?}", n.check_within(len));
                l = n;
            }
        }
        // Collapsing keeps the addresses in order.
        let c = collapse(l.shape(), &[l.strides()]);
        let mut strides = c.strides[0].clone();
        let mut shape = c.shape.clone();
        if l.is_empty() {
            continue;
        }
        if shape.is_empty() {
            shape.push(1);
            strides.push(1);
        }
        let cl = Layout::strided(&shape, &strides, l.offset(), len).unwrap();
        assert_eq!(addresses(&cl), addresses(&l));
    }
    assert!(made > 500, "only {made} random views were valid");
}
