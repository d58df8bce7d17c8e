use super::*;

fn sum_of_squares() -> ReductionSource {
    ReductionSource {
        name: "ssq".into(),
        placeholders: vec!["T".into()],
        inputs: vec![
            RedParam { name: "x".into(), ty: "T".into(), scalar: false },
            RedParam { name: "w".into(), ty: "float".into(), scalar: false },
            RedParam { name: "s".into(), ty: "T".into(), scalar: true },
        ],
        outputs: vec![RedParam { name: "y".into(), ty: "T".into(), scalar: false }],
        map: Snippet { text: "x * x * w * s".into(), origin: Some(("src/main.rs".into(), 7)) },
        reduce: Snippet::new("a + b"),
        post_map: None,
        identity: Snippet::new("0"),
        reduce_type: Some(Snippet::new("double")),
        preamble: None,
        instances: vec![vec!["float".into()], vec!["__half".into()]],
    }
}

#[test]
fn source_has_three_kernels_and_user_code() {
    let src = sum_of_squares().source();
    for k in kernel_names("ssq") {
        assert!(
            src.contains(&format!(
                "{k}(const T* __restrict__ x, const float* __restrict__ w, const T s, T* __restrict__ y"
            )),
            "{k}"
        );
    }
    assert!(src.contains("#line 7 \"src/main.rs\"\nx * x * w * s"));
    assert!(src.contains("typedef \ndouble\n R;"));
    assert!(src.contains("y = a;"));
    assert!(src.contains("#include <cuda_fp16.h>"));
    assert!(!src.contains("cuda_bf16"));
    assert!(src.contains("template <typename T> struct ssq_ops"));
}

#[test]
fn instances_and_extern_c() {
    let r = sum_of_squares();
    assert_eq!(r.instance_exprs()[..3], ["ssq_full<float>", "ssq_rows<float>", "ssq_cols<float>"]);
    assert_eq!(r.instance_exprs().len(), 8); // full, rows, cols, axes for each of two instances
    let mut plain = r.clone();
    plain.placeholders.clear();
    plain.instances.clear();
    assert!(plain.instance_exprs().is_empty());
    assert!(plain.source().contains("extern \"C\" __global__ void __launch_bounds__(256, 4) ssq_full("));
}

#[test]
fn vector_width() {
    assert_eq!(vec_width(&[4]), 4);
    assert_eq!(vec_width(&[2, 4]), 4);
    assert_eq!(vec_width(&[2]), 8);
    assert_eq!(vec_width(&[12]), 1);
    assert_eq!(vec_width(&[]), 1);
    assert_eq!(vec_width(&[32]), 1);
}

#[test]
fn plans_full() {
    // One block for a small array, a wave of blocks for a large one, one launch either way.
    let small = plan_segments(132, 1, 1000, 4);
    assert_eq!((small.kind, small.grid, small.aux, small.partials), (PlanKind::Segments, (1, 1), 1, 0));
    // 2^28 floats are 65536 tiles of 1024 groups: 125 tiles for each of 525 blocks (not 528, of
    // which some would take one tile fewer than the rest).
    let big = plan_segments(132, 1, 1 << 28, 4);
    assert_eq!(big.aux, 525);
    assert!(big.aux <= 132 * BLOCKS_PER_SM);
    // 2^22 floats, 1024 tiles: 512 blocks of two tiles each rather than 528 of one or two.
    assert_eq!(plan_segments(132, 1, 1 << 22, 4), plan_full_fixed(512, 256));
    // Fewer tiles than a wave: a block per tile, as before.
    assert_eq!(plan_segments(132, 1, 1 << 20, 4), plan_full_fixed(256, 256));
    assert_eq!(big.grid.0, big.aux);
    assert_eq!((big.partials, big.counters), (u64::from(big.aux), 1));
    let empty = plan_segments(132, 1, 0, 4);
    assert_eq!((empty.grid, empty.aux), ((1, 1), 1));
    // Up to four blocks' worth of loads (4 x 256 threads x 4 groups of 4 floats): still one
    // block; one group more: a block per block's worth.
    assert_eq!(plan_segments(132, 1, 1 << 14, 4), plan_full_fixed(1, 256));
    assert_eq!(plan_segments(132, 1, 2 << 14, 8), plan_full_fixed(1, 256));
    assert_eq!(plan_segments(132, 1, (1 << 14) + 4, 4), plan_full_fixed(5, 256));
    assert_eq!(plan_segments(132, 1, 1 << 16, 4), plan_full_fixed(16, 256));
}

#[test]
fn plans_rows() {
    let short = plan_segments(132, 1 << 20, 32, 4);
    assert_eq!((short.kind, short.aux), (PlanKind::Rows, 8));
    // 8 lanes per row, 4 rows per lane group at once: 128 rows per block, at most 8 waves.
    assert_eq!(short.grid.0, 132 * BLOCKS_PER_SM * 8);
    assert_eq!(plan_segments(132, 1000, 32, 4).grid.0, 8);
    let long = plan_segments(132, 65536, 4096, 4);
    assert_eq!((long.kind, long.aux, long.partials), (PlanKind::Segments, 1, 0));
    // Many rows of one block's loads: a block per row, all in one launch.
    assert_eq!(long.grid.0, 65536);
    // A wave of longer rows: four blocks per row, one launch, a partial per block and a
    // counter per row.
    let wide = plan_segments(132, 4096, 65536, 4);
    assert_eq!((wide.aux, wide.grid.0, wide.partials, wide.counters), (4, 4 * 4096, 4 * 4096, 4096));
    // Rows just over one block's loads split only as far as there are loads.
    let two = plan_segments(132, 4096, 2 * 4096, 4);
    assert_eq!((two.aux, two.grid.0), (2, 2 * 4096));
    // Fewer rows than a wave: the persistent grid.
    let some = plan_segments(132, 100, 65536, 4);
    assert!(some.grid.0 <= 2 * 132 * BLOCKS_PER_SM && some.grid.0.is_multiple_of(some.aux));
    let few_long = plan_segments(132, 4, 1 << 24, 4);
    assert!(few_long.aux > 1 && few_long.grid.0.is_multiple_of(few_long.aux));
    assert_eq!(few_long.counters, 4);
    let zero_cols = plan_segments(132, 10, 0, 4);
    assert_eq!((zero_cols.kind, zero_cols.aux), (PlanKind::Rows, 1));
}

#[test]
fn plans_cols() {
    let tall = plan_cols(132, 1 << 20, 32, 4);
    assert_eq!((tall.block, tall.grid.0), ((8, 32), 1));
    assert!(tall.grid.1 > 100);
    assert_eq!(tall.partials, u64::from(tall.grid.1) * 32);
    let wide = plan_cols(132, 4096, 65536, 4);
    assert_eq!((wide.block, wide.grid.0), ((32, 8), 512));
    let one_row = plan_cols(132, 1, 100, 4);
    assert_eq!((one_row.grid.1, one_row.partials, one_row.counters), (1, 0, 0));
    assert!(one_row.scratch_bytes() == 0);
    let p = plan_cols(132, 65536, 4096, 4);
    assert_eq!(p.partial_offset(), 256);
    assert_eq!(p.scratch_bytes(), 256 + p.partials * MAX_REDUCE_BYTES as u64);
}

/// Writes the generated source for a manual `nvcc` check (`REDUCTION_SOURCE_OUT=dir`).
#[test]
fn dump_source_for_nvcc() {
    if let Ok(dir) = std::env::var("REDUCTION_SOURCE_OUT") {
        let mut r = sum_of_squares();
        let mut src = r.source();
        src.push_str("template __global__ void ssq_full<float>(const float*, const float*, float, float*, long long, long long, int, unsigned char*, long long);\n");
        src.push_str("template __global__ void ssq_rows<double>(const double*, const float*, double, double*, long long, long long, int);\n");
        src.push_str("template __global__ void ssq_cols<float>(const float*, const float*, float, float*, long long, long long, unsigned char*, long long);\n");
        std::fs::write(format!("{dir}/ssq.cu"), src).unwrap();
        let mut simple = r.clone();
        simple.inputs.truncate(1);
        simple.reduce_type = None;
        simple.map = Snippet::new("x * x");
        let mut src = simple.source();
        src.push_str("template __global__ void ssq_full<float>(const float*, float*, long long, long long, int, unsigned char*, long long);\n");
        src.push_str("template __global__ void ssq_rows<float>(const float*, float*, long long, long long, int);\n");
        src.push_str("template __global__ void ssq_cols<float>(const float*, float*, long long, long long, unsigned char*, long long);\n");
        std::fs::write(format!("{dir}/simple.cu"), src).unwrap();
        r.preamble = Some(Snippet::new("struct Pair { float v; long long i; };"));
        r.inputs.truncate(1);
        r.placeholders.clear();
        r.instances.clear();
        r.inputs[0].ty = "float".into();
        r.outputs[0].ty = "long long".into();
        r.reduce_type = Some(Snippet::new("Pair"));
        r.map = Snippet::new("Pair{x, i}");
        r.reduce = Snippet::new("(a.v > b.v || (a.v == b.v && a.i < b.i)) ? a : b");
        r.identity = Snippet::new("Pair{-INFINITY, -1}");
        r.post_map = Some(Snippet::new("y = a.i"));
        std::fs::write(format!("{dir}/argmax.cu"), r.source()).unwrap();
    }
}

#[test]
fn a_fixed_full_plan_matches_the_automatic_one_where_they_agree() {
    // 2^26 f32 on 132 SMs: 16384 tiles, 32 for each of 512 blocks of 256 threads.
    assert_eq!(plan_full_fixed(512, 256), plan_segments(132, 1, 1 << 26, 4));
    // 1000 elements: one block, no scratch.
    assert_eq!(plan_full_fixed(1, 256), plan_segments(132, 1, 1000, 4));
    // Other shapes: the grid and block asked for, one counter and a partial per block.
    let p = plan_full_fixed(64, 128);
    assert_eq!(
        (p.kind, p.grid, p.block, p.aux, p.partials, p.counters),
        (PlanKind::Segments, (64, 1), (128, 1), 64, 64, 1)
    );
    assert_eq!(p.scratch_bytes(), 256 + 64 * MAX_REDUCE_BYTES as u64);
}
