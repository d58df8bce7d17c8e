//! The async forms of the run-time launchers ([`Kernel`], [`GraphExec`], [`ProgramKernel`],
//! [`Reduction`]): each queues its work as the blocking form does and returns a future of it. They
//! live here, above the capabilities they extend, so that launching and graphs need not know
//! about futures.

use crate::args::dynamic::Arg;
use crate::args::typed::TypedArg;
use crate::args::KernelArgs;
use crate::error::Result;
use crate::future::GpuFuture;
use crate::graph::GraphExec;
use crate::launch::kernel::Kernel;
use crate::program::ProgramKernel;
use crate::reduction::program::Reduction;
use cudarc::driver::{CudaStream, LaunchConfig};
use std::sync::Arc;

impl<Sig> Kernel<Sig> {
    /// [`Kernel::launch`] as a future: the kernel is queued (and its arguments checked and bound)
    /// now, exactly as `launch` queues it; the future resolves when the GPU has finished it, to
    /// the launch's result: a refusal before the launch, or the error the work raised on the GPU.
    /// The buffers in `args` stay borrowed until the future is dropped; dropping or forgetting
    /// it early is sound (see [`future`](crate::future)).
    ///
    /// ```ignore
    /// let k: Kernel<(Out<i32>, i32)> = add_one::KERNEL;
    /// unsafe { k.launch_async(&stream, cfg, (&mut out, n)) }.await?;
    /// ```
    ///
    /// # Safety
    /// As for [`Kernel::launch`].
    #[inline]
    pub unsafe fn launch_async<'a>(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        args: impl KernelArgs<Sig> + 'a,
    ) -> GpuFuture<'a> {
        // SAFETY: the caller's contract.
        let queued = unsafe { self.launch(stream, config, args) };
        GpuFuture::after_launch(stream, queued, self.untyped())
    }
}

impl<'a> GraphExec<'a> {
    /// [`GraphExec::launch`] as a future: the graph is launched now, and the future resolves
    /// when the GPU has finished it, to what [`GraphExec::synchronize`] would return then: the
    /// launch's or the work's error, a host node that panicked, the first out-of-range index of a
    /// bounds-checked Rust-syntax kernel (read after the work is done). The graph stays borrowed
    /// until the future is dropped; dropping or forgetting it early is sound (see
    /// [`future`](crate::future): a launched `GraphExec` also waits for its context when dropped).
    ///
    /// ```no_run
    /// # async fn f(exec: &cuda_embed_runtime::GraphExec<'_>, stream: &cuda_embed_runtime::CudaStream) -> cuda_embed_runtime::Result<()> {
    /// unsafe { exec.launch_async(stream) }.await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// As for [`GraphExec::launch`].
    pub unsafe fn launch_async<'s>(
        &'s self,
        stream: &'s CudaStream,
    ) -> impl std::future::Future<Output = Result<()>> + use<'a, 's> {
        // SAFETY: the caller's contract.
        let queued = unsafe { self.launch(stream) };
        let done = GpuFuture::after_call(stream, queued, "cuGraphLaunch (GraphExec::launch_async)", ());
        async move {
            done.await?;
            self.panics()?;
            crate::device::report::check_launched(stream)
        }
    }
}

impl ProgramKernel {
    /// [`ProgramKernel::launch`] as a future: the kernel is queued now (checked as `launch`
    /// checks it), and the future resolves when the GPU has finished it, to the launch's result.
    /// The buffers in `args` stay borrowed until the future is dropped; dropping or forgetting it
    /// early is sound (see [`future`](crate::future)).
    ///
    /// ```no_run
    /// # async fn f(k: &cuda_embed_runtime::ProgramKernel, stream: &cuda_embed_runtime::CudaStream,
    /// #            y: &mut cuda_embed_runtime::CudaSlice<f32>) -> cuda_embed_runtime::Result<()> {
    /// use cuda_embed_runtime::{Arg, LaunchConfig};
    /// let n = y.len() as i32;
    /// unsafe { k.launch_async(stream, LaunchConfig::for_num_elems(n as u32), &mut [Arg::slice_mut(y), Arg::value(&n)]) }.await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// As for [`ProgramKernel::launch`].
    pub unsafe fn launch_async<'a>(
        &self,
        stream: &CudaStream,
        cfg: LaunchConfig,
        args: &mut [Arg<'a>],
    ) -> GpuFuture<'a> {
        // SAFETY: the caller's contract.
        let queued = unsafe { self.launch(stream, cfg, args) };
        GpuFuture::after_program(stream, queued, self.name(), self.origin())
    }
}

impl Reduction {
    /// [`Reduction::launch`] as a future: the reduction is queued now (checked, planned and bound
    /// as `launch` does), and the future resolves when the GPU has finished it, to the launch's
    /// result. The buffers in `args` stay borrowed until the future is dropped; dropping or
    /// forgetting it early is sound (see [`future`](crate::future)).
    ///
    /// ```no_run
    /// # async fn f(r: &cuda_embed_runtime::Reduction, stream: &std::sync::Arc<cuda_embed_runtime::CudaStream>,
    /// #            x: &cuda_embed_runtime::CudaSlice<f32>, y: &mut cuda_embed_runtime::CudaSlice<f32>) -> cuda_embed_runtime::Result<()> {
    /// use cuda_embed_runtime::TypedArg;
    /// r.launch_async(stream, &mut [TypedArg::slice(x), TypedArg::slice_mut(y)]).await?;
    /// # Ok(()) }
    /// ```
    pub fn launch_async<'a>(&self, stream: &Arc<CudaStream>, args: &mut [TypedArg<'a>]) -> GpuFuture<'a> {
        let queued = self.launch(stream, args);
        GpuFuture::after_program(stream, queued, self.name(), "a ReductionProgram")
    }
}
