//! The user headers a source includes, read as the compiler reads them: the kernels, templates
//! and globals they *define* join the source's, in the namespaces and linkage block of the
//! `#include` that brings them in.
//!
//! Only the files [`crate::front::includes::scan`] reaches are read (next to the source and in its include
//! directories, never toolkit or system headers), each with the source's `-D` defines and the
//! other headers' macros applied, and only when included from a branch the preprocessor takes
//! (`#include` under `#if 0` adds nothing). A header included at several places is read at the
//! first (its include guard or `#pragma once` makes the later ones empty).

use crate::front::includes::Header;
use crate::signature::{self, GlobalVar, IncludeSite, Kernel, Parsed};
use std::path::Path;

/// Adds what the headers define to `parsed` and records on each header the namespaces of its
/// include site (`Header::namespaces`, for the struct layout probes).
///
/// - A kernel the header only declares is left out (its definition, if any, is in the source or
///   another translation unit); a header definition of a kernel the source declares replaces the
///   declaration; two definitions with different parameters are reported as an overload.
/// - Each kernel and global records the header it came from (`file`: its path relative to the
///   crate root `root` when under it, else its full path), so messages cite `header.cuh:line`.
/// - The headers' type aliases and record names are added where the source has none of the
///   same name.
///
/// A header the reader cannot read, but whose preprocessed text has no `__global__` function
/// definition, adds nothing and is no error: it may be ordinary C++ the reader does not need;
/// the compiler still sees it. One that defines a kernel is an error citing `header.cuh:line`,
/// since its kernels would silently get no launcher.
pub fn read(
    parsed: &mut Parsed,
    headers: &mut [Header],
    defines: &[(String, String)],
    root: Option<&Path>,
) -> Result<(), String> {
    let inner = |written: &str| written.trim_matches(|c| c == '"' || c == '<' || c == '>').trim().to_string();
    let mut active: Vec<IncludeSite> = parsed.include_sites.clone();
    let mut done = vec![false; headers.len()];
    let root = root.map(|r| r.canonicalize().unwrap_or_else(|_| r.to_path_buf()));
    // Headers are listed depth first; a header included by a later one is found on a later pass.
    let mut progress = true;
    while progress {
        progress = false;
        for hi in 0..headers.len() {
            if done[hi] || done.iter().zip(headers.iter()).any(|(d, o)| *d && o.path == headers[hi].path) {
                continue;
            }
            let Some(site) = active.iter().find(|s| inner(&s.include) == headers[hi].include).cloned() else {
                continue;
            };
            done[hi] = true;
            progress = true;
            headers[hi].namespaces = site.namespaces.clone();
            let h = &headers[hi];
            let shown = root.as_ref().and_then(|r| h.path.strip_prefix(r).ok().map(Path::to_path_buf));
            let file = shown.unwrap_or_else(|| h.path.clone()).display().to_string().replace('\\', "/");
            let others: Vec<&str> =
                headers.iter().enumerate().filter(|(j, _)| *j != hi).map(|(_, o)| o.text.as_str()).collect();
            let theirs = match signature::parse_in(&h.text, defines, &others, &site) {
                Ok(theirs) => theirs,
                Err(e) => match defined_kernel_line(&h.text, defines, &others, &e.0) {
                    Some(line) => return Err(unreadable(&file, line, &e.0)),
                    None => continue,
                },
            };
            active.extend(theirs.include_sites.iter().cloned());
            merge(parsed, theirs, &file);
        }
    }
    Ok(())
}

/// The message for a header whose kernel definition the reader cannot read.
fn unreadable(file: &str, line: usize, why: &str) -> String {
    let why = why.strip_prefix(&format!("line {line}: ")).unwrap_or(why);
    format!(
        "{file}:{line}: cannot read this `__global__` function's declaration ({why}), so it would get no \
         launcher: write its name and parameter list plainly (`__global__ void name(float* x, int n)`; \
         macros are fine if they expand to that), or move the kernel out of the headers this source includes"
    )
}

/// When the reader failed on `text` with `why`: the line of a `__global__` function *definition*
/// in the preprocessed text, preferring the one the error names; `None` when the text defines
/// no kernel.
fn defined_kernel_line(text: &str, defines: &[(String, String)], others: &[&str], why: &str) -> Option<usize> {
    let t = crate::lex::lex_after(text, defines, others).tokens;
    let named = why
        .split("line ")
        .skip(1)
        .find_map(|rest| rest.split(|c: char| !c.is_ascii_digit()).next().and_then(|n| n.parse::<usize>().ok()));
    let defined: Vec<usize> = t
        .iter()
        .enumerate()
        .filter(|(_, x)| x.is("__global__"))
        .filter(|(g, _)| t[*g..].iter().find(|x| x.is("{") || x.is(";")).is_some_and(|x| x.is("{")))
        .map(|(_, x)| x.line)
        .collect();
    match named {
        Some(n) if defined.contains(&n) => Some(n),
        _ => defined.first().copied(),
    }
}

/// Merges one header's declarations into the source's (see [`read`]).
fn merge(parsed: &mut Parsed, theirs: Parsed, file: &str) {
    let shape = |k: &Kernel| -> Vec<(String, usize, bool, bool)> {
        k.params.iter().map(|p| (p.base.clone(), p.pointer_depth, p.pointee_const, p.reference)).collect()
    };
    // A header's own overloaded templates are named when an instance asks for one; its own
    // overloaded kernels are left out, as before.
    for o in theirs.overloaded_templates {
        if !parsed.overloaded_templates.contains(&o) {
            parsed.overloaded_templates.push(o);
        }
    }
    let lists = [
        (&mut parsed.kernels, theirs.kernels, &mut parsed.overloaded),
        (&mut parsed.templates, theirs.templates, &mut parsed.overloaded_templates),
    ];
    for (mine, from, overloaded) in lists {
        for mut k in from.into_iter().filter(|k| k.defined) {
            k.file = Some(file.to_string());
            let key = k.qualified_name();
            match mine.iter_mut().find(|o| o.qualified_name() == key) {
                None => mine.push(k),
                Some(o) if shape(o) == shape(&k) => {
                    if !o.defined {
                        *o = k;
                    }
                }
                Some(_) => {
                    if !overloaded.contains(&key) {
                        overloaded.push(key);
                    }
                }
            }
        }
    }
    let (overloaded, overloaded_templates) = (&parsed.overloaded, &parsed.overloaded_templates);
    parsed.kernels.retain(|k| !overloaded.contains(&k.qualified_name()));
    parsed.templates.retain(|k| !overloaded_templates.contains(&k.qualified_name()));
    // The header's explicit instantiations are the translation unit's too.
    parsed.instantiations.extend(theirs.instantiations.into_iter().map(|mut i| {
        i.file.get_or_insert_with(|| file.to_string());
        i
    }));
    for g in theirs.globals {
        if !parsed.globals.iter().any(|o| o.qualified_name() == g.qualified_name()) {
            parsed.globals.push(GlobalVar { file: Some(file.to_string()), ..g });
        }
    }
    for (name, body) in theirs.aliases {
        parsed.aliases.entry(name).or_insert(body);
    }
    parsed.records.extend(theirs.records);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn header(include: &str, text: &str) -> Header {
        Header {
            include: include.into(),
            path: PathBuf::from("/crate/kernels").join(include),
            text: text.into(),
            namespaces: Vec::new(),
        }
    }

    fn read_all(src: &str, headers: &mut [Header], defines: &[(String, String)]) -> Result<Parsed, String> {
        let texts: Vec<String> = headers.iter().map(|h| h.text.clone()).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut parsed = signature::parse_with(src, defines, &texts).unwrap();
        read(&mut parsed, headers, defines, Some(Path::new("/crate")))?;
        Ok(parsed)
    }

    #[test]
    fn kernels_defined_in_active_user_headers_are_read() {
        let mut headers = [
            header(
                "a.cuh",
                "#pragma once\n#include \"b.cuh\"\n#ifdef WIDE\ntypedef double real;\n#else\ntypedef float real;\n#endif\n\
                 \nextern \"C\" __global__ void from_a(real* x) {}\n\
                 extern \"C\" __global__ void declared(real* x);\nextern \"C\" __global__ void elsewhere(real* x);\n\
                 #if 0\nextern \"C\" __global__ void hidden(real* x) {}\n#endif\n#ifdef NEVER\n#include \"c.cuh\"\n#endif\n",
            ),
            header("b.cuh", "#pragma once\nnamespace ns { __global__ void from_b(int n) {} }\n"),
            header("c.cuh", "#pragma once\n__global__ void from_c(int n) {}\n"),
            header("d.cuh", "__global__ void not_included(int n) {}\n"),
        ];
        let src = "#include \"a.cuh\"\nextern \"C\" __global__ void declared(real* y) { }\n";
        let defines = [("WIDE".to_string(), "1".to_string())];
        let parsed = read_all(src, &mut headers, &defines).unwrap();
        let found: Vec<(String, Option<String>, usize, String)> = parsed
            .kernels
            .iter()
            .map(|k| (k.qualified_name(), k.file.clone(), k.line, k.params[0].base.clone()))
            .collect();
        assert_eq!(
            found,
            [
                ("declared".to_string(), None, 2, "real".to_string()),
                ("from_a".to_string(), Some("kernels/a.cuh".to_string()), 9, "real".to_string()),
                ("ns::from_b".to_string(), Some("kernels/b.cuh".to_string()), 2, "int".to_string()),
            ]
        );
        // The header's typedef, as the define picked it.
        assert_eq!(signature::join(&parsed.aliases["real"]), "double");
    }

    #[test]
    fn a_headers_explicit_instantiations_and_overloaded_templates_are_the_sources() {
        let mut headers = [header(
            "t.cuh",
            "template <class T> __global__ void t(T* x) {}\ntemplate __global__ void t<float>(float*);\n\
             template <class T> __global__ void o(T* x) {}\ntemplate <class T> __global__ void o(T* x, int n) {}\n",
        )];
        let src = "namespace ops {\n#include \"t.cuh\"\n}\n__global__ void k(float* y) {}\n";
        let parsed = read_all(src, &mut headers, &[]).unwrap();
        let got: Vec<String> = parsed.instantiations.iter().map(|i| i.qualified()).collect();
        assert_eq!(
            (got, parsed.overloaded_templates.clone()),
            (vec!["ops::t<float>".to_string()], vec!["ops::o".to_string()])
        );
        assert!(parsed.overloaded.is_empty());
    }

    #[test]
    fn a_header_definition_replaces_a_source_declaration_and_overloads_are_reported() {
        let mut headers = [header("a.cuh", "__global__ void k(float* x) {}\n__global__ void o(int n) {}\n")];
        let src = "#include \"a.cuh\"\n__global__ void k(float* y);\n__global__ void o(float n) {}\n";
        let parsed = read_all(src, &mut headers, &[]).unwrap();
        assert_eq!(parsed.kernels.len(), 1);
        assert_eq!(parsed.kernels[0].file.as_deref(), Some("kernels/a.cuh"));
        assert!(parsed.kernels[0].defined);
        assert_eq!(parsed.overloaded, ["o"]);
    }

    #[test]
    fn a_header_included_in_a_namespace_declares_its_kernels_there() {
        let mut headers = [
            header("k.cuh", "#pragma once\nstruct P { float a; };\n__global__ void scale(float* x, P p) {}\n#include \"deeper.cuh\"\n"),
            header("deeper.cuh", "namespace d { __global__ void deep(int n) {} }\n"),
            header("c.cuh", "__global__ void c_linkage(int n) {}\n"),
        ];
        let src = "namespace ops {\n#include \"k.cuh\"\n}\nnamespace a::b { extern \"C\" {\n#include \"c.cuh\"\n} }\n";
        let parsed = read_all(src, &mut headers, &[]).unwrap();
        let found: Vec<(String, bool)> = parsed.kernels.iter().map(|k| (k.qualified_name(), k.extern_c)).collect();
        assert_eq!(
            found,
            [("ops::scale".into(), false), ("ops::d::deep".into(), false), ("a::b::c_linkage".into(), true)]
        );
        // Where the struct layout probes look for `P`.
        assert_eq!(headers[0].namespaces, ["ops"]);
        assert_eq!(headers[1].namespaces, ["ops"]);
        assert_eq!(headers[2].namespaces, ["a", "b"]);
    }

    #[test]
    fn globals_defined_in_headers_join_the_sources_in_the_include_sites_namespace() {
        let mut headers = [header(
            "g.cuh",
            "#pragma once\n__constant__ float taps[8];\n__device__ int counter;\nextern __device__ int declared_only;\n\
             static __device__ float scratch[2][3];\n",
        )];
        let src = "namespace ops {\n#include \"g.cuh\"\n}\n__device__ float own;\n";
        let parsed = read_all(src, &mut headers, &[]).unwrap();
        let found: Vec<(String, Option<&str>, usize, Vec<String>)> =
            parsed.globals.iter().map(|g| (g.qualified_name(), g.file.as_deref(), g.line, g.dims.clone())).collect();
        assert_eq!(
            found,
            [
                ("own".into(), None, 4, vec![]),
                ("ops::taps".into(), Some("kernels/g.cuh"), 2, vec!["8".into()]),
                ("ops::counter".into(), Some("kernels/g.cuh"), 3, vec![]),
                ("ops::scratch".into(), Some("kernels/g.cuh"), 5, vec!["2".into(), "3".into()]),
            ]
        );
    }

    #[test]
    fn an_unreadable_header_is_an_error_only_when_it_defines_a_kernel() {
        // A parameter list the reader cannot split (here not valid C++ either, which the reader
        // reports before any compiler runs).
        let kernel = "#pragma once\n\n__global__ void k(float* x, , int n) { x[0] = 1.0f; }\n";
        let mut headers = [header("k.cuh", kernel)];
        let e = read_all("#include \"k.cuh\"\n", &mut headers, &[]).unwrap_err();
        assert!(e.starts_with("kernels/k.cuh:3: cannot read this `__global__` function's declaration"), "{e}");
        assert!(
            e.contains("(empty parameter 1 in `k`)") && e.contains("write its name and parameter list plainly"),
            "{e}"
        );
        // Only a declaration of it: the definition is elsewhere, nothing is lost here.
        let mut headers = [header("k.cuh", "__global__ void k(float* x, , int n);\n")];
        assert!(read_all("#include \"k.cuh\"\n", &mut headers, &[]).is_ok());
        // The same text under `#if 0`: nothing the compiler sees.
        let mut headers = [header("k.cuh", "#if 0\n__global__ void k(float* x, , int n) {}\n#endif\n")];
        assert!(read_all("#include \"k.cuh\"\n", &mut headers, &[]).unwrap().kernels.is_empty());
    }
}
