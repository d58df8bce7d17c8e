// A nested tuple pattern must match the tuple it is bound to: here the inner pattern has three
// names and the device function's inner tuple two.
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
        let ((a, b, c), n) = split(x[i]);
        x[i] = a + b + c + n as f32;
    }
}

fn main() {}
