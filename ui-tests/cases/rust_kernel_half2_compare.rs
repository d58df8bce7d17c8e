// `Half2` has lane-wise `+ - * /`, but no comparison: CUDA's `==` on `__half2` means "both lanes
// equal" and its `!=` "both lanes differ", which is not Rust's `!(a == b)`.
use cuda_embed::device::*;
use cuda_embed::Half2;

#[cuda_embed::kernel]
fn same(a: &[Half2], b: &[Half2], c: &mut [bool]) {
    let i = thread_idx().x as usize;
    c[i] = a[i] == b[i];
}

fn main() {}
