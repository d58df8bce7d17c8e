//! The Rust module each kernel and template generates, and which templates generate none.
//!
//! A kernel's module is named after the kernel (`saxpy`). Where several kernels that generate
//! modules share a name (`a::kernel` and `b::kernel`, a library's same-named templates both
//! instantiated), the one with the strongest claim keeps it and every other is named by its
//! namespace path (`b_kernel`); of several with the same claim, each takes its path (`a_kernel`,
//! `b_kernel`; one at global scope keeps `kernel`, its path). The claims, strongest first: a
//! non-template kernel or a template listed in `instances` (or `tune`d); a template only the
//! source's own explicit instantiations use; a template nothing instantiates, which generates a
//! module only when no other kernel has its name. `rename = { "a::kernel" => first }` names a
//! kernel outright; it then claims no other name.

use crate::front::input::suggestion;
use crate::front::ir::rust_name;
use crate::signature::{Kernel, Parsed};
use proc_macro2::Span;
use std::collections::HashMap;
use syn::ext::IdentExt;
use syn::{Ident, LitStr};

/// How strongly a kernel wants its Rust module, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Claim {
    /// A template nothing instantiates: a module only where no other kernel takes the name.
    Unused,
    /// A template only the source's own explicit instantiations use: it yields its name to a
    /// stronger claim, and its instances get no launcher when its namespace path is taken too.
    Source,
    /// A non-template kernel, or a template listed in `instances` (or `tune`d).
    Listed,
}

/// The outcome: which templates generate a module, and the names that are not the kernel's own.
#[derive(Debug, Default)]
pub struct Naming {
    /// Per template of `Parsed::templates`: whether it generates a module.
    pub keep: Vec<bool>,
    /// The Rust module names that differ from the kernel's name, by qualified C++ name.
    pub names: HashMap<String, String>,
}

/// One kernel or template that may generate a module.
struct Entry<'a> {
    kernel: &'a Kernel,
    claim: Claim,
    template: Option<usize>,
    /// `rename`'s name for it (without `r#`), and the identifier as written.
    renamed: Option<(String, &'a Ident)>,
    /// Whether the name proposed is its namespace path because another has its name.
    by_path: bool,
}

/// Names the modules of `parsed`'s kernels (all [`Claim::Listed`]) and templates (`claims`, one
/// per template) as the module docs describe, applying `rename`. Errors: a `rename` naming no
/// kernel (at its literal) or giving a name another module has (at the name), and two kernels
/// of the strongest claim left with one name after the fallback to namespace paths (at `span`,
/// the source).
pub fn plan(parsed: &Parsed, claims: &[Claim], rename: &[(LitStr, Ident)], span: Span) -> syn::Result<Naming> {
    let mut entries: Vec<Entry> = parsed
        .kernels
        .iter()
        .map(|k| (k, Claim::Listed, None))
        .chain(parsed.templates.iter().enumerate().map(|(ti, t)| (t, claims[ti], Some(ti))))
        .map(|(kernel, claim, template)| Entry { kernel, claim, template, renamed: None, by_path: false })
        .collect();
    for (lit, ident) in rename {
        let at = find(&entries, parsed, &lit.value()).map_err(|m| syn::Error::new(lit.span(), m))?;
        entries[at].renamed = Some((ident.unraw().to_string(), ident));
    }
    let proposals = propose(&mut entries);
    // Renamed first, then by claim, strongest first; in source order within each.
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| (entries[i].renamed.is_none(), std::cmp::Reverse(entries[i].claim)));
    let mut naming = Naming { keep: vec![false; parsed.templates.len()], names: HashMap::new() };
    let mut taken: HashMap<String, usize> = HashMap::new();
    for i in order {
        let e = &entries[i];
        let Some(name) = e.renamed.as_ref().map(|r| r.0.clone()).or_else(|| proposals[i].clone()) else { continue };
        if e.renamed.is_none() {
            rust_name(&name).map_err(|_| {
                let q = e.kernel.qualified_name();
                syn::Error::new(
                    span,
                    format!(
                        "a kernel named `{name}` cannot become a Rust module: rename it, e.g. `rename = {{ \"{q}\" => {}_kernel }}`",
                        name.to_lowercase()
                    ),
                )
            })?;
        }
        if let Some(&holder) = taken.get(&name) {
            let h = &entries[holder];
            if e.claim == Claim::Unused && e.renamed.is_none() {
                continue;
            }
            if let Some((_, ident)) = e.renamed.as_ref().filter(|_| h.renamed.is_some()) {
                return Err(syn::Error::new(
                    ident.span(),
                    format!(
                        "`rename` gives `{}` and `{}` the same name `{name}`: give each its own",
                        h.kernel.qualified_name(),
                        e.kernel.qualified_name()
                    ),
                ));
            }
            if let Some((_, ident)) = &h.renamed {
                return Err(syn::Error::new(
                    ident.span(),
                    format!(
                        "`rename` names `{}` `{name}`, but {} generates a Rust module named `{name}` too: pick another name",
                        h.kernel.qualified_name(),
                        describe(e)
                    ),
                ));
            }
            if e.claim == Claim::Source {
                continue; // yields, its instances with it (the compiler still builds them)
            }
            // The fix renames the one named by its path, if one is.
            let fix = if h.by_path && !e.by_path { h } else { e };
            return Err(syn::Error::new(
                span,
                format!(
                    "{} and {} would both generate a Rust module named `{name}`: name one with `rename = {{ \"{}\" => another_name }}`",
                    describe(h),
                    describe(e),
                    fix.kernel.qualified_name()
                ),
            ));
        }
        taken.insert(name.clone(), i);
        if let Some(ti) = e.template {
            naming.keep[ti] = true;
        }
        if name != e.kernel.name {
            naming.names.insert(e.kernel.qualified_name(), name);
        }
    }
    Ok(naming)
}

/// How messages name entry `e`: `kernel `a::kernel``, with why it has its path's name.
fn describe(e: &Entry) -> String {
    let what = if e.template.is_some() { "template kernel" } else { "kernel" };
    if e.by_path {
        format!(
            "{what} `{}` (named by its namespace path, as another kernel is named `{}` too)",
            e.kernel.qualified_name(),
            e.kernel.name
        )
    } else {
        format!("{what} `{}`", e.kernel.qualified_name())
    }
}

/// The name each entry not renamed proposes (`None`: no module): its own, unless others of its
/// name claim a module too; then the strongest claim keeps it if it is alone, and the rest take
/// their namespace paths. Templates nothing instantiates propose a name only where nothing else
/// has it.
fn propose(entries: &mut [Entry]) -> Vec<Option<String>> {
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, e) in entries.iter().enumerate().filter(|(_, e)| e.renamed.is_none()) {
        match groups.iter_mut().find(|(n, _)| *n == e.kernel.name) {
            Some((_, members)) => members.push(i),
            None => groups.push((e.kernel.name.as_str(), vec![i])),
        }
    }
    let groups: Vec<Vec<usize>> = groups.into_iter().map(|(_, m)| m).collect();
    let mut out = vec![None; entries.len()];
    for members in groups {
        let best = members.iter().map(|&i| entries[i].claim).max().unwrap_or(Claim::Unused);
        if best == Claim::Unused {
            if let [one] = members.as_slice() {
                out[*one] = Some(entries[*one].kernel.name.clone());
            }
            continue;
        }
        let top: Vec<usize> = members.iter().copied().filter(|&i| entries[i].claim == best).collect();
        for i in members {
            if entries[i].claim == Claim::Unused {
                continue;
            }
            let k = entries[i].kernel;
            out[i] = Some(if top == [i] {
                k.name.clone()
            } else {
                entries[i].by_path = true;
                k.namespaces.iter().chain(std::iter::once(&k.name)).cloned().collect::<Vec<_>>().join("_")
            });
        }
    }
    out
}

/// The entry `rename`'s key names: a kernel or template by its qualified name, or by its name
/// alone where one kernel has it.
fn find(entries: &[Entry], parsed: &Parsed, key: &str) -> Result<usize, String> {
    let key = key.trim().trim_start_matches("::");
    if let Some(i) = entries.iter().position(|e| e.kernel.qualified_name() == key) {
        return Ok(i);
    }
    let same: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].kernel.name == key).collect();
    match same.as_slice() {
        [one] => return Ok(*one),
        [first, ..] => {
            let list: Vec<String> = same.iter().map(|&i| format!("`{}`", entries[i].kernel.qualified_name())).collect();
            return Err(format!(
                "`{key}` names kernels in several namespaces ({}): write the one to rename with its namespace, e.g. `\"{}\" => {}`",
                list.join(", "),
                entries[*first].kernel.qualified_name(),
                suggestion(&entries[*first].kernel.qualified_name())
            ));
        }
        [] => {}
    }
    let tail = |o: &String| *o == key || (!key.contains("::") && o.rsplit("::").next() == Some(key));
    if let Some(o) = parsed.overloaded_templates.iter().find(|o| tail(o)) {
        return Err(format!(
            "template kernel `{o}` is overloaded, so it generates no Rust module for `rename` to name: give the overload \
             you launch its own name in the CUDA source"
        ));
    }
    let known: Vec<String> = entries.iter().map(|e| e.kernel.qualified_name()).collect();
    Err(format!(
        "`rename` names `{key}`, but the CUDA source has no kernel of that name{}: write a kernel's C++ name, \
         e.g. `\"ns::kernel\" => ns_kernel`",
        if known.is_empty() { String::new() } else { format!(" (its kernels: {})", known.join(", ")) }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::parse;
    use quote::quote;

    /// The module names of `src`'s kernels and templates (`claims` per template), in order,
    /// `-` for none.
    fn names(src: &str, claims: &[Claim], rename: proc_macro2::TokenStream) -> Result<Vec<String>, String> {
        let parsed = parse(src).unwrap();
        let rename: Vec<(LitStr, Ident)> = if rename.is_empty() {
            Vec::new()
        } else {
            let input: crate::front::input::Input = syn::parse2(quote!("x", rename = { #rename })).unwrap();
            input.rename
        };
        let naming = plan(&parsed, claims, &rename, Span::call_site()).map_err(|e| e.to_string())?;
        let kernels = parsed.kernels.iter().map(|k| (k, true));
        let templates = parsed.templates.iter().enumerate().map(|(ti, t)| (t, naming.keep[ti]));
        Ok(kernels
            .chain(templates)
            .map(|(k, kept)| match kept {
                true => naming.names.get(&k.qualified_name()).cloned().unwrap_or_else(|| k.name.clone()),
                false => "-".into(),
            })
            .collect())
    }

    const TWO: &str = "namespace a { template <class T> __global__ void kernel(T* p) {} }\n\
                       namespace b { template <class T> __global__ void kernel(T* p) {} }\n";

    #[test]
    fn unambiguous_names_are_kept_and_same_named_claims_take_their_paths() {
        use Claim::*;
        assert_eq!(names(TWO, &[Unused, Unused], quote!()).unwrap(), ["-", "-"]);
        assert_eq!(names(TWO, &[Unused, Listed], quote!()).unwrap(), ["-", "kernel"]);
        assert_eq!(names(TWO, &[Listed, Listed], quote!()).unwrap(), ["a_kernel", "b_kernel"]);
        assert_eq!(names(TWO, &[Source, Source], quote!()).unwrap(), ["a_kernel", "b_kernel"]);
        assert_eq!(names(TWO, &[Source, Listed], quote!()).unwrap(), ["a_kernel", "kernel"]);
        // A kernel at global scope is named by its path too: its own name.
        let src =
            format!("{TWO}__global__ void kernel(float* x) {{}}\nnamespace c {{ __global__ void k(int* x) {{}} }}");
        assert_eq!(names(&src, &[Listed, Unused], quote!()).unwrap(), ["kernel", "k", "a_kernel", "-"]);
        assert_eq!(names(&src, &[Source, Source], quote!()).unwrap(), ["kernel", "k", "a_kernel", "b_kernel"]);
        // Nested namespaces join with `_`; two non-template kernels are named the same way.
        let src = "namespace x { namespace y { __global__ void k(float* p) {} } }\nnamespace z { __global__ void k(int* p) {} }";
        assert_eq!(names(src, &[], quote!()).unwrap(), ["x_y_k", "z_k"]);
    }

    #[test]
    fn rename_names_a_kernel_outright() {
        use Claim::*;
        let got = names(TWO, &[Listed, Listed], quote!("a::kernel" => first)).unwrap();
        assert_eq!(got, ["first", "kernel"], "the other keeps the name");
        let got = names(TWO, &[Unused, Listed], quote!("a::kernel" => first, "b::kernel" => r#move)).unwrap();
        assert_eq!(got, ["first", "move"], "a renamed template generates its module");
        let err = names(TWO, &[Listed, Listed], quote!("kernel" => k)).unwrap_err();
        assert!(err.contains("names kernels in several namespaces (`a::kernel`, `b::kernel`)"), "{err}");
        let err = names(TWO, &[Listed, Listed], quote!("c::kernel" => k)).unwrap_err();
        assert!(err.contains("no kernel of that name (its kernels: a::kernel, b::kernel)"), "{err}");
        let err = names(TWO, &[Listed, Listed], quote!("a::kernel" => kernel)).unwrap_err();
        assert!(err.contains("`rename` names `a::kernel` `kernel`, but template kernel `b::kernel`"), "{err}");
        let err = names(TWO, &[Listed, Listed], quote!("a::kernel" => k, "b::kernel" => k)).unwrap_err();
        assert!(err.contains("gives `a::kernel` and `b::kernel` the same name `k`"), "{err}");
    }

    #[test]
    fn a_path_taken_by_another_module_is_refused_or_yielded() {
        use Claim::*;
        let src = format!("{TWO}__global__ void a_kernel(float* x) {{}}");
        let err = names(&src, &[Listed, Listed], quote!()).unwrap_err();
        assert!(
            err.contains("kernel `a_kernel` and template kernel `a::kernel` (named by its namespace path"),
            "{err}"
        );
        assert!(err.contains("`rename = { \"a::kernel\" => another_name }`"), "{err}");
        // Only the source instantiates it: it yields, as it yields its name.
        assert_eq!(names(&src, &[Source, Listed], quote!()).unwrap(), ["a_kernel", "-", "kernel"]);
        assert_eq!(
            names(&src, &[Listed, Listed], quote!("a::kernel" => first)).unwrap(),
            ["a_kernel", "first", "kernel"]
        );
    }
}
