use super::*;
use cudarc::driver::LaunchConfig;

fn dev(lo: u64, hi: u64, write: bool) -> Access {
    Access { space: Space::Device, lo, hi, write }
}

#[test]
fn a_written_range_may_overlap_nothing_else_of_its_node() {
    // Disjoint buffers, and two reads of one buffer (`add(x, x, y)`): no hazard.
    assert_eq!(overlapping(&[dev(0, 64, false), dev(64, 128, true)]), None);
    assert_eq!(overlapping(&[dev(0, 64, false), dev(0, 64, false), dev(64, 128, true)]), None);
    // An output that is also an input, whole or in part, either order.
    assert_eq!(overlapping(&[dev(0, 64, false), dev(0, 64, true)]), Some((0, 1)));
    assert_eq!(overlapping(&[dev(0, 64, true), dev(32, 96, false)]), Some((0, 1)));
    assert_eq!(overlapping(&[dev(128, 256, false), dev(0, 64, true), dev(60, 61, false)]), Some((1, 2)));
    // Two outputs over one buffer.
    assert_eq!(overlapping(&[dev(0, 64, true), dev(8, 16, true)]), Some((0, 1)));
    // Adjacent ranges share no byte.
    assert_eq!(overlapping(&[dev(0, 64, true), dev(64, 65, true)]), None);
    // Host memory and CUDA arrays are other address spaces.
    let host = Access { space: Space::Host, lo: 0, hi: 64, write: false };
    assert_eq!(overlapping(&[dev(0, 64, true), host]), None);
    assert_eq!(overlapping(&[]), None);
}

#[test]
fn aliasing_is_an_argument_error_naming_both_operands() {
    let e = disjoint(&[dev(0, 64, false), dev(16, 32, true)], || ("scale", "src/lib.rs:3")).unwrap_err();
    let Error::Argument { kernel, parameter, detail, .. } = &e else { panic!("expected Error::Argument, got {e:?}") };
    assert_eq!(kernel, "scale");
    assert!(parameter.contains("#0") && parameter.contains("#1"), "{parameter}");
    assert!(detail.contains("overlap") && detail.contains("separate buffers"), "{detail}");
    assert!(disjoint(&[dev(0, 64, false), dev(64, 80, true)], || ("scale", "here")).is_ok());
}

#[test]
fn generated_one_dimensional_kernels_take_only_one_dimensional_configurations() {
    let ok = LaunchConfig { grid_dim: (10, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    assert!(one_d_named("k", "here", 0, &ok).is_ok());
    for (grid_dim, block_dim) in
        [((10, 2, 1), (256, 1, 1)), ((10, 1, 3), (256, 1, 1)), ((1, 1, 1), (16, 16, 1)), ((1, 1, 1), (8, 8, 4))]
    {
        let cfg = LaunchConfig { grid_dim, block_dim, shared_mem_bytes: 0 };
        let e = one_d_named("k", "here", 0, &cfg).unwrap_err();
        assert!(matches!(&e, Error::Launch { cause, .. } if cause.contains("is not 1-D")), "{e}");
    }
}

/// A kernel node sets only conditions of its own graph or of the graphs it is nested in; a
/// condition shares no range with device memory of the same numbers (no aliasing, no edge).
#[test]
fn conditions_of_the_node_scope_only() {
    let cond = |graph: u64, ordinal: usize| Access::condition(graph, ordinal, true).unwrap();
    // A body (id 7) nested in graph 3: conditions of 7 and 3 are in scope, of 5 not.
    assert!(conditions(7, &[3], &[dev(0, 8, true), cond(7, 1), cond(3, 1)], 0, "k").is_ok());
    let e = conditions(7, &[3], &[cond(3, 1), cond(5, 1)], 0, "step").unwrap_err();
    let Error::Graph { cause, .. } = &e else { panic!("expected Error::Graph, got {e:?}") };
    assert!(cause.contains("`step`") && cause.contains("another graph"), "{cause}");
    assert!(conditions(3, &[], &[cond(7, 1)], 0, "k").is_err(), "the parent may not set a body's condition");
    assert_eq!(overlapping(&[dev(0, 8, true), cond(3, 0)]), None);
    // Keys: the graph in the high bits, the ordinal in the low ones; none past either limit.
    assert_eq!(cond(3, 5).condition_graph(), Some(3));
    assert_eq!(cond((1 << 44) - 1, (1 << 20) - 2).condition_graph(), Some((1 << 44) - 1));
    assert_eq!(Access::condition((1 << 44) - 1, (1 << 20) - 1, true), None, "the last key has no end");
    assert_ne!(cond(3, 0).lo, cond(4, 0).lo);
    assert_eq!(Access::condition(1 << 44, 0, true), None);
    assert_eq!(Access::condition(3, 1 << 20, true), None);
    assert_eq!(dev(0, 8, true).condition_graph(), None);
}
