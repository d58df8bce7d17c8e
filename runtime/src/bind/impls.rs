//! The implementations of the typed argument traits, launch side ([`KernelArg`],
//! [`KernelArgs`]) and graph-node side ([`NodeArg`], [`NodeArgs`]), from one table each: one
//! macro emits both sides for each buffer kind and each tuple arity, so the two lists cannot
//! drift apart.
//!
//! The two sides differ in how a buffer is borrowed: a launch takes `&mut` for a buffer the kernel
//! writes (cudarc's ordering guard records the write), a node borrows every buffer shared for the
//! graph's lifetime and records the write for the dependency inference instead.

use crate::args::node::{NodeArg, NodeArgs, Record};
use crate::args::{placement_of, In, InAny, KernelArg, KernelArgs, Out, OutAny};
use crate::bind::node_buffer;
use crate::error::{Error, Result};
use cudarc::driver::{
    sys, CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, SyncOnDrop,
};
use std::ffi::c_void;

/// The launch side of one buffer argument: `$self_ty` bound with `$method` on the stream.
macro_rules! launch_buffer {
    ($marker:ty, [$($g:tt)*], $self_ty:ty, $method:ident) => {
        // SAFETY: the parameter is the buffer's device address (a u64), taken on the launch
        // stream; the guard keeps cudarc's event tracking ordered around the launch.
        unsafe impl<'a, $($g)*> KernelArg<$marker> for $self_ty {
            type Bound<'s>
                = (sys::CUdeviceptr, SyncOnDrop<'s>)
            where
                Self: 's;
            #[inline(always)]
            fn bind<'s>(self, stream: &'s CudaStream) -> Self::Bound<'s>
            where
                Self: 's,
            {
                self.$method(stream)
            }
            #[inline(always)]
            fn param<'s>(bound: &Self::Bound<'s>) -> *mut c_void
            where
                Self: 's,
            {
                &bound.0 as *const sys::CUdeviceptr as *mut c_void
            }
            #[inline(always)]
            fn placement(&self) -> Option<(sys::CUcontext, usize)> {
                Some(placement_of::<T, _>(&**self))
            }
        }
    };
}

/// The node side of one buffer argument: `&'a $s`, its whole range recorded as read or written.
macro_rules! node_buffer {
    ($marker:ty, [$($g:tt)*], $s:ty, $write:expr) => {
        // SAFETY: the parameter is the buffer's device address; its whole range is recorded.
        unsafe impl<'a, $($g)*> NodeArg<'a, $marker> for &'a $s {
            type Param = sys::CUdeviceptr;
            #[inline(always)]
            fn prepare(self, ctx: &CudaContext, accesses: &mut impl Record) -> Result<sys::CUdeviceptr> {
                let (p, access) = node_buffer(self, ctx, $write)?;
                accesses.record(access);
                Ok(p)
            }
        }
    };
}

/// Both sides of the buffer arguments of one marker. `read`: `&S` for a launch and a node;
/// `write`: `&mut S` for a launch, `&S` for a node (which reads the address through `DevicePtr`).
macro_rules! buffer_args {
    (typed $marker:ident, read) => {
        launch_buffer!($marker<T>, [T, S: DevicePtr<T>], &'a S, device_ptr);
        node_buffer!($marker<T>, [T, S: DevicePtr<T>], S, false);
    };
    (typed $marker:ident, write) => {
        launch_buffer!($marker<T>, [T, S: DevicePtrMut<T>], &'a mut S, device_ptr_mut);
        node_buffer!($marker<T>, [T, S: DevicePtr<T> + DevicePtrMut<T>], S, true);
    };
    (any $marker:ident, read, $($s:ty),*) => {
        $(
            launch_buffer!($marker, [T], &'a $s, device_ptr);
            node_buffer!($marker, [T], $s, false);
        )*
    };
    (any $marker:ident, write, $($s:ty),*) => {
        $(
            launch_buffer!($marker, [T], &'a mut $s, device_ptr_mut);
            node_buffer!($marker, [T], $s, true);
        )*
    };
}

buffer_args!(typed In, read);
buffer_args!(typed Out, write);
buffer_args!(any InAny, read, CudaSlice<T>, CudaView<'_, T>, CudaViewMut<'_, T>);
buffer_args!(any OutAny, write, CudaSlice<T>, CudaViewMut<'_, T>);

/// Both argument-list traits for the tuple of the given elements.
macro_rules! tuple_impls {
    ($($a:ident $m:ident $b:ident),*) => {
        // SAFETY: one pointer per element, each from its own `KernelArg::param`, alive (bound on
        // this stack frame) for the call of `f`.
        unsafe impl<$($m, $a: KernelArg<$m>,)*> KernelArgs<($($m,)*)> for ($($a,)*) {
            #[inline(always)]
            #[allow(unused_variables, unused_mut, unused_assignments, non_snake_case)]
            fn with_params<R>(
                self,
                stream: &CudaStream,
                f: impl FnOnce(&mut [*mut c_void]) -> Result<R>,
                wrong: impl FnOnce(usize, usize) -> Error,
            ) -> Result<R> {
                let ($($b,)*) = self;
                // The device check of every launch (`bind`), before any driver call.
                let placements = [$(<$a as KernelArg<$m>>::placement(&$b)),*];
                if let Some((index, device)) = crate::bind::placement(placements, stream) {
                    return Err(wrong(index, device));
                }
                // Under capture with event tracking, buffers are bound on the side stream.
                let binding = crate::bind::capture::binding(stream)?;
                $(let $b = $b.bind(&binding);)*
                let mut params: [*mut c_void; 0 $(+ { let _ = stringify!($a); 1 })*] =
                    [$(<$a as KernelArg<$m>>::param(&$b)),*];
                f(&mut params)
            }
        }

        // SAFETY: one pointer per element, each to its prepared parameter on this stack frame,
        // alive for the call of `f`.
        unsafe impl<'a, $($m, $a: NodeArg<'a, $m>,)*> NodeArgs<'a, ($($m,)*)> for ($($a,)*) {
            const MEMORY: usize = 0 $(+ <$a as NodeArg<'a, $m>>::MEMORY as usize)*;
            const CONDITIONS: usize = 0 $(+ <$a as NodeArg<'a, $m>>::CONDITION as usize)*;
            #[inline(always)]
            #[allow(unused_variables, unused_mut, non_snake_case)]
            fn with_params<Acc: Record, R>(
                self,
                ctx: &CudaContext,
                accesses: &mut Acc,
                f: impl FnOnce(&mut [*mut c_void], &mut Acc) -> Result<R>,
            ) -> Result<R> {
                let ($($b,)*) = self;
                $(let $b = $b.prepare(ctx, accesses)?;)*
                let mut params: [*mut c_void; 0 $(+ { let _ = stringify!($a); 1 })*] =
                    [$(&$b as *const <$a as NodeArg<'a, $m>>::Param as *mut c_void),*];
                f(&mut params, accesses)
            }
        }
    };
}

/// [`tuple_impls!`] for every prefix of the list: the empty tuple, the first element, the first
/// two, ... up to the whole list.
macro_rules! all_tuples {
    (@go [$($done:tt)*]) => {
        tuple_impls!($($done)*);
    };
    (@go [$($done:tt)*] $a:ident $m:ident $b:ident $(, $($rest:tt)*)?) => {
        tuple_impls!($($done)*);
        all_tuples!(@next [$($done)*] [$a $m $b] $($($rest)*)?);
    };
    // Appends one element to the list (the first without a comma) and goes on.
    (@next [] [$($x:tt)*] $($rest:tt)*) => {
        all_tuples!(@go [$($x)*] $($rest)*);
    };
    (@next [$($done:tt)+] [$($x:tt)*] $($rest:tt)*) => {
        all_tuples!(@go [$($done)+, $($x)*] $($rest)*);
    };
}

all_tuples!(@go []
    A0 M0 a0, A1 M1 a1, A2 M2 a2, A3 M3 a3, A4 M4 a4, A5 M5 a5, A6 M6 a6, A7 M7 a7, A8 M8 a8, A9 M9 a9,
    A10 M10 a10, A11 M11 a11, A12 M12 a12, A13 M13 a13, A14 M14 a14, A15 M15 a15, A16 M16 a16,
    A17 M17 a17, A18 M18 a18, A19 M19 a19
);
