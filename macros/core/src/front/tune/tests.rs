use super::resolve::Op;
use super::*;
use crate::signature;

fn spec(tokens: proc_macro2::TokenStream) -> syn::Result<Spec> {
    use syn::parse::Parser;
    let parser = |input: ParseStream| {
        let key: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        Spec::parse(&key, input)
    };
    parser.parse2(tokens)
}

const SRC: &str = r#"
    template <int BLOCK, int ITEMS>
    __global__ void scale(const float* x, float* y, float a, size_t n) {}
"#;

fn resolve_src(src: &str, s: &Spec) -> syn::Result<(Plan, Vec<crate::front::ir::Instance>)> {
    let parsed = signature::parse(src).unwrap();
    let mut instances = Vec::new();
    let plan = resolve(s, &parsed, &mut instances, |text, _, _| {
        let (name, args) = text.split_once('<').unwrap();
        let args: Vec<String> = args.trim_end_matches('>').split(", ").map(str::to_string).collect();
        Ok((0, args, format!("{name}<{}>", text.split_once('<').unwrap().1.trim_end_matches('>'))))
    })?;
    Ok((plan, instances))
}

#[test]
fn every_combination_is_an_instance_in_template_order() {
    let s = spec(quote::quote!(tune = {
        params = ["ITEMS: 1, 2", "BLOCK: 128, 256, 512"],
        block = "BLOCK",
        grid = "cdiv(n, BLOCK * ITEMS)",
        key = "n",
    }))
    .unwrap();
    let (plan, inst) = resolve_src(SRC, &s).unwrap();
    assert_eq!(plan.variants.len(), 6);
    assert_eq!(plan.variants[0].label, "ITEMS=1 BLOCK=128");
    assert_eq!(plan.variants[1].label, "ITEMS=1 BLOCK=256");
    assert_eq!(plan.variants[1].values, vec![1, 256]);
    assert_eq!(inst[1].expr, "scale<256, 1>");
    assert_eq!(plan.scalars, vec![("n".to_string(), 3)]);
    assert_eq!(plan.key, vec![0]);
    assert_eq!(plan.grid, vec![vec![Op::Scalar(0), Op::Param(1), Op::Param(0), Op::Binary("*"), Op::Binary("cdiv")]]);
    assert!(!s.exact);
}

#[test]
fn formulas_parse_or_say_what_is_allowed() {
    let lit = |s: &str| LitStr::new(s, proc_macro2::Span::call_site());
    assert_eq!(parse_formulas(&lit("(cdiv(n, 32), m, 1)"), true).unwrap().len(), 3);
    assert_eq!(
        parse_formulas(&lit("min(n, 4) % 3"), false).unwrap(),
        vec![Formula::Binary(
            "%",
            Box::new(Formula::Binary("min", Box::new(Formula::Name("n".into())), Box::new(Formula::Const(4)))),
            Box::new(Formula::Const(3))
        )]
    );
    for bad in ["n << 2", "sqrt(n)", "n + 1.5", "(a, b, c, d)", "x.len()", "n +"] {
        assert!(parse_formulas(&lit(bad), true).is_err(), "{bad}");
    }
}

#[test]
fn bad_options_are_errors() {
    let err = |t: proc_macro2::TokenStream| spec(t).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err(quote::quote!(tune = { params = [], block = "B", grid = "1" })).contains("`params` is empty"));
    assert!(err(quote::quote!(tune = { params = ["B:"], block = "B", grid = "1" })).contains("has no values"));
    assert!(err(quote::quote!(tune = { params = ["B: 1, 1"], block = "B", grid = "1" })).contains("listed twice"));
    assert!(err(quote::quote!(tune = { params = ["B 1"], block = "B", grid = "1" })).contains("name and values"));
    assert!(err(quote::quote!(tune = { params = ["B: 1"], grid = "1" })).contains("needs `block`"));
    assert!(err(quote::quote!(tune = { params = ["B: 1"], block = "B", grid = "1", bucket = "log" }))
        .contains("unknown bucket"));
    assert!(err(quote::quote!(tune = { params = ["B: 1"], block = "B", grid = "1", colour = "1" }))
        .contains("unknown `tune` option"));
}

#[test]
fn names_are_checked_against_the_template() {
    let check = |t: proc_macro2::TokenStream| {
        resolve_src(SRC, &spec(t).unwrap()).err().map(|e| e.to_string()).unwrap_or_default()
    };
    let e = check(quote::quote!(tune = { params = ["BLOCK: 1", "ITEMS: 1", "TILE: 2"], block = "BLOCK", grid = "n" }));
    assert!(e.contains("`TILE` is not a template parameter of `scale`"), "{e}");
    let e = check(quote::quote!(tune = { params = ["BLOCK: 1"], block = "BLOCK", grid = "n" }));
    assert!(e.contains("template parameter `ITEMS` of `scale` is not in `params`"), "{e}");
    let e = check(quote::quote!(tune = { params = ["BLOCK: 1", "ITEMS: 1"], block = "BLOCK", grid = "n", key = "m" }));
    assert!(e.contains("key `m` names no parameter of `scale`"), "{e}");
    let e =
        check(quote::quote!(tune = { params = ["BLOCK: 1", "ITEMS: 1"], block = "BLOCK", grid = "cdiv(len, BLOCK)" }));
    assert!(e.contains("`len` in `cdiv(len, BLOCK)` is neither"), "{e}");
}

#[test]
fn a_variant_listed_in_instances_is_shared_not_duplicated() {
    let s =
        spec(quote::quote!(tune = { params = ["BLOCK: 128, 256", "ITEMS: 1"], block = "BLOCK", grid = "n" })).unwrap();
    let parsed = signature::parse(SRC).unwrap();
    let listed = crate::front::ir::Instance {
        lit: LitStr::new("scale<256, 1>", proc_macro2::Span::call_site()),
        template: 0,
        args: vec!["256".into(), "1".into()],
        expr: "scale<256, 1>".into(),
    };
    let mut instances = vec![listed];
    let plan = resolve(&s, &parsed, &mut instances, |text, _, _| {
        let args = text.trim_start_matches("scale<").trim_end_matches('>');
        Ok((0, args.split(", ").map(str::to_string).collect(), text.to_string()))
    })
    .unwrap();
    assert_eq!(instances.len(), 2);
    assert_eq!(plan.variants[0].instance, 1, "scale<128, 1> is new");
    assert_eq!(plan.variants[1].instance, 0, "scale<256, 1> was listed");
}
