// A memset node writes 1-, 2- or 4-byte scalars: an f64 is a compile error, not a run-time one.
fn main() {
    let ctx = cuda_embed::context(0).unwrap();
    let b = ctx.default_stream().alloc_zeros::<f64>(4).unwrap();
    let mut g = cuda_embed::Graph::new(&ctx).unwrap();
    let _ = g.memset(&b, 1.0f64);
}
