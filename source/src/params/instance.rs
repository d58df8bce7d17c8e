//! Placeholder instances (`"T=float, U=int"`): one CUDA type per placeholder.

use super::*;

/// One instance: a CUDA type for each placeholder, in the placeholders' order of first use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Instance {
    /// `(placeholder, CUDA type)` pairs, in the placeholders' order.
    pub bindings: Vec<(String, String)>,
}

impl Instance {
    /// The CUDA type bound to `placeholder`.
    pub fn get(&self, placeholder: &str) -> Option<&str> {
        self.bindings.iter().find(|(p, _)| p == placeholder).map(|(_, t)| t.as_str())
    }

    /// The CUDA type of `ty` in this instance (a concrete type is itself). A placeholder this
    /// instance does not bind resolves to its own name.
    pub fn resolve<'a>(&'a self, ty: &'a ParamType) -> &'a str {
        match ty {
            ParamType::Concrete(s) => s,
            ParamType::Placeholder(p) => self.get(p).unwrap_or(p),
        }
    }

    /// The CUDA types in placeholder order: the template arguments of this instance.
    pub fn types(&self) -> Vec<&str> {
        self.bindings.iter().map(|(_, t)| t.as_str()).collect()
    }
}

impl fmt::Display for Instance {
    /// `T=float, U=int`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, (p, t)) in self.bindings.iter().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{p}={t}")?;
        }
        Ok(())
    }
}

/// Parses one instance string against the placeholders in use: `"T=float, U=int"` (each bound
/// once, in any order) or, with exactly one placeholder, `"float"`. Types are normalised like
/// parameter types (`"unsigned   int"` -> `"unsigned int"`) and cannot be placeholders.
pub fn parse_instance(text: &str, placeholders: &[String]) -> Result<Instance, ParamError> {
    let mut bound: Vec<(String, String)> = Vec::new();
    if !text.contains('=') {
        let ty = parse_type(text, 0..text.len())?;
        if placeholders.len() != 1 {
            return Err(ParamError::new(
                0..text.len(),
                format!(
                    "with several placeholders name each: `{}`",
                    placeholders.iter().map(|p| format!("{p}={ty}")).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        return Ok(Instance { bindings: vec![(placeholders[0].clone(), ty)] });
    }
    for (piece, range) in split_commas(text) {
        let Some(eq) = piece.find('=') else {
            return Err(ParamError::new(range, format!("`{piece}` binds no placeholder: write `T={piece}`")));
        };
        let name = piece[..eq].trim();
        let name_span = range.start..range.start + piece[..eq].trim_end().len();
        let ty_text = &piece[eq + 1..];
        let ty_start = range.start + eq + 1 + (ty_text.len() - ty_text.trim_start().len());
        let ty = parse_type(ty_text.trim(), ty_start..ty_start + ty_text.trim().len())?;
        if !placeholders.iter().any(|p| p == name) {
            let used = placeholders.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ");
            return Err(ParamError::new(name_span, format!("unknown placeholder `{name}`: the parameters use {used}")));
        }
        if bound.iter().any(|(p, _)| p == name) {
            return Err(ParamError::new(name_span, format!("placeholder `{name}` is bound twice")));
        }
        bound.push((name.to_string(), ty));
    }
    let mut bindings = Vec::with_capacity(placeholders.len());
    for p in placeholders {
        match bound.iter().find(|(b, _)| b == p) {
            Some((_, t)) => bindings.push((p.clone(), t.clone())),
            None => {
                return Err(ParamError::new(
                    0..text.len(),
                    format!("instance `{text}` gives no type for placeholder `{p}`: add `{p}=...`"),
                ))
            }
        }
    }
    Ok(Instance { bindings })
}

/// A concrete CUDA type in an instance: identifiers only, whitespace normalised, not a placeholder.
fn parse_type(text: &str, range: Range<usize>) -> Result<String, ParamError> {
    let toks = tokens(text, range.start);
    if toks.is_empty() {
        return Err(ParamError::new(range, "missing type: write a CUDA type such as `float`"));
    }
    if let Some(t) = toks.iter().find(|t| !t.ident) {
        return Err(ParamError::new(
            t.span.clone(),
            format!("unexpected `{}` in type `{text}`: write a CUDA type such as `float` or `unsigned int`", t.text),
        ));
    }
    if toks.len() == 1 && is_placeholder_name(toks[0].text) {
        return Err(ParamError::new(
            range,
            format!(
                "`{text}` reads as a placeholder: an instance names CUDA types (write a struct as `struct {text}`)"
            ),
        ));
    }
    Ok(toks.iter().map(|t| t.text).collect::<Vec<_>>().join(" "))
}
