use super::*;

fn err(text: &str, role: Role) -> ParamError {
    parse_params(text, role).unwrap_err()
}

#[test]
fn kinds_types_and_spans() {
    let text = "T x, raw const float y , scalar unsigned   int a,ns::Pair p, struct Particle q";
    let ps = parse_params(text, Role::Input).unwrap();
    let names: Vec<_> = ps.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["x", "y", "a", "p", "q"]);
    assert_eq!(ps[0].ty, ParamType::Placeholder("T".into()));
    assert_eq!(ps[0].kind, ParamKind::Array);
    assert_eq!(ps[1].kind, ParamKind::Raw);
    assert_eq!(ps[1].ty, ParamType::Concrete("float".into()));
    assert_eq!(ps[2].kind, ParamKind::Scalar);
    assert_eq!(ps[2].ty.as_str(), "unsigned int");
    assert_eq!(ps[3].ty.as_str(), "ns::Pair");
    assert_eq!(ps[4].ty, ParamType::Concrete("struct Particle".into()));
    assert!(ps.iter().all(|p| p.is_const && p.role == Role::Input));
    assert_eq!(&text[ps[1].span.clone()], "raw const float y");
    assert_eq!(&text[ps[2].ty_span.clone()], "unsigned   int");
    assert_eq!(&text[ps[2].name_span.clone()], "a");
    assert_eq!(&text[ps[3].span.clone()], "ns::Pair p");
}

#[test]
fn empty_list_and_outputs() {
    assert!(parse_params("  ", Role::Input).unwrap().is_empty());
    let ps = parse_params("T z, raw int w", Role::Output).unwrap();
    assert!(ps.iter().all(|p| !p.is_const && p.role == Role::Output));
    assert_eq!(ps[1].kind, ParamKind::Raw);
}

#[test]
fn declaration_errors_have_spans() {
    let text = "T x, , T y";
    let e = err(text, Role::Input);
    assert!(e.message.contains("empty parameter"), "{e}");
    let e = err("T x, T x", Role::Input);
    assert_eq!(e.span, 7..8);
    assert!(e.message.contains("declared twice"));
    let e = err("float* x", Role::Input);
    assert_eq!(e.span, 5..6);
    assert!(e.message.contains("raw T x"));
    let e = err("float", Role::Input);
    assert!(e.message.contains("needs a type and a name"), "{e}");
    let e = err("float i", Role::Input);
    assert!(e.message.contains("reserved"));
    let e = err("float n", Role::Input);
    assert!(e.message.contains("reserved"));
    let e = err("float _ce_x", Role::Input);
    assert!(e.message.contains("reserved"));
    let e = err("float int", Role::Input);
    assert!(e.message.contains("not a valid parameter name"));
    let e = err("float raw x", Role::Input);
    assert!(e.message.contains("must come first"));
    let e = err("vec<float> x", Role::Input);
    assert!(e.message.contains("template"));
    let e = err("float 3x", Role::Input);
    assert!(e.message.contains("not a valid"), "{e}");
}

#[test]
fn output_errors() {
    let e = err("scalar float a", Role::Output);
    assert!(e.message.contains("cannot be a scalar"));
    assert_eq!(e.span, 0..14);
    let e = err("const float a", Role::Output);
    assert!(e.message.contains("cannot be `const`"));
    assert_eq!(e.span, 0..5);
}

#[test]
fn lists_together() {
    let l = ParamLists::parse("T x, scalar T a", "T y").unwrap();
    assert_eq!(l.all().count(), 3);
    assert!(l.has_array());
    assert!(!l.has_raw());
    let e = ParamLists::parse("T x, T y", "T y").unwrap_err();
    assert_eq!(e.source, Source::Outputs);
    assert_eq!(e.error.span, 2..3);
    assert!(e.error.message.contains("both an input and an output"));
    let e = ParamLists::parse("T x x", "T y").unwrap_err();
    assert_eq!(e.source, Source::Inputs);
    assert_eq!(e.error.span, 2..3);
    assert!(e.error.message.contains("after placeholder `T`"), "{e}");
    let e = parse_params("float a b", Role::Input).unwrap_err();
    assert_eq!(e.span, 6..7);
    let e = parse_params("unsigned T b", Role::Input).unwrap_err();
    assert_eq!(e.span, 9..10);
    let l = ParamLists::parse("scalar float a", "raw float y").unwrap();
    assert!(l.has_raw());
    let l = ParamLists::parse("scalar float a", "").unwrap();
    assert!(!l.has_array());
}

#[test]
fn placeholders_in_first_use_order() {
    let l = ParamLists::parse("U a, T b, scalar U c", "V d, T e").unwrap();
    assert_eq!(l.placeholders(), ["U", "T", "V"]);
    assert!(is_placeholder_name("Tin"));
    assert!(!is_placeholder_name("float"));
    assert!(!is_placeholder_name("__half"));
}

#[test]
fn instances_shorthand_and_named() {
    let l = ParamLists::parse("T x, U y", "T z").unwrap();
    let inst = l.instances(&["T=float, U=int", " U = unsigned  long long ,T=double"]).unwrap();
    assert_eq!(inst[0].types(), ["float", "int"]);
    assert_eq!(inst[1].types(), ["double", "unsigned long long"]);
    assert_eq!(inst[1].to_string(), "T=double, U=unsigned long long");
    assert_eq!(inst[0].resolve(&l.inputs[1].ty), "int");
    assert_eq!(inst[0].resolve(&ParamType::Concrete("char".into())), "char");

    let one = ParamLists::parse("T x", "T y").unwrap();
    let inst = one.instances(&["float", "__half", "T=struct Particle"]).unwrap();
    assert_eq!(inst[1].get("T"), Some("__half"));
    assert_eq!(inst[2].get("T"), Some("struct Particle"));
}

#[test]
fn no_placeholders() {
    let l = ParamLists::parse("float x", "float y").unwrap();
    let none: [&str; 0] = [];
    assert_eq!(l.instances(&none).unwrap(), [Instance::default()]);
    let e = l.instances(&["float"]).unwrap_err();
    assert_eq!(e.source, Source::Instance(0));
    assert!(e.error.message.contains("no parameter uses a placeholder"));
}

#[test]
fn instance_errors() {
    let l = ParamLists::parse("T x, U y", "T z").unwrap();
    let none: [&str; 0] = [];
    let e = l.instances(&none).unwrap_err();
    assert_eq!(e.source, Source::Types);
    assert!(e.error.message.contains("`T`, `U` have no instances to build"), "{e}");
    assert!(e.error.message.contains("T=float, U=float"), "{e}");

    let e = l.instances(&["float"]).unwrap_err();
    assert!(e.error.message.contains("name each: `T=float, U=float`"), "{e}");
    let e = l.instances(&["T=float, U=int", "T=float, V=int"]).unwrap_err();
    assert_eq!(e.source, Source::Instance(1));
    assert_eq!(e.error.span, 9..10);
    assert!(e.error.message.contains("unknown placeholder `V`"), "{e}");
    let e = l.instances(&["T=float"]).unwrap_err();
    assert!(e.error.message.contains("no type for placeholder `U`"), "{e}");
    let e = l.instances(&["T=float, T=int"]).unwrap_err();
    assert!(e.error.message.contains("bound twice"), "{e}");
    let e = l.instances(&["T=float, U=int", "U=int,T=float"]).unwrap_err();
    assert!(e.error.message.contains("listed twice"), "{e}");
    let e = l.instances(&["T=float, int"]).unwrap_err();
    assert!(e.error.message.contains("binds no placeholder"), "{e}");
    let e = l.instances(&["T=float*, U=int"]).unwrap_err();
    assert_eq!(e.error.span, 7..8);
    let e = l.instances(&["T=U, U=int"]).unwrap_err();
    assert!(e.error.message.contains("reads as a placeholder"), "{e}");
    let e = l.instances(&["T=, U=int"]).unwrap_err();
    assert!(e.error.message.contains("missing type"), "{e}");
}
