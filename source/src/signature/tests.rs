//! Tests of the signature reader's include sites and header parsing.
use super::*;

#[test]
fn include_sites_carry_the_enclosing_namespaces_and_linkage() {
    let src = "#include \"top.cuh\"\nnamespace ops {\nnamespace inner {\n#include \"a.cuh\"\n}\n#include \"b.cuh\"\n\
               extern \"C\" {\n#include \"c.cuh\"\n}\n}\nstruct S {\n#include \"members.h\"\n};\n#if 0\n#include \"no.cuh\"\n#endif\n";
    let p = parse(src).unwrap();
    let got: Vec<(&str, String, Option<bool>, bool)> =
        p.include_sites.iter().map(|s| (s.include.as_str(), s.namespaces.join("::"), s.linkage, s.nested)).collect();
    assert_eq!(
        got,
        [
            ("\"top.cuh\"", String::new(), None, false),
            ("\"a.cuh\"", "ops::inner".into(), None, false),
            ("\"b.cuh\"", "ops".into(), None, false),
            ("\"c.cuh\"", "ops".into(), Some(true), false),
            ("\"members.h\"", String::new(), None, true),
        ]
    );
    assert_eq!(p.includes.len(), p.include_sites.len());
}

#[test]
fn a_header_read_at_its_site_is_in_the_sites_namespaces() {
    let site =
        IncludeSite { include: "\"k.cuh\"".into(), namespaces: vec!["ops".into()], linkage: None, nested: false };
    let h = "#pragma once\n__device__ float bias;\nnamespace detail { __constant__ int lut[4]; }\n\
             __global__ void k(float* x) {}\n#include \"more.cuh\"\n";
    let p = parse_in(h, &[], &[], &site).unwrap();
    assert_eq!(p.kernels[0].qualified_name(), "ops::k");
    let globals: Vec<String> = p.globals.iter().map(GlobalVar::qualified_name).collect();
    assert_eq!(globals, ["ops::bias", "ops::detail::lut"]);
    assert_eq!(p.include_sites[0].namespaces, ["ops"]);
    let c = IncludeSite { linkage: Some(true), ..site.clone() };
    assert!(parse_in(h, &[], &[], &c).unwrap().kernels[0].extern_c);
    let nested = IncludeSite { nested: true, ..site.clone() };
    let p = parse_in(h, &[], &[], &nested).unwrap();
    assert!(p.kernels.is_empty() && p.globals.is_empty());
}

#[test]
fn a_parenthesised_kernel_name_is_the_name() {
    let p = parse("__global__ void (wrapped)(float* x, int n) {}").unwrap();
    assert_eq!((p.kernels[0].name.as_str(), p.kernels[0].params.len()), ("wrapped", 2));
}

#[test]
fn alternative_definitions_under_cuda_arch_are_one_template() {
    let src = "template <typename T>\n#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)\n\
               __global__ void __cluster_dims__(2,1,1) k(T* p) { p[0] = T(1); }\n#else\n\
               __global__ void k(T* p) { }\n#endif\ntemplate __global__ void k<float>(float*);\n\
               extern \"C\"\n#ifdef __X__\n__global__ void c(int* p) {}\n#else\n__global__ void c(int* p) {}\n#endif\n";
    let p = parse(src).unwrap();
    let templates: Vec<&str> = p.templates.iter().map(|k| k.name.as_str()).collect();
    let kernels: Vec<(&str, bool)> = p.kernels.iter().map(|k| (k.name.as_str(), k.extern_c)).collect();
    assert_eq!((templates, kernels, p.overloaded.len()), (vec!["k"], vec![("c", true)], 0));
}

#[test]
fn overloaded_templates_are_listed_apart_from_overloaded_kernels() {
    let src = "namespace lib { template <class T> __global__ void init(T* p, int n) {}\n\
               template <class T> __global__ void init(T* p) {} }\n\
               template <class T> __global__ void one(T* p);\ntemplate <class T> __global__ void one(T* q) {}\n\
               __global__ void s(float* x) {}\n__global__ void s(int* x) {}\n";
    let p = parse(src).unwrap();
    assert_eq!(p.overloaded_templates, ["lib::init"]);
    assert_eq!(p.overloaded, ["s"]);
    let templates: Vec<String> = p.templates.iter().map(Kernel::qualified_name).collect();
    assert_eq!((templates, p.kernels.len()), (vec!["one".to_string()], 0));
}

#[test]
fn explicit_instantiations_are_recorded_with_their_arguments() {
    let src = "template <class T, int N> __global__ void k(T* p) {}\n\
               template __global__ void k<float, 4>(float*);\n\
               namespace ns { template <class T> __global__ void m(T* p) {}\n\
               template __global__ void m<Vec<int, 2> >(Vec<int, 2>*); }\n\
               template __global__ void ns::m<unsigned   char>(unsigned char*);\n\
               extern template __global__ void k<int, 1>(int*);\n\
               template <> __global__ void k<char, 2>(char* p) {}\n\
               template __global__ void k<double, 2>(double*);\n";
    let p = parse(src).unwrap();
    let got: Vec<(String, usize)> = p.instantiations.iter().map(|i| (i.qualified(), i.line)).collect();
    let want = [("k<float, 4>", 2), ("ns::m<Vec<int, 2>>", 4), ("ns::m<unsigned char>", 5), ("k<double, 2>", 8)];
    assert_eq!(got, want.map(|(t, l)| (t.to_string(), l)));
}

/// `template __global__ void k(float*);` (and `k<>`): the arguments are deduced from the
/// parameter list, so the instantiation is recorded by name with its parameters.
#[test]
fn deduced_explicit_instantiations_are_recorded_with_their_parameters() {
    let src = "template <class T> __global__ void k(const T* x, T* y, int n) {}\n\
               template __global__ void k(const float*, float* __restrict__, int);\n\
               namespace ns { template <class T> __global__ void m(T v) {}\n\
               template __global__ void m<>(double); }\n\
               template __global__ void __launch_bounds__(128) ns::m(unsigned  char);\n\
               extern template __global__ void k(const int*, int*, int);\n\
               template <> __global__ void k(const char* x, char* y, int n) {}\n";
    let p = parse(src).unwrap();
    let got: Vec<(String, usize)> = p.instantiations.iter().map(|i| (i.qualified(), i.line)).collect();
    let want = [("k", 2), ("ns::m<>", 4), ("ns::m", 5)];
    assert_eq!(got, want.map(|(t, l)| (t.to_string(), l)));
    let shapes: Vec<(&str, usize, bool)> =
        p.instantiations[0].params.iter().map(|q| (q.base.as_str(), q.pointer_depth, q.pointee_const)).collect();
    assert_eq!(shapes, [("float", 1, true), ("float", 1, false), ("int", 0, false)]);
    assert_eq!(p.instantiations[2].params[0].base, "unsigned char");
    assert_eq!((p.templates.len(), p.kernels.len()), (2, 0), "an instantiation declares no kernel");
}
