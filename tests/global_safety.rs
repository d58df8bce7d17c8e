//! Soundness of `Global<T>`: a write from page-locked memory has consumed it when it returns (a
//! large one by waiting for the copy, a small one by staging it), and
//! global copies are ordered with the module's kernels on other streams. (Reading only types
//! valid for any bits and the exact size of a struct global are compile-time checks: ui-tests
//! `global_read_bool`, `global_read_struct_without_any_bit_pattern`, `nvcc/global_struct_wrong_size`.)
//! GPU tests are `#[ignore]`d (run them on a GPU machine).

use cuda_embed::{cuda_kernel, CudaContext, LaunchConfig};
use std::sync::Arc;

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("these tests need a CUDA GPU")
}

const BIG: usize = 1 << 22;

cuda_kernel!(
    r#"
    // One variable per test: the tests of this file run in parallel in one process.
    __device__ float big[4194304];
    __device__ float from_pinned[4194304];
    __constant__ float small_from_pinned[4096];
    __device__ int answer;

    // Spins for about `ns` nanoseconds, then stores `value`: slow enough that an unordered copy
    // on another stream would run before it.
    extern "C" __global__ void late_store(int value, long long ns) {
        long long start = clock64();
        // clock64 counts SM cycles (about 1-2 GHz): 2 cycles per ns errs on the long side.
        while (clock64() - start < 2 * ns) { }
        answer = value;
    }

    // The same, for the test of launches on several streams.
    __device__ int answer_2;
    extern "C" __global__ void late_store_2(int value, long long ns) {
        long long start = clock64();
        while (clock64() - start < 2 * ns) { }
        answer_2 = value;
    }

    extern "C" __global__ void spin(long long ns) {
        long long start = clock64();
        while (clock64() - start < 2 * ns) { }
    }

    extern "C" __global__ void copy_big(float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = big[i];
    }
"#
);

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_write_from_pinned_memory_has_consumed_it_when_it_returns() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    // SAFETY: every element is written before use.
    let mut pinned = unsafe { ctx.alloc_pinned::<f32>(BIG) }.unwrap();
    pinned.as_mut_slice().unwrap().iter_mut().enumerate().for_each(|(i, v)| *v = i as f32);
    from_pinned.write(&stream, pinned.as_slice().unwrap()).unwrap();
    // Change the source right away, then free it: the copy must have read the old values.
    pinned.as_mut_slice().unwrap().iter_mut().for_each(|v| *v = -1.0);
    drop(pinned);
    let back = from_pinned.read(&stream).unwrap();
    let wrong = back.iter().enumerate().filter(|(i, v)| **v != *i as f32).count();
    assert_eq!(wrong, 0, "{wrong} of {BIG} elements were not the values given to write");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_small_write_from_pinned_memory_is_staged_before_it_returns() {
    let ctx = ctx();
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    // SAFETY: every element is written before use.
    let mut pinned = unsafe { ctx.alloc_pinned::<f32>(4096) }.unwrap();
    for round in 1..=3 {
        // s1 waits for a 5 ms kernel on s2, so the copy is still queued when `write` returns.
        unsafe { spin::launch(&s2, LaunchConfig::for_num_elems(1), 5_000_000) }.unwrap();
        s1.join(&s2).unwrap();
        pinned
            .as_mut_slice()
            .unwrap()
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = (round * 10_000) as f32 + i as f32);
        small_from_pinned.write(&s1, pinned.as_slice().unwrap()).unwrap();
        pinned.as_mut_slice().unwrap().iter_mut().for_each(|v| *v = -1.0);
        let back = small_from_pinned.read(&s1).unwrap();
        let wrong = back.iter().enumerate().filter(|(i, v)| **v != (round * 10_000) as f32 + *i as f32).count();
        assert_eq!(wrong, 0, "round {round}: {wrong} of 4096 elements were not the values given to write");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_read_on_another_stream_waits_for_the_modules_last_launch() {
    let ctx = ctx();
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    assert!(ctx.is_managing_stream_synchronization());
    answer.set(&s1, 0).unwrap();
    s1.synchronize().unwrap();
    for round in 1..=3 {
        // 20 ms on s1, then a read on s2 with no synchronisation in between.
        unsafe { late_store::launch(&s1, LaunchConfig::for_num_elems(1), round, 20_000_000) }.unwrap();
        assert_eq!(answer.get(&s2).unwrap(), round, "the read on s2 ran before the kernel on s1 finished");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_read_waits_for_launches_on_every_stream_not_only_the_latest() {
    // A later, short launch of the module on a third stream must not hide the long one on s1
    // (the module keeps one event per stream, not only its last launch).
    let ctx = ctx();
    let (s1, s2, s3) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    answer_2.set(&s1, 0).unwrap();
    s1.synchronize().unwrap();
    for round in 1..=3 {
        unsafe { late_store_2::launch(&s1, LaunchConfig::for_num_elems(1), round, 20_000_000) }.unwrap();
        unsafe { spin::launch(&s3, LaunchConfig::for_num_elems(1), 1_000) }.unwrap();
        assert_eq!(answer_2.get(&s2).unwrap(), round, "the read on s2 ran before the kernel on s1 finished");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_launch_on_another_stream_waits_for_the_last_write() {
    let ctx = ctx();
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let mut out = s2.alloc_zeros::<f32>(BIG).unwrap();
    for round in 1..=3 {
        let values = vec![round as f32; BIG];
        big.write(&s1, &values).unwrap();
        drop(values);
        unsafe { copy_big::launch(&s2, LaunchConfig::for_num_elems(BIG as u32), &mut out, BIG as i32) }.unwrap();
        let got = s2.clone_dtoh(&out).unwrap();
        let wrong = got.iter().filter(|&&v| v != round as f32).count();
        assert_eq!(wrong, 0, "round {round}: the kernel on s2 saw {wrong} elements before the write on s1 landed");
    }
}
