//! Template arguments deduced from an explicit instantiation's parameter list:
//! `template __global__ void k(const float*, float*, int);` (or `k<>`, or `k<float>` of a
//! template of more parameters) instantiates `k<float>` of `template <class T> __global__ void
//! k(const T* x, T* y, int n)`. The common cases are deduced as C++ deduces them: a type
//! parameter that is a parameter's whole base type (`T`, `T*`, `const T*`, `T&`, `T**`) takes
//! the instantiation's base type there; a parameter that no function parameter mentions takes
//! its default. Anything else (a non-type parameter, a type only inside another, `Vec<T>`, a
//! default that could be deduced or depends on other parameters, a pack, two different
//! deductions) is an error asking for the arguments to be written out, never a guess.

use crate::front::split_instance;
use crate::front::types;
use crate::signature::{Instantiation, Kernel, Param, Parsed, TemplateKind, TemplateParam};

/// The instance `inst` makes, every template argument written out and qualified as
/// [`Instantiation::qualified`] (`ns::k<float, 4>`). `Ok(None)`: no template of that name to
/// deduce against (an overloaded one, one the compiler alone knows), left to the compiler as
/// the source's other instantiations that no launcher can take are. `Err`: why the arguments
/// cannot be deduced, and the fix (`at`: where the instantiation is written).
pub fn complete(inst: &Instantiation, parsed: &Parsed, at: &str) -> Result<Option<String>, String> {
    let qualified = inst.qualified();
    let (name, written) = match split_instance(&qualified) {
        Some((name, args)) => (name, args),
        None => (qualified.trim_start_matches("::").to_string(), Vec::new()),
    };
    let Some(decl) = parsed.templates.iter().find(|t| t.qualified_name() == name) else {
        // Written out (or not ours to deduce): resolved as an `instances` entry would be.
        return Ok(qualified.contains('<').then_some(qualified));
    };
    let tparams = decl.template.as_deref().unwrap_or_default();
    if written.len() >= tparams.len() {
        return Ok(Some(qualified));
    }
    let fail = |why: String, known: &[Option<String>]| message(inst, at, decl, tparams, known, &why);
    let mut known: Vec<Option<String>> = tparams.iter().map(|_| None).collect();
    for (slot, arg) in known.iter_mut().zip(&written) {
        *slot = Some(arg.clone());
    }
    if let Some(pack) = tparams.iter().find_map(|p| match &p.kind {
        TemplateKind::Unsupported(text) => Some(text.replace(" . . . ", "... ")),
        _ => None,
    }) {
        let params: Vec<String> = inst.params.iter().map(|p| tidy(&p.text)).collect();
        return Err(format!(
            "cannot deduce the template arguments of the explicit instantiation `template __global__ void {}({})` \
             ({at}) of `{}`: `{pack}` is a parameter pack or template template parameter, which no launcher takes; \
             write a `__global__` template with plain type and integer parameters that calls it, and instantiate that",
            inst.text,
            params.join(", "),
            decl.qualified_name()
        ));
    }
    if decl.params.len() != inst.params.len() {
        return Err(fail(
            format!(
                "it gives {} parameters, and `{}` takes {}",
                inst.params.len(),
                decl.qualified_name(),
                decl.params.len()
            ),
            &known,
        ));
    }
    let deduced = deduce(decl, tparams, written.len(), &inst.params).map_err(|why| fail(why, &known))?;
    for (ti, tp) in tparams.iter().enumerate().skip(written.len()) {
        if let Some(arg) = &deduced[ti] {
            known[ti] = Some(arg.clone());
            continue;
        }
        let mentioned = decl.params.iter().find(|p| crate::front::words(&p.base).any(|w| w == tp.name));
        let why = match (&tp.default, mentioned, &tp.kind) {
            (Some(d), None, _) if !tparams.iter().any(|o| crate::front::words(d).any(|w| w == o.name)) => {
                known[ti] = Some(d.clone());
                continue;
            }
            (Some(d), None, _) => format!("its default `{d}` depends on the other template parameters"),
            (_, Some(p), _) => format!("it is only deduced from inside `{}`, which is not read here", tidy(&p.text)),
            (None, None, TemplateKind::Value(_)) => {
                "a non-type template parameter is not deduced from a kernel's parameter list".to_string()
            }
            (None, None, _) => "no parameter of the kernel names it".to_string(),
        };
        return Err(fail(format!("template parameter `{}` cannot be deduced: {why}", tp.name), &known));
    }
    let args: Vec<String> = known.into_iter().flatten().collect();
    Ok(Some(format!("{name}<{}>", args.join(", "))))
}

/// The type arguments read off the parameters whose base type is a type parameter, by
/// template parameter (`None`: not deduced there); the first `written` are given, not deduced.
fn deduce(
    decl: &Kernel,
    tparams: &[TemplateParam],
    written: usize,
    given: &[Param],
) -> Result<Vec<Option<String>>, String> {
    let mut out: Vec<Option<(String, &Param)>> = tparams.iter().map(|_| None).collect();
    for (p, a) in decl.params.iter().zip(given) {
        let Some(ti) = tparams.iter().position(|t| t.name == p.base && matches!(t.kind, TemplateKind::Type)) else {
            continue;
        };
        if ti < written {
            continue;
        }
        let same = p.pointer_depth == a.pointer_depth
            && p.reference == a.reference
            && (p.pointer_depth == 0 || p.pointee_const == a.pointee_const);
        if !same || a.base.is_empty() {
            return Err(format!(
                "its parameter `{}` does not have the shape of `{}`, so `{}` is not read from it",
                tidy(&a.text),
                tidy(&p.text),
                p.base
            ));
        }
        match &out[ti] {
            Some((prev, from)) if types::normalise(prev) != types::normalise(&a.base) => {
                return Err(format!(
                    "`{}` would be both `{prev}` (from `{}`) and `{}` (from `{}`)",
                    p.base,
                    tidy(&from.text),
                    a.base,
                    tidy(&a.text)
                ))
            }
            Some(_) => {}
            None => out[ti] = Some((a.base.clone(), a)),
        }
    }
    Ok(out.into_iter().map(|d| d.map(|(t, _)| t)).collect())
}

/// `V < int > p` as one writes it: `V<int> p`.
fn tidy(text: &str) -> String {
    text.replace(" <", "<").replace("< ", "<").replace(" >", ">")
}

/// The error for `inst`: what cannot be deduced, and the instantiation written out as the fix.
fn message(
    inst: &Instantiation,
    at: &str,
    decl: &Kernel,
    tparams: &[TemplateParam],
    known: &[Option<String>],
    why: &str,
) -> String {
    let params: Vec<String> = inst.params.iter().map(|p| tidy(&p.text)).collect();
    let args: Vec<String> =
        tparams.iter().zip(known).map(|(tp, k)| k.clone().unwrap_or_else(|| tp.name.clone())).collect();
    let name = decl.qualified_name();
    format!(
        "cannot deduce the template arguments of the explicit instantiation `template __global__ void {}({})` \
         ({at}) of `{name}`: {why}; write them out, `template __global__ void {name}<{}>({});`, or list the instance in \
         `instances = [\"{name}<...>\"]`",
        inst.text,
        params.join(", "),
        args.join(", "),
        params.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::complete;
    use crate::signature::parse;

    /// What each explicit instantiation of `src` makes: its instance, or the error.
    fn made(src: &str) -> Vec<Result<Option<String>, String>> {
        let parsed = parse(src).unwrap();
        parsed.instantiations.iter().map(|i| complete(i, &parsed, "src/lib.rs:1")).collect()
    }

    #[test]
    fn type_parameters_are_read_off_the_parameter_types() {
        let src = "template <class T> __global__ void k(const T* x, T* y, T a, int n) {}\n\
                   template __global__ void k(const float*, float*, float, int);\n\
                   template __global__ void k<>(const double* __restrict__, double*, double, int);\n\
                   namespace ns { template <class T, class U> __global__ void m(T** p, U& u) {} }\n\
                   template __global__ void ns::m(unsigned int**, long long&);\n\
                   template <class T, int BLOCK = 256, class Acc = float> __global__ void r(const T* x) {}\n\
                   template __global__ void r(const short*);\n\
                   template __global__ void r<char, 64>(const char*);\n\
                   template __global__ void r<int, 32, double>(const int*);\n";
        let want = [
            "k<float>",
            "k<double>",
            "ns::m<unsigned int, long long>",
            "r<short, 256, float>",
            "r<char, 64, float>",
            "r<int, 32, double>",
        ];
        assert_eq!(made(src), want.map(|w| Ok(Some(w.to_string()))));
    }

    #[test]
    fn what_cannot_be_deduced_says_to_write_the_arguments_out() {
        let cases = [
            (
                "template <class T, int N> __global__ void k(T* p) {}\ntemplate __global__ void k(float*);",
                "template parameter `N` cannot be deduced: a non-type template parameter is not deduced",
            ),
            (
                "template <class T, class U> __global__ void k(T* p) {}\ntemplate __global__ void k(float*);",
                "template parameter `U` cannot be deduced: no parameter of the kernel names it",
            ),
            (
                "template <class T> struct V { T v; };\ntemplate <class T> __global__ void k(V<T> p) {}\n\
              template __global__ void k(V<int>);",
                "template parameter `T` cannot be deduced: it is only deduced from inside `V<T> p`",
            ),
            (
                "template <class T> struct V { T v; };\ntemplate <class T = int> __global__ void k(V<T> p) {}\n\
              template __global__ void k(V<int>);",
                "it is only deduced from inside `V<T> p`",
            ),
            (
                "template <class T, class U = T> __global__ void k(T* p) {}\ntemplate __global__ void k(float*);",
                "its default `T` depends on the other template parameters",
            ),
            (
                "template <class T> __global__ void k(T* a, T* b) {}\ntemplate __global__ void k(float*, int*);",
                "`T` would be both `float` (from `float*`) and `int` (from `int*`)",
            ),
            (
                "template <class T> __global__ void k(T* a) {}\ntemplate __global__ void k(const float*);",
                "its parameter `const float*` does not have the shape of `T* a`",
            ),
        ];
        for (src, why) in cases {
            let got = made(src);
            let [Err(e)] = got.as_slice() else { panic!("{src}: {got:?}") };
            assert!(e.contains(why), "{src}: {e}");
            assert!(e.contains("(src/lib.rs:1)") && e.contains("write them out, `template __global__ void k<"), "{e}");
            assert!(e.contains("or list the instance in `instances = [\"k<...>\"]`"), "{e}");
        }
        let got = made(
            "template <class... Ts> __global__ void k(float* p, Ts... ts) {}\ntemplate __global__ void k(float*);",
        );
        let Err(e) = &got[0] else { unreachable!() };
        assert!(
            e.contains("`class... Ts` is a parameter pack or template template parameter, which no launcher takes"),
            "{e}"
        );
        assert!(
            e.contains("write a `__global__` template with plain type and integer parameters that calls it"),
            "{e}"
        );
        let got = made("template <class T, int N> __global__ void k(T* p) {}\ntemplate __global__ void k(float*);");
        let Err(e) = &got[0] else { unreachable!() };
        assert!(e.contains("write them out, `template __global__ void k<float, N>(float*);`"), "{e}");
    }

    #[test]
    fn written_out_or_unknown_instantiations_are_left_as_they_are() {
        let src = "template <class T> __global__ void k(T* p) {}\n\
                   template __global__ void k<float>(float*);\n\
                   template __global__ void other(float*);\n\
                   template __global__ void other<int>(int*);\n";
        assert_eq!(made(src), [Ok(Some("k<float>".into())), Ok(None), Ok(Some("other<int>".into()))]);
    }
}
