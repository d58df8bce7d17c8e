//! Dependency inference from the ranges each node reads and writes.
//!
//! A node that reads a range depends on the writers of every overlapping range still on record;
//! a node that writes depends on those writers and on every reader since. A write then removes
//! the records its range covers entirely: a later node that overlaps them overlaps the write
//! too, depends on it, and so (transitively) on them. A chain of nodes writing one buffer keeps
//! one record, not a growing list, and gets one edge per node.

use super::args::Access;
use cudarc::driver::sys::CUgraphNode;

#[derive(Debug, Clone, Copy)]
struct Record {
    access: Access,
    node: usize,
    /// `node`'s driver handle (a dependency on it needs no look-up in the graph's node list).
    raw: CUgraphNode,
}

/// The accesses of the nodes added so far that later nodes may have to wait for.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tracker {
    records: Vec<Record>,
}

/// Which records a new node's writes cover, found by [`Tracker::deps`] for [`Tracker::record`]:
/// bit `i` for record `i` (the first 64 records; `record` tests the others itself).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Covered(u64);

impl Covered {
    /// Nothing known: `record` tests every record (a node added with the inference off).
    pub(crate) const UNKNOWN: Covered = Covered(u64::MAX);
}

/// What [`Tracker::deps`] found for a new node: its first dependency, with that node's driver
/// handle, and the records its writes cover. Further dependencies went to the list `deps` was
/// given, so a node with at most one dependency (a chain) writes no list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    /// The first dependency, [`Found::NONE`] if none.
    pub(crate) first: usize,
    /// `first`'s driver handle (null if none).
    pub(crate) first_raw: CUgraphNode,
    pub(crate) covered: Covered,
}

impl Found {
    /// No dependency; every record to be tested (the inference is off).
    pub(crate) const NONE: Found =
        Found { first: usize::MAX, first_raw: std::ptr::null_mut(), covered: Covered::UNKNOWN };
}

/// Whether a node's access `a` conflicts with the recorded range `r` (they overlap and one
/// writes: `Access::overlaps`) and whether `a` is a write covering `r` (`Access::covers`).
#[inline(always)]
fn conflict_cover(a: &Access, r: &Access) -> (bool, bool) {
    let (lo, hi) = (r.lo, r.hi);
    // Touching or overlapping, in the same memory: what both need (the common case, another
    // buffer, is this one branch).
    if (a.space == r.space) & (a.lo <= hi) & (lo <= a.hi) {
        let conflict = (a.write | r.write) & (a.lo < hi) & (lo < a.hi);
        let cover = a.write & (a.lo <= lo) & (hi <= a.hi);
        (conflict, cover)
    } else {
        (false, false)
    }
}

impl Tracker {
    /// Finds every node a new node with `accesses` must wait for: the first in the answer, the
    /// others appended to `more` (unsorted, maybe with repeats and with the first again: one
    /// entry per record it conflicts with); and the records its writes cover, for
    /// [`Tracker::record`]. One pass over the records: in a chain of nodes writing one buffer
    /// that is one record, and one dependency (nothing written to `more`).
    #[inline(always)]
    pub(crate) fn deps(&self, accesses: &[Access], more: &mut Vec<usize>) -> Found {
        match accesses {
            // One range (a kernel of one buffer, a memset): no inner loop.
            [a] => self.scan(more, |r| conflict_cover(a, r)),
            _ => self.scan(more, |r| {
                accesses.iter().fold((false, false), |(conflict, cover), a| {
                    let (c, v) = conflict_cover(a, r);
                    (conflict | c, cover | v)
                })
            }),
        }
    }

    /// [`Tracker::deps`]'s pass, with `test` saying whether the new node conflicts with a
    /// record's range and whether its writes cover it.
    #[inline(always)]
    fn scan(&self, more: &mut Vec<usize>, test: impl Fn(&Access) -> (bool, bool)) -> Found {
        let mut found = Found { first: Found::NONE.first, first_raw: std::ptr::null_mut(), covered: Covered(0) };
        let (mut covered, mut bit) = (0u64, 1u64);
        for r in &self.records {
            let (conflict, cover) = test(&r.access);
            if conflict {
                if found.first == Found::NONE.first {
                    (found.first, found.first_raw) = (r.node, r.raw);
                } else {
                    more.push(r.node);
                }
            }
            // Bit `i` for record `i`; with more than 64 records `record` does not read the bits.
            if cover {
                covered |= bit;
            }
            bit = bit.rotate_left(1);
        }
        found.covered = Covered(covered);
        found
    }

    /// The ranges on record: what a node that embeds the whole graph (a child graph node) reads
    /// and writes, as far as any later node can tell. A record is dropped only when a later write
    /// covers its range, and that write stays on record (or a write covering it does), so a node
    /// overlapping anything the graph touched overlaps a record, and a write on record wherever
    /// a dropped record was: the inferred dependencies on the child node are those its nodes'
    /// own accesses would give.
    pub(crate) fn accesses(&self) -> impl Iterator<Item = Access> + '_ {
        self.records.iter().map(|r| r.access)
    }

    /// Records `node`'s accesses after its dependencies were taken with [`Tracker::deps`]
    /// (`covered` is what it returned, or [`Covered::UNKNOWN`]): drops the records its writes
    /// cover (not its own), then adds its own. The order of the records does not matter.
    #[inline]
    pub(crate) fn record(&mut self, node: usize, raw: CUgraphNode, accesses: &[Access], covered: Covered) {
        // With more than 64 records the bits do not say everything; `UNKNOWN` is neither 0 nor
        // a power of two.
        let (n, bits) = (self.records.len(), covered.0);
        if n <= 64 && bits == 0 {
            self.records.extend(accesses.iter().map(|&access| Record { access, node, raw }));
        } else if n <= 64 && accesses.len() == 1 && bits.is_power_of_two() {
            // One write covering one record (a chain): it takes that record's place.
            self.records[bits.trailing_zeros() as usize] = Record { access: accesses[0], node, raw };
        } else {
            self.drop_covered(accesses, if n <= 64 && bits != Covered::UNKNOWN.0 { Some(bits) } else { None });
            self.records.extend(accesses.iter().map(|&access| Record { access, node, raw }));
        }
    }

    /// Drops the records that a write of `accesses` covers: those of `covered` (bit `i`: record
    /// `i`) when known, else tested here; keeps the order of the others.
    #[inline(never)]
    fn drop_covered(&mut self, accesses: &[Access], covered: Option<u64>) {
        let mut keep = 0;
        for i in 0..self.records.len() {
            let r = self.records[i];
            let dropped = match covered {
                Some(bits) => bits >> i & 1 == 1,
                None => accesses.iter().any(|a| a.write && a.covers(&r.access)),
            };
            if !dropped {
                self.records[keep] = r;
                keep += 1;
            }
        }
        self.records.truncate(keep);
    }
}

/// Drops from a programmatic node's dependencies `deps` every one that another of them depends on
/// directly (an edge of `edges`); true if it dropped any. Inference makes such edges: in a
/// ping-pong chain link k follows k - 1 (it reads its output) and k - 2 (it overwrites what k - 2
/// wrote), and the driver runs a node of two programmatic edges without the overlap of one. The
/// dropped edge is implied: k waits (`cudaGridDependencySynchronize`) for k - 1 to complete, and
/// k - 1 completed after k - 2 did, through a full edge or its own wait (which
/// [`Graph::dependent`](super::Graph::dependent) asks of every dependent kernel, in every launch).
/// One pass over the edges, once per programmatic node of several dependencies.
#[cold]
#[inline(never)]
pub(crate) fn reduce(edges: &[(usize, usize)], deps: &mut Vec<usize>) -> bool {
    let mut implied: Vec<usize> = Vec::new();
    for &(f, t) in edges {
        if f != t && deps.contains(&t) && deps.contains(&f) && !implied.contains(&f) {
            implied.push(f);
        }
    }
    deps.retain(|d| !implied.contains(d));
    !implied.is_empty()
}

#[cfg(test)]
mod tests {
    use super::super::args::Space;
    use super::*;

    fn acc(lo: u64, hi: u64, write: bool) -> Access {
        Access { space: Space::Device, lo, hi, write }
    }

    /// A stand-in driver handle for node `node`.
    fn raw(node: usize) -> CUgraphNode {
        std::ptr::without_provenance_mut(node + 1)
    }

    fn add(t: &mut Tracker, node: usize, accesses: &[Access]) -> Vec<usize> {
        let mut d = Vec::new();
        let found = t.deps(accesses, &mut d);
        if found.first == Found::NONE.first {
            assert!(d.is_empty(), "further dependencies {d:?} without a first one");
        } else {
            assert_eq!(found.first_raw, raw(found.first), "the first dependency's handle");
            d.push(found.first);
        }
        d.sort_unstable();
        d.dedup();
        t.record(node, raw(node), accesses, found.covered);
        d
    }

    #[test]
    fn read_after_write_write_after_read_write_after_write() {
        let mut t = Tracker::default();
        assert_eq!(add(&mut t, 0, &[acc(0, 100, true)]), Vec::<usize>::new());
        assert_eq!(add(&mut t, 1, &[acc(0, 100, false)]), [0]); // RAW
        assert_eq!(add(&mut t, 2, &[acc(0, 100, false)]), [0]); // two readers: no edge between
        assert_eq!(add(&mut t, 3, &[acc(0, 100, true)]), [0, 1, 2]); // WAR (+ WAW)
        assert_eq!(add(&mut t, 4, &[acc(0, 100, true)]), [3]); // WAW; covered records dropped
    }

    #[test]
    fn disjoint_ranges_no_edge_overlapping_ranges_edge() {
        let mut t = Tracker::default();
        assert!(add(&mut t, 0, &[acc(0, 50, true)]).is_empty());
        assert!(add(&mut t, 1, &[acc(50, 100, true)]).is_empty()); // disjoint halves
        assert_eq!(add(&mut t, 2, &[acc(40, 60, false)]), [0, 1]); // overlaps both
        let host = Access { space: Space::Host, lo: 0, hi: 100, write: true };
        assert!(add(&mut t, 3, &[host]).is_empty()); // same numbers, other memory
    }

    #[test]
    fn a_partial_write_keeps_what_it_does_not_cover() {
        let mut t = Tracker::default();
        add(&mut t, 0, &[acc(0, 100, false)]);
        add(&mut t, 1, &[acc(0, 50, true)]);
        assert_eq!(add(&mut t, 2, &[acc(50, 100, true)]), [0]);
    }

    /// A xorshift generator from `seed`: each call gives a number below its argument.
    fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |below| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        }
    }

    /// What a child graph node records for a parent graph (the records left on file, not every
    /// access of every node) gives a later node of the parent the same dependency on it: over
    /// random sequences of reads and writes of overlapping ranges, with host and device ranges
    /// of the same numbers, a probe depends on some record exactly when it depends on some
    /// access.
    #[test]
    fn the_records_stand_for_every_access_of_a_child_graph() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        let random = |next: &mut dyn FnMut(u64) -> u64| {
            let lo = next(64);
            let space = if next(4) == 0 { Space::Host } else { Space::Device };
            Access { space, lo, hi: lo + 1 + next(24), write: next(2) == 0 }
        };
        for _ in 0..2000 {
            let mut t = Tracker::default();
            let mut all = Vec::new();
            for node in 0..next(12) as usize {
                let accesses: Vec<Access> = (0..1 + next(3)).map(|_| random(&mut next)).collect();
                t.record(node, raw(node), &accesses, Covered::UNKNOWN);
                all.extend(accesses);
            }
            let kept: Vec<Access> = t.accesses().collect();
            for _ in 0..20 {
                let probe = random(&mut next);
                let depends = |on: &[Access]| on.iter().any(|a| (a.write || probe.write) && a.overlaps(&probe));
                assert_eq!(depends(&kept), depends(&all), "probe {probe:?}, all {all:?}, kept {kept:?}");
            }
        }
    }

    /// The tracker as first written (every conflicting (access, record) pair a dependency; a
    /// second pass dropping every record a write covers, then the new records appended), for
    /// the test below.
    #[derive(Default)]
    struct Reference {
        records: Vec<Record>,
    }

    impl Reference {
        fn add(&mut self, node: usize, accesses: &[Access]) -> Vec<usize> {
            let mut deps = Vec::new();
            for a in accesses {
                for r in &self.records {
                    if (a.write || r.access.write) && a.overlaps(&r.access) {
                        deps.push(r.node);
                    }
                }
            }
            self.records.retain(|r| {
                !accesses
                    .iter()
                    .any(|a| a.write && r.access.space == a.space && a.lo <= r.access.lo && r.access.hi <= a.hi)
            });
            self.records.extend(accesses.iter().map(|&access| Record { access, node, raw: raw(node) }));
            deps.sort_unstable();
            deps.dedup();
            deps
        }
    }

    /// Over random sequences of nodes (one to four reads and writes of overlapping host and
    /// device ranges; with few ranges, chains; with many, more than 64 records on file; some
    /// nodes added with the inference off), the one-pass tracker gives every node the
    /// dependencies the reference gives, and keeps the same records (in any order).
    #[test]
    fn the_one_pass_tracker_agrees_with_the_reference() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
        let (mut most, mut chains) = (0, 0);
        for round in 0..600 {
            let span = [4, 16, 64, 400][round % 4];
            let (mut t, mut reference) = (Tracker::default(), Reference::default());
            for node in 0..next(150) as usize {
                let count = 1 + next(if round % 3 == 0 { 1 } else { 4 }) as usize;
                let accesses: Vec<Access> = (0..count)
                    .map(|_| {
                        let lo = next(span);
                        let space = if next(8) == 0 { Space::Host } else { Space::Device };
                        let len = if next(2) == 0 { 8 } else { 1 + next(24) };
                        Access { space, lo: lo & !7, hi: (lo & !7) + len, write: next(3) != 0 }
                    })
                    .collect();
                let want = reference.add(node, &accesses);
                if next(10) == 0 {
                    t.record(node, raw(node), &accesses, Covered::UNKNOWN);
                } else {
                    let before = t.records.len();
                    assert_eq!(add(&mut t, node, &accesses), want, "round {round}, node {node}: {accesses:?}");
                    chains += usize::from(count == 1 && before > 0 && t.records.len() == before);
                }
                let key =
                    |r: &Record| (r.node, r.access.lo, r.access.hi, r.access.write, r.access.space == Space::Host);
                let mut ours: Vec<_> = t.records.iter().map(key).collect();
                let mut theirs: Vec<_> = reference.records.iter().map(key).collect();
                ours.sort_unstable();
                theirs.sort_unstable();
                assert_eq!(ours, theirs, "round {round}, node {node}: records");
                most = most.max(t.records.len());
            }
        }
        assert!(most > 64 && chains > 100, "the sequences miss a path: {most} records at most, {chains} chain steps");
    }

    #[test]
    fn a_chain_keeps_one_record() {
        let mut t = Tracker::default();
        for i in 0..100 {
            let d = add(&mut t, i, &[acc(0, 8, true)]);
            assert_eq!(d, if i == 0 { vec![] } else { vec![i - 1] });
        }
        assert_eq!(t.records.len(), 1);
    }

    /// A programmatic node keeps only the dependencies no other of them follows directly: the
    /// ping-pong chain's k - 2 goes (k - 1 follows it), independent ones stay.
    #[test]
    fn reduce_drops_what_another_dependency_follows() {
        let chain = [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)];
        let mut deps = vec![1, 2];
        assert!(reduce(&chain, &mut deps));
        assert_eq!(deps, [2]);
        // 0 and 1 both feed 2, unrelated: both stay.
        let mut deps = vec![0, 1];
        assert!(!reduce(&[(0, 2), (1, 2)], &mut deps));
        assert_eq!(deps, [0, 1]);
        // A later edge between two earlier nodes (`add_edge`) counts too; a self-edge does not.
        let mut deps = vec![3, 5];
        assert!(reduce(&[(5, 5), (3, 5)], &mut deps));
        assert_eq!(deps, [5]);
        let mut deps = vec![4, 6, 7];
        assert!(reduce(&[(4, 6), (6, 7)], &mut deps));
        assert_eq!(deps, [7]);
    }
}
