//! Snapshots of the C++ each construct translates to, and the errors of unsupported syntax.
//!
//! Run with `UPDATE_SNAPSHOTS=1` to (re)write `snapshots/*.cu.snap`, then review the diff.

use super::syntax::{kernel_fn, Attr};
use super::translate;
use std::path::PathBuf;

/// This crate's directory: CARGO_MANIFEST_DIR at run time (set by `cargo test`, and by the packed
/// GPU run to the crate's copy there), else where it was built.
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

fn translated(attr: &str, item: &str) -> syn::Result<String> {
    let attr: Attr = syn::parse_str(attr)?;
    let kernel = kernel_fn(syn::parse_str(item)?)?;
    translate(&attr, &kernel, "src/kernels.rs", 1).map(|t| t.source)
}

fn snapshot(name: &str, attr: &str, item: &str) {
    let got = match translated(attr, item) {
        Ok(s) => s,
        Err(e) => panic!("{name}: {e}"),
    };
    check_snapshot(name, item, &got);
}

fn check_snapshot(name: &str, item: &str, got: &str) {
    let path = manifest_dir().join("src/rust_kernel/snapshots").join(format!("{name}.cu.snap"));
    let text = format!(
        "// input:\n{}\n// output:\n{got}",
        item.trim().lines().map(|l| format!("// {l}")).collect::<Vec<_>>().join("\n")
    );
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("no snapshot {}: run with UPDATE_SNAPSHOTS=1", path.display()));
    assert_eq!(text, want, "snapshot {name} changed: run with UPDATE_SNAPSHOTS=1 and review the diff");
}

fn error(attr: &str, item: &str) -> String {
    match translated(attr, item) {
        Ok(s) => panic!("expected an error, got:\n{s}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn saxpy() {
    snapshot(
        "saxpy",
        "",
        r#"
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}"#,
    );
}

#[test]
fn saxpy_unchecked() {
    snapshot(
        "saxpy_unchecked",
        "bounds_checks = false",
        r#"
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}"#,
    );
}

#[test]
fn control_flow() {
    snapshot(
        "control_flow",
        "bounds_checks = false",
        r#"
fn control(n: u32, out: &mut [i32]) {
    let mut acc = 0;
    let mut k = 0u32;
    while k < n {
        k += 1;
        if k % 3 == 0 {
            continue;
        } else if k > 100 {
            break;
        }
        acc += k as i32;
    }
    loop {
        acc -= 1;
        if acc < 10 { break; }
    }
    for j in (0..n).step_by(2) {
        acc = acc * 3 + j as i32;
    }
    for j in (0..8usize).rev() {
        out[j] = acc;
    }
    for j in 0..=3 {
        out[j] += 1;
    }
    let sign = if acc < 0 { -1 } else { 1 };
    let big = if acc > 5 {
        let t = acc * 2;
        t + 1
    } else {
        0
    };
    out[0] = sign + big;
}"#,
    );
}

#[test]
fn scalars_casts_and_wrapping() {
    snapshot(
        "scalars",
        "bounds_checks = false",
        r#"
fn scalars(a: i8, b: u16, c: i64, d: f64, e: bool, out: &mut [f64]) {
    let x = a + 1;
    let y = b << 3u32;
    let z = c * -2 - i64::MAX;
    let w = !(b as u32) & 0xff;
    let flag = e && !(x > 3) || d >= 0.5;
    let m = (c as u64).min(7) + u64::MAX;
    out[0] = d * 2.0 + x as f64 + y as f64 + z as f64 + w as f64 + m as f64 + flag as u8 as f64;
}"#,
    );
}

#[test]
fn float_methods() {
    snapshot(
        "float_methods",
        "bounds_checks = false",
        r#"
fn gelu(x: &[f32], y: &mut [f32], z: &mut [f64]) {
    let i = thread_idx().x as usize;
    let v = x[i];
    let mut acc = 0.0;
    acc += v.sqrt().exp().ln().powf(2.0).mul_add(0.5, 1.0).max(0.0).min(10.0).abs();
    y[i] = 0.5 * v * (1.0 + (0.7978845608 * (v + 0.044715 * v * v * v)).tanh()) + acc;
    z[i] = (z[i] * 2.0).sqrt() + f64::consts::PI + f64::INFINITY.min(1.0);
}"#,
    );
}

#[test]
fn shared_memory_reduction() {
    snapshot(
        "shared_reduction",
        "bounds_checks = false",
        r#"
fn block_sum(x: &[f32], out: &mut [f32]) {
    let tile = shared::<f32, 256>();
    let t = thread_idx().x as usize;
    let i = block_idx().x as usize * 256 + t;
    tile[t] = if i < x.len() { x[i] } else { 0.0 };
    sync_threads();
    let mut s = 128;
    while s > 0 {
        if t < s {
            tile[t] += tile[t + s];
        }
        sync_threads();
        s /= 2;
    }
    if t == 0 {
        atomic_add(&mut out[0], tile[0]);
    }
}"#,
    );
}

#[test]
fn warp_shuffle_and_printf() {
    snapshot(
        "warp",
        "",
        r#"
fn warp_sum(x: &[f32], out: &mut [f32], counts: &mut [u32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    let mut v = if i < x.len() { x[i] } else { 0.0 };
    let mut d = 16;
    while d > 0 {
        v += shfl_down_sync(0xffffffff, v, d);
        d /= 2;
    }
    let lanes = ballot_sync(0xffffffff, v > 0.0);
    if thread_idx().x % 32 == 0 {
        atomic_add(&mut out[0], v);
        atomic_max(&mut counts[0], lanes.count_ones());
        if all_sync(0xffffffff, true) { printf!("block %d lanes %u\n", block_idx().x, lanes); }
    }
}"#,
    );
}

#[test]
fn cpp_interop() {
    snapshot(
        "cpp_interop",
        r#"cpp = "__device__ float square(float v) { return v * v; }", bounds_checks = false"#,
        r#"
fn squares(x: &mut [f32]) {
    let i = thread_idx().x as usize;
    let s: f32 = square(x[i]);
    x[i] = s;
}"#,
    );
}

#[test]
fn shadowing_and_cpp_keywords() {
    snapshot(
        "shadowing",
        "bounds_checks = false",
        r#"
fn shadow(int: u32, out: &mut [u32]) {
    let x = int;
    let x = x + 1;
    {
        let x = x * 2;
        out[0] = x;
    }
    out[1] = x;
}"#,
    );
}

#[test]
fn literal_locals_take_the_type_they_meet() {
    let s = translated(
        "bounds_checks = false",
        "fn k(x: &[f32], y: &mut [f32]) { let mut acc = 0.0; for i in 0..x.len() { acc += x[i]; } y[0] = acc; }",
    )
    .unwrap();
    assert!(s.contains("float acc = 0.0f;"), "{s}");
    assert!(s.contains("for (size_t i = 0ull"), "{s}");
}

#[test]
fn unsupported_syntax_is_an_error_saying_what_is_supported() {
    let cases: &[(&str, &str)] = &[
        ("fn k(x: &mut [f32]) { let f = |a: f32| a * 2.0; }", "closures are not supported"),
        ("fn k(x: Vec<f32>) {}", "`Vec` is not supported"),
        ("fn k(x: &dyn Fn()) {}", "trait object is not supported"),
        ("fn k(x: &[&[f32]]) {}", "slice of slices is not supported"),
        ("fn k(x: &mut [f32]) { let a = 1.0f32; let r = &a; }", "reference to a local is not supported"),
        ("fn k(s: String) {}", "strings are not supported"),
        ("fn k(x: &[f32]) { x[0] = 1.0; }", "`x` is a `&[f32]`, which is read-only"),
        ("fn k(x: &mut [f32]) { x[0] = x.iter().sum(); }", "no method `iter` on `&mut [f32]`"),
        ("fn k(x: &mut [f32]) { x[0] = foo(1.0); }", "give its source with `cpp = "),
        ("fn k(x: &mut [f32]) { let i = 0u32; x[i] = 1.0; }", "indexed by `usize`, found `u32`"),
        ("fn k(x: &mut [f32]) { x[0] = 1.0f64; }", "expected `f32`, found `f64`"),
        ("fn k(x: &mut [f32]) { let a = 1; a = 2; }", "declare it `let mut a`"),
        ("fn k(x: &mut [f32]) { let v = vec![1.0]; }", "the macro `vec!` is not supported"),
        ("fn k(x: &mut [f32]) { let a = 2u32; match a { 1 => {} } }", "the last arm of a `match` in a kernel is `_"),
        ("fn k(x: &mut [f32]) { match x[0] { _ => {} } }", "`match` is supported on integers and `bool`"),
        ("fn k(x: &mut [f32]) -> f32 { 1.0 }", "a kernel returns nothing"),
        ("fn k<T>(x: &mut [T]) {}", "lists its instances"),
        ("fn k(x: &f32) {}", "a reference to one value is not supported"),
        (
            "fn k(x: &mut [f32]) { x[0] = x.len() as f32 + x[0].frobnicate(); }",
            "the method `frobnicate` is not supported on `f32`",
        ),
    ];
    for (item, want) in cases {
        let e = error("", item);
        assert!(e.contains(want), "{item}: expected an error containing {want:?}, got {e:?}");
    }
}

#[test]
fn errors_point_at_the_offending_span() {
    let item = "fn k(x: &mut [f32]) {\n    let f = |a: f32| a;\n}";
    let attr: Attr = syn::parse_str("").unwrap();
    let kernel = kernel_fn(syn::parse_str(item).unwrap()).unwrap();
    let e = translate(&attr, &kernel, "src/k.rs", 1).err().expect("a closure is an error");
    let start = e.span().start();
    assert_eq!((start.line, start.column), (2, 12), "the error points at the closure");
}

#[test]
fn unknown_options_are_errors() {
    let e = syn::parse_str::<Attr>("bounds = false").err().expect("unknown option");
    assert!(e.to_string().contains("unknown option `bounds`"), "{e}");
    let e = syn::parse_str::<Attr>("bounds_checks = 1").err().expect("not a bool");
    assert!(e.to_string().contains("`bounds_checks` takes `true` or `false`"), "{e}");
}

#[test]
fn device_functions_in_a_module() {
    let m: syn::ItemMod = syn::parse_str(
        r#"
mod gpu {
    #[device]
    fn norm2(x: &[f32], i: usize) -> f32 {
        let a = x[3 * i];
        if a > 1.0 {
            return a;
        }
        a * a
    }
    #[kernel]
    fn norms(x: &[f32], out: &mut [f32]) {
        let i = thread_idx().x as usize;
        out[i] = norm2(x, i);
    }
}"#,
    )
    .unwrap();
    let items = m.content.unwrap().1;
    let mut fns = items.into_iter().filter_map(|i| match i {
        syn::Item::Fn(mut f) => {
            let device = f.attrs[0].path().is_ident("device");
            f.attrs.clear();
            Some(super::syntax::function(f, device).unwrap())
        }
        _ => None,
    });
    let (d, k) = (fns.next().unwrap(), fns.next().unwrap());
    let attr: Attr = syn::parse_str("").unwrap();
    let got = super::translate_module(&attr, &[k], &[d], "src/gpu.rs", 1).unwrap().source;
    let path = manifest_dir().join("src/rust_kernel/snapshots/device_functions.cu.snap");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    assert_eq!(got, std::fs::read_to_string(&path).unwrap(), "run with UPDATE_SNAPSHOTS=1 and review the diff");
}

#[test]
fn half_precision() {
    snapshot(
        "half",
        "bounds_checks = false",
        r#"
fn half(a: f16, x: &[f16], y: &mut [bf16], z: &mut [f32]) {
    let i = thread_idx().x as usize;
    let v = a * x[i] + 1.0;
    y[i] = (v.sqrt().max(0.5) as f32 * 2.0) as bf16;
    z[i] = y[i].mul_add(y[i], 0.25) as f32 + v as f32;
}"#,
    );
}

#[test]
fn match_on_integers() {
    snapshot(
        "match",
        "bounds_checks = false",
        r#"
fn classify(x: &[i32], y: &mut [f32]) {
    let i = thread_idx().x as usize;
    let v = match x[i] {
        0 => 1.0,
        1 | 2 => 2.0,
        3..=9 => {
            let t = x[i] as f32;
            t * 0.5
        }
        _ => -1.0,
    };
    match i % 3 {
        0 => y[i] = v,
        _ => {}
    }
}"#,
    );
}

#[test]
fn tuples() {
    snapshot(
        "tuples",
        "bounds_checks = false",
        r#"
fn swap(x: &mut [f32]) {
    let (mut a, mut b) = (x[0], x[1] * 2.0);
    let (n, half): (u32, f32) = (3, 0.5);
    (a, b) = (b, a);
    x[0] = a * half;
    x[1] = b + n as f32;
}"#,
    );
}

#[test]
fn vector_types() {
    snapshot(
        "vectors",
        "",
        r#"
fn scale4(s: Float4, x: &[Float4], y: &mut [Float4], idx: &mut [Int2], d: &mut [Double2]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        let v = x[i];
        let mut w: Float4 = Float4::new(v.x * s.x, v.y * s.y, v.z * s.z, v.w * s.w);
        w.w = w.w + 1.0;
        y[i] = w;
        y[i].x = v.x.max(0.0);
        idx[i] = cuda_embed::Int2::new(i as i32, -1);
        idx[i].y += 2;
        let t = shared::<Double2, 32>();
        t[0] = Double2::new(v.x as f64, 0.5);
        d[i] = t[0];
    }
}"#,
    );
}

#[test]
fn half2_vectors() {
    snapshot(
        "half2",
        "",
        r#"
fn h2(a: Half2, x: &[Half2], y: &mut [Half2], b: &mut [Bf162], s: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        let v = x[i];
        let mut w: Half2 = a * v + Half2::new(1.0, -0.5);
        w -= v;
        w *= a;
        w += -v / a;
        w.x = w.x * 2.0;
        y[i] = w;
        y[i].y = v.x;
        let t = shared::<Bf162, 32>();
        t[0] = cuda_embed::Bf162::new(v.x as f32 as bf16, 0.25);
        b[i] = t[0] * b[i] - t[0];
        s[i] = w.x as f32 + b[i].y as f32;
    }
}"#,
    );
}

#[test]
fn half_headers_come_with_their_functions() {
    // Only `__halves2half2` and `__float2half` name fp16: the header is included for them.
    let src = translated(
        "bounds_checks = false",
        "fn k(s: &mut [f32]) { s[0] = Half2::new(1.0, 2.0).y as f32 + Bf162::new(0.5, 1.5).x as f32; }",
    )
    .unwrap();
    assert!(src.contains("#include <cuda_fp16.h>\n") && src.contains("#include <cuda_bf16.h>\n"), "{src}");
    assert!(src.contains("__halves2half2(__float2half(1.0f), __float2half(2.0f)).y"), "{src}");
    // A kernel naming the type leaves the include to the pipeline (`automatic_includes`).
    let src = translated("", "fn k(h: &mut [Half2]) { h[0] = Half2::new(1.0, 2.0); }").unwrap();
    assert!(!src.contains("#include"), "{src}");
}

#[test]
fn half2_errors() {
    let cases: &[(&str, &str)] = &[
        ("fn k(a: Half2, b: Half2, y: &mut [bool]) { y[0] = a == b; }", "`Half2` has no `==` operator: kernels give it `+`, `-`, `*`, `/`"),
        ("fn k(a: Half2, y: &mut [Half2]) { y[0] = a * 2.0; }", "mismatched types: `Half2` * `{float}`: both sides are `Half2` (for a scalar `s`, write `Half2::new(s, s)`)"),
        ("fn k(a: Half2, b: Bf162, y: &mut [Half2]) { y[0] = a + b; }", "mismatched types: `Half2` + `Bf162`"),
        ("fn k(a: Bf162, y: &mut [Bf162]) { y[0] %= a; }", "`Bf162` has no `%` operator"),
        ("fn k(y: &mut [Half2]) { y[0] = Half2::new(1.0); }", "`Half2::new` takes 2 arguments (x, y), found 1"),
        ("fn k(y: &mut [Half2]) { y[0] = Half2::new(1.0, 2.0f32); }", "expected `f16`, found `f32`"),
        ("fn k(a: Half2, y: &mut [f16]) { y[0] = a.z; }", "no field `z` on `Half2`: its fields are `.x`, `.y`"),
        ("fn k(a: Half2, y: &mut [Half2]) { y[0] = a.sqrt(); }", "no method `sqrt` on `Half2`"),
        ("fn k(a: Float2, y: &mut [Float2]) { y[0] = -a; }", "cannot negate `Float2`"),
    ];
    for (item, want) in cases {
        let e = error("", item);
        assert!(e.contains(want), "{item}: expected an error containing {want:?}, got {e:?}");
    }
}

#[test]
fn vector_type_errors() {
    for (item, want) in [
        ("fn k(a: Float4, b: Float4, y: &mut [Float4]) { y[0] = a + b; }", "`Float4` has no `+` operator"),
        ("fn k(a: Float2, y: &mut [f32]) { y[0] = a.z; }", "no field `z` on `Float2`: its fields are `.x`, `.y`"),
        ("fn k(y: &mut [Float2]) { y[0] = Float2::new(1.0); }", "`Float2::new` takes 2 arguments"),
        ("fn k(y: &mut [Float2]) { y[0] = Float2::new(1.0, 2.0f64); }", "expected `f32`, found `f64`"),
        ("fn k(y: &mut [Int2]) { y[0] = Float2::new(1.0, 2.0); }", "expected `Int2`, found `Float2`"),
        ("fn k(a: Double4) {}", "CUDA 13 deprecates its C++ type `double4`"),
        ("fn k(a: Float4, y: &mut [f32]) { y[0] = a.sum(); }", "no method `sum` on `Float4`"),
        ("fn k(a: Float4, y: &mut [Float4]) { y[0] += a; }", "`Float4` has no `+` operator"),
        ("fn k(a: Float4) { a.x = 1.0; }", "cannot assign to the parameter `a`"),
    ] {
        let e = error("", item);
        assert!(e.contains(want), "{item}\n  error: {e}\n  expected to contain: {want}");
    }
}

fn generic_snapshot(name: &str, attr: &str, item: &str) {
    let a: Attr = syn::parse_str(attr).unwrap();
    let got = match super::generic::translate(&a, &syn::parse_str(item).unwrap(), "src/kernels.rs", 1) {
        Ok(t) => t.source,
        Err(e) => panic!("{name}: {e}"),
    };
    check_snapshot(name, item, &got);
}

fn generic_error(attr: &str, item: &str) -> String {
    let a: Attr = match syn::parse_str(attr) {
        Ok(a) => a,
        Err(e) => return e.to_string(),
    };
    match super::generic::translate(&a, &syn::parse_str(item).unwrap(), "src/kernels.rs", 1) {
        Ok(t) => panic!("expected an error, got:\n{}", t.source),
        Err(e) => e.to_string(),
    }
}

#[test]
fn const_generics() {
    generic_snapshot(
        "const_generic",
        "instances = [128, 256], bounds_checks = false",
        r#"
fn block_sum<const N: usize>(x: &[f32], out: &mut [f32]) {
    let tile = shared::<f32, N>();
    let t = thread_idx().x as usize;
    let i = block_idx().x as usize * N + t;
    tile[t] = if i < x.len() { x[i] } else { 0.0 };
    sync_threads();
    for k in 1..N {
        if t == 0 {
            tile[0] += tile[k];
        }
    }
    if t == 0 {
        out[block_idx().x as usize] = tile[0];
    }
}"#,
    );
    generic_snapshot(
        "type_and_const_generic",
        r#"instances = [("f32", 4), ("f64", -2)], bounds_checks = false"#,
        r#"
fn unrolled<T, const K: i32>(x: &mut [T]) {
    let i = thread_idx().x as usize;
    let mut acc: T = 0.0;
    for k in 0..K {
        acc += x[i] * k as T;
    }
    x[i] = acc + K as T;
}"#,
    );
}

#[test]
fn const_generic_instance_errors() {
    let item = "fn k<const N: usize>(x: &mut [f32]) {}";
    for (attr, item, want) in [
        ("instances = [\"f32\"]", item, "`N` is a `usize`: its instance is an integer literal, e.g. `256`"),
        ("instances = [-1]", item, "`-1` does not fit `N`'s type `usize`"),
        ("instances = [300]", "fn k<const N: u8>(x: &mut [f32]) {}", "`300` does not fit `N`'s type `u8`"),
        ("instances = [4u32]", item, "mismatched types: `N` is a `usize`, found `u32`"),
        ("instances = [4, 4]", item, "this instance is listed twice"),
        ("instances = [(\"f32\", 4)]", item, "takes 1 value(s) per instance, found 2"),
        ("instances = [4]", "fn k<T, const N: usize>(x: &mut [T]) {}", "takes 2 value(s) per instance, found 1"),
        ("instances = [(4, 4)]", "fn k<T, const N: usize>(x: &mut [T]) {}", "`T` is a type parameter"),
        ("instances = [4]", "fn k<const N: f32>(x: &mut [f32]) {}", "a const parameter of a kernel is an integer"),
        (
            "instances = [4]",
            "fn k<const N: usize, const M: usize>(x: &mut [f32]) {}",
            "one const parameter of an integer type",
        ),
        (
            "instances = [2]",
            "fn k<const N: usize>(x: &mut [f32]) { let t = shared::<f32, { N - 4 }>(); }",
            "a shared array length",
        ),
    ] {
        let e = generic_error(attr, item);
        assert!(e.contains(want), "{attr} {item}\n  error: {e}\n  expected to contain: {want}");
    }
}

/// A module's device functions and kernels, translated (`#[device]` or `#[kernel]` first).
fn module_source(attr: &str, module: &str) -> syn::Result<String> {
    let m: syn::ItemMod = syn::parse_str(module)?;
    let (mut kernels, mut devices) = (Vec::new(), Vec::new());
    for item in m.content.map(|c| c.1).unwrap_or_default() {
        if let syn::Item::Fn(mut f) = item {
            let device = f.attrs[0].path().is_ident("device");
            f.attrs.clear();
            let func = super::syntax::function(f, device)?;
            if device {
                devices.push(func)
            } else {
                kernels.push(func)
            }
        }
    }
    let attr: Attr = syn::parse_str(attr)?;
    super::translate_module(&attr, &kernels, &devices, "src/gpu.rs", 1).map(|t| t.source)
}

#[test]
fn tuple_values() {
    let module = r#"
mod gpu {
    #[device]
    fn min_max(a: f32, b: f32) -> (f32, f32) {
        if a < b {
            return (a, b);
        }
        (b, a)
    }
    #[device]
    fn split(v: u32) -> (u32, u32) {
        (v / 16, v % 16)
    }
    #[kernel]
    fn k(x: &mut [f32], q: &mut [u32]) {
        let i = thread_idx().x as usize;
        let (lo, hi) = min_max(x[2 * i], x[2 * i + 1]);
        let qr = split(q[i]);
        let (a, b): (u32, f64) = if qr.0 > 2 { (qr.1, 0.5) } else { (qr.0, 1.5) };
        x[2 * i] = lo + b as f32;
        x[2 * i + 1] = hi;
        q[i] = a;
    }
}"#;
    let got = module_source("bounds_checks = false", module).unwrap();
    check_snapshot("tuple_values", module, &got);
}

#[test]
fn nested_tuples() {
    let module = r#"
mod gpu {
    #[device]
    fn ordered(a: f32, b: f32) -> ((f32, f32), u32) {
        if a < b {
            return ((a, b), 0);
        }
        ((b, a), 1)
    }
    #[device]
    fn squared(v: Half2, s: f32) -> (Half2, (f32, bool)) {
        (v * v, (s, s > 0.0))
    }
    #[kernel]
    fn k(x: &mut [f32], h: &mut [Half2], n: &mut [u32]) {
        let i = thread_idx().x as usize;
        let ((lo, hi), swapped) = ordered(x[2 * i], x[2 * i + 1]);
        let t = ordered(hi, lo);
        let mut u: ((f32, f32), u32) = ((t.0.1, t.0.0), t.1 + swapped);
        u.0.1 = u.0.1 + 1.0;
        u.1 += 2;
        let (hh, (s, _)) = squared(h[i], lo);
        let ((mut a, _), (b, c)): ((f32, u32), (f64, f64)) = ((s, 1), (2.0, 0.5));
        ((a, n[i]), _) = ((a + 1.0, u.1), 0);
        h[i] = hh;
        x[2 * i] = a + u.0.1 + (b * c) as f32;
    }
}"#;
    let got = module_source("bounds_checks = false", module).unwrap();
    check_snapshot("nested_tuples", module, &got);
}

#[test]
fn nested_tuple_errors() {
    let k = |body: &str| {
        format!(
            "mod m {{ #[device] fn f(a: f32) -> ((f32, u32), f32) {{ ((a, 1), a) }} #[kernel] fn k(x: &mut [f32]) {{ {body} }} }}"
        )
    };
    for (module, want) in [
        (k("let ((a, b), c) = ((1.0f32, 2.0f32), 3.0f32, 4.0f32);"), "the pattern has 2 elements, the tuple 3"),
        (k("let ((a, b), c) = (x[0], 1.0);"), "a tuple pattern is bound to a tuple"),
        (k("let ((a, b, c), d) = f(x[0]);"), "the pattern `(a, b, c)` has 3 elements, the value is `(f32, u32)`"),
        (k("let ((a, b), c): ((f32, f32), f32) = f(x[0]);"), "expected `((f32, f32), f32)`, found `((f32, u32), f32)`"),
        (k("let t = f(x[0]); x[0] = t.0.2;"), "no field `2` on `(f32, u32)`: its fields are `.0` to `.1`"),
        (k("let t = (x[0], Float2::new(1.0, 2.0)); x[0] = t.1.z;"), "no field `z` on `Float2`"),
        (k("let t = f(x[0]); t.0.0 = 1.0;"), "declare it `let mut t`"),
        (k("let ((a, b), c): (f32, f32) = f(x[0]);"), "expected `(f32, f32)`, found `((f32, u32), f32)`"),
        (k("let (a, b): f32 = f(x[0]);"), "a tuple pattern has a tuple type, found `f32`"),
        (k("let t: ((f32, u32), f32) = ((1.0, 2), 3.0f64);"), "expected `f32`, found `f64`"),
        (
            k("let ((a, b), c) = ((1.0f32, 2u32), 3.0f32); ((a, b), c) = ((x[0], 1), 1.0);"),
            "cannot assign twice to immutable variable `a`",
        ),
        (
            k("let (mut a, mut b) = (1.0f32, 2.0f32); ((a, b), b) = (x[0], 1.0);"),
            "a tuple is assigned a tuple of values",
        ),
        (k("let (a, b) = (x, 1.0);"), "a tuple holds scalars, CUDA vector types and tuples, found `&mut [f32]`"),
    ] {
        let e = match module_source("", &module) {
            Ok(s) => panic!("expected an error for {module}, got:\n{s}"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want), "{module}\n  error: {e}\n  expected to contain: {want}");
    }
}

#[test]
fn tuple_value_errors() {
    for (module, want) in [
        (
            "mod m { #[device] fn f(a: f32) -> (f32, u32) { (a, a) } #[kernel] fn k(x: &mut [f32]) { } }",
            "expected `u32`, found `f32`",
        ),
        (
            "mod m { #[device] fn f(a: f32) -> (f32, f32) { (a, a) } #[kernel] fn k(x: &mut [f32]) { let (p, q, r) = f(x[0]); } }",
            "the pattern `(p, q, r)` has 3 elements, the value is `(f32, f32)`",
        ),
        (
            "mod m { #[device] fn f(a: f32) -> (f32, f32) { (a, a) } #[kernel] fn k(x: &mut [f32]) { let p = f(x[0]); x[0] = p.2; } }",
            "no field `2` on `(f32, f32)`",
        ),
        (
            "mod m { #[kernel] fn k(x: &mut [f32]) { let (a, b) = x[0]; } }",
            "a tuple pattern is bound to a tuple",
        ),
        (
            "mod m { #[device] fn f(a: f32) -> (f32, String) { (a, a) } #[kernel] fn k(x: &mut [f32]) { } }",
            "a tuple of these (`(f32, u32)`, `((f32, u32), Float4)`)",
        ),
    ] {
        let e = match module_source("", module) {
            Ok(s) => panic!("expected an error for {module}, got:\n{s}"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want), "{module}\n  error: {e}\n  expected to contain: {want}");
    }
}

#[test]
fn instances_on_a_kernels_module_are_an_error() {
    let site = crate::expand::CallSite { file: "src/gpu.rs".into(), line: 1, dir: None };
    let out = super::expand_module(
        quote::quote!(instances = ["f32"]),
        quote::quote!(
            mod gpu {
                #[kernel]
                fn k(x: &mut [f32]) {}
            }
        ),
        site,
    )
    .to_string();
    assert!(out.contains("`instances` goes on a generic kernel of its own"), "{out}");
}

/// A `#[device]` function given one slice twice where it may write one of them is refused (the
/// call Rust's borrow rules refuse); two shared borrows of one slice are fine. Device functions
/// carry no `__restrict__` (issue 33: `f(y, y)` aliased two restrict pointers).
#[test]
fn device_calls_do_not_alias_a_written_slice() {
    let module = |call: &str| {
        format!(
            r#"
mod gpu {{
    #[device]
    fn axpy(a: f32, x: &[f32], y: &mut [f32]) {{
        let i = thread_idx().x as usize;
        y[i] = a * x[i] + y[i];
    }}
    #[device]
    fn dot(x: &[f32], y: &[f32]) -> f32 {{
        x[0] * y[0]
    }}
    #[kernel]
    fn k(x: &[f32], y: &mut [f32]) {{
        {call}
    }}
}}"#
        )
    };
    for checks in ["", "bounds_checks = false"] {
        let e = module_source(checks, &module("axpy(2.0, y, y);")).unwrap_err().to_string();
        assert!(e.contains("`y` is passed to `axpy` twice") && e.contains("separate slices"), "{e}");
        let src = module_source(checks, &module("let d = dot(x, x); y[0] = d; axpy(1.0, x, y);")).unwrap();
        let device_sigs: Vec<&str> = src
            .lines()
            .filter(|l| l.contains("__device__ __forceinline__") && (l.contains(" axpy(") || l.contains(" dot(")))
            .collect();
        assert_eq!(device_sigs.len(), 2, "{src}");
        assert!(device_sigs.iter().all(|l| !l.contains("__restrict__")), "{device_sigs:?}");
        assert!(src.lines().any(|l| l.contains("__global__ void k(") && l.contains("__restrict__")), "{src}");
    }
}
