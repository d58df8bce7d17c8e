//! Dependency inference from the ranges each node reads and writes.
//!
//! A node that reads a range depends on the writers of every overlapping range still on record;
//! a node that writes depends on those writers and on every reader since. A write then removes
//! the records its range covers entirely: a later node that overlaps them overlaps the write
//! too, depends on it, and so (transitively) on them. A chain of nodes writing one buffer keeps
//! one record, not a growing list, and gets one edge per node.

use super::args::Access;

#[derive(Debug, Clone, Copy)]
struct Record {
    access: Access,
    node: usize,
}

/// The accesses of the nodes added so far that later nodes may have to wait for.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tracker {
    records: Vec<Record>,
}

impl Tracker {
    /// Appends to `deps` every node a new node with `accesses` must wait for (unsorted, maybe
    /// with repeats).
    #[inline]
    pub(crate) fn deps(&self, accesses: &[Access], deps: &mut Vec<usize>) {
        for a in accesses {
            for r in &self.records {
                // `|` and `&`, not `||` and `&&`: one loop, no copy per branch.
                if (a.write | r.access.write) & a.overlaps(&r.access) {
                    deps.push(r.node);
                }
            }
        }
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

    /// Records `node`'s accesses (after its dependencies were taken with [`Tracker::deps`]).
    #[inline]
    pub(crate) fn record(&mut self, node: usize, accesses: &[Access]) {
        for a in accesses {
            if a.write {
                // Drops the records the write covers, keeping the order of the others.
                let mut keep = 0;
                for i in 0..self.records.len() {
                    let r = self.records[i];
                    if !(r.access.space == a.space && a.lo <= r.access.lo && r.access.hi <= a.hi) {
                        self.records[keep] = r;
                        keep += 1;
                    }
                }
                self.records.truncate(keep);
            }
        }
        for &access in accesses {
            self.records.push(Record { access, node });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::args::Space;
    use super::*;

    fn acc(lo: u64, hi: u64, write: bool) -> Access {
        Access { space: Space::Device, lo, hi, write }
    }

    fn add(t: &mut Tracker, node: usize, accesses: &[Access]) -> Vec<usize> {
        let mut d = Vec::new();
        t.deps(accesses, &mut d);
        d.sort_unstable();
        d.dedup();
        t.record(node, accesses);
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

    /// What a child graph node records for a parent graph (the records left on file, not every
    /// access of every node) gives a later node of the parent the same dependency on it: over
    /// random sequences of reads and writes of overlapping ranges, with host and device ranges
    /// of the same numbers, a probe depends on some record exactly when it depends on some
    /// access.
    #[test]
    fn the_records_stand_for_every_access_of_a_child_graph() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
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
                t.record(node, &accesses);
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

    #[test]
    fn a_chain_keeps_one_record() {
        let mut t = Tracker::default();
        for i in 0..100 {
            let d = add(&mut t, i, &[acc(0, 8, true)]);
            assert_eq!(d, if i == 0 { vec![] } else { vec![i - 1] });
        }
        assert_eq!(t.records.len(), 1);
    }
}
