//! `#[derive(DeviceSafe)]` through the facade: the impls it writes, the layout it records, and the
//! compile-time layout check the macro will call. No GPU needed.

use cuda_embed::cudarc::driver::DeviceRepr;
use cuda_embed::{DeviceSafe, FieldLayout, Float4};
use std::mem::{align_of, size_of};

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, DeviceSafe)]
struct P {
    a: u8,
    b: f32,
    c: [u16; 3],
}

#[repr(C)]
#[derive(Clone, Copy, DeviceSafe)]
struct Params {
    scale: f32,
    num_rows: i32,
    offset: f64,
}

/// A derived struct inside another, a CUDA vector type, an explicit alignment.
#[repr(C, align(16))]
#[derive(Clone, Copy, DeviceSafe)]
struct Nested {
    p: P,
    v: Float4,
    r#type: u32,
}

#[repr(C)]
#[derive(Clone, Copy, DeviceSafe)]
struct Pair(f32, f64);

#[repr(transparent)]
#[derive(Clone, Copy, DeviceSafe)]
struct Handle(u64);

#[repr(C)]
#[derive(Clone, Copy, DeviceSafe)]
struct Generic<T, const N: usize> {
    len: u32,
    items: [T; N],
}

fn device_safe<T: DeviceSafe>() {}
fn device_repr<T: DeviceRepr>() {}

const fn layout<T: DeviceSafe>() -> &'static [FieldLayout] {
    match T::LAYOUT {
        Some(l) => l,
        None => panic!("derived types have a layout"),
    }
}

fn rows(l: &[FieldLayout]) -> Vec<(&str, usize, usize)> {
    l.iter().map(|f| (f.name, f.offset, f.size)).collect()
}

#[test]
fn derived_types_are_device_safe_and_device_repr() {
    device_safe::<P>();
    device_repr::<P>();
    device_safe::<Params>();
    device_repr::<Params>();
    device_safe::<Nested>();
    device_repr::<Nested>();
    device_safe::<Pair>();
    device_repr::<Pair>();
    device_safe::<Handle>();
    device_repr::<Handle>();
    device_safe::<Generic<f32, 4>>();
    device_repr::<Generic<Float4, 2>>();
}

#[test]
fn layout_lists_fields_in_declaration_order() {
    assert_eq!(rows(layout::<P>()), [("a", 0, 1), ("b", 4, 4), ("c", 8, 6)]);
    assert_eq!((size_of::<P>(), align_of::<P>()), (16, 4));
    assert_eq!(rows(layout::<Params>()), [("scale", 0, 4), ("num_rows", 4, 4), ("offset", 8, 8)]);
    assert_eq!(rows(layout::<Nested>()), [("p", 0, 16), ("v", 16, 16), ("type", 32, 4)]);
    assert_eq!(align_of::<Nested>(), 16);
    assert_eq!(rows(layout::<Pair>()), [("0", 0, 4), ("1", 8, 8)]);
    assert_eq!(rows(layout::<Handle>()), [("0", 0, 8)]);
    assert_eq!(rows(layout::<Generic<u8, 3>>()), [("len", 0, 4), ("items", 4, 3)]);
    assert_eq!(rows(layout::<Generic<f64, 2>>()), [("len", 0, 4), ("items", 8, 16)]);
    // Types without a derive have no layout to compare.
    assert_eq!(<f32 as DeviceSafe>::LAYOUT, None);
    assert_eq!(<Float4 as DeviceSafe>::LAYOUT, None);
}

// What the macro will generate once the CUDA struct's member offsets are probed: the right layout
// compiles. (A wrong one is a compile error: ui-tests/cases/derive_wrong_field_order.rs.)
const _: () =
    cuda_embed::__private::check_layout::<Params>("Params", &[("scale", 0, 4), ("numRows", 4, 4), ("offset", 8, 8)]);
const _: () = cuda_embed::__private::check_layout::<P>("P", &[("a", 0, 1), ("b", 4, 4), ("c", 8, 6)]);
const _: () = cuda_embed::__private::check_layout::<Pair>("Pair", &[("re", 0, 4), ("im", 8, 8)]);

#[test]
fn layout_check_accepts_the_right_layout_at_run_time_too() {
    cuda_embed::__private::check_layout::<Nested>("Nested", &[("p", 0, 16), ("v", 16, 16), ("type", 32, 4)]);
}

#[test]
#[should_panic(
    expected = "field `b` of `P` is at offset 4 in Rust but at 8 in the CUDA struct: declare the fields in the CUDA order"
)]
fn layout_check_rejects_another_order() {
    cuda_embed::__private::check_layout::<P>("P", &[("a", 0, 1), ("c", 2, 6), ("b", 8, 4)]);
}
