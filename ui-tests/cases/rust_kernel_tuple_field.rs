// A tuple's fields are `.0` to `.N-1`, also in a nested tuple.
#[cuda_embed::kernels]
mod gpu {
    use cuda_embed::device::*;

    #[device]
    fn split(v: f32) -> ((f32, f32), u32) {
        ((v, -v), 1)
    }

    #[kernel]
    pub fn k(x: &mut [f32]) {
        let i = thread_idx().x as usize;
        let t = split(x[i]);
        x[i] = t.0.2;
    }
}

fn main() {}
