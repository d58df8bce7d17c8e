//! What each translation unit defines and needs, read from its relocatable PTX, and the link
//! errors explained from it: an undefined `__device__` function or variable, and a declaration
//! whose parameter types differ from the definition's (C++ mangles them into the symbol, so the
//! linker sees only "undefined"; this module finds the definition of the same name and says so).

/// The external symbols of one translation unit's PTX.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Symbols {
    /// Functions and kernels defined here with external linkage (`.visible`/`.weak`).
    pub defined_funcs: Vec<String>,
    /// Functions used here and defined elsewhere (`.extern .func`).
    pub extern_funcs: Vec<String>,
    /// Variables defined here with external linkage.
    pub defined_vars: Vec<Var>,
    /// Variables used here and defined elsewhere (`.extern .global`/`.const`).
    pub extern_vars: Vec<Var>,
}

/// A `__device__`/`__constant__` variable as PTX declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Var {
    /// The symbol.
    pub name: String,
    /// State space and element type as written: `.global .u32`, `.const .f32`.
    pub ty: String,
    /// Element count (`[16]` -> 16; `[]` and scalars: `None`/1).
    pub count: Option<u64>,
}

impl Var {
    /// The PTX element type without the dot: `u32`, `b8`.
    fn elem(&self) -> &str {
        self.ty.split_whitespace().last().unwrap_or("").trim_start_matches('.')
    }

    /// Size in bytes, when the element type and count are known.
    pub fn bytes(&self) -> Option<u64> {
        let digits: String = self.elem().chars().skip(1).collect();
        let bits: u64 = if self.elem() == "pred" { 8 } else { digits.parse().ok()? };
        Some(bits / 8 * self.count.unwrap_or(1))
    }

    fn describe(&self) -> String {
        let ty = match self.count {
            Some(n) => format!(".{}[{n}]", self.elem()),
            None => format!(".{}", self.elem()),
        };
        match self.bytes() {
            Some(b) => format!("`{ty}` ({b} bytes)"),
            None => format!("`{ty}`"),
        }
    }

    /// Whether an `extern` declaration `self` describes the definition `def`: the same size and,
    /// where both are typed scalars (not byte arrays), the same type. An `extern` array without
    /// a length (`[]`) matches any length.
    fn matches(&self, def: &Var) -> bool {
        if self.count.is_none() && self.elem() == "b8" {
            return true;
        }
        let typed = |v: &Var| v.count.is_none() && v.elem() != "b8";
        let sizes = self.bytes() == def.bytes();
        sizes && (!(typed(self) && typed(def)) || self.elem() == def.elem())
    }
}

/// Reads the external symbols of `ptx`.
pub fn read(ptx: &str) -> Symbols {
    let mut out = Symbols::default();
    for line in ptx.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(&linkage) = words.first() else { continue };
        let ext = match linkage {
            ".extern" => true,
            ".visible" | ".weak" => false,
            _ => continue,
        };
        match words.get(1).copied() {
            Some(".func") | Some(".entry") => {
                if let Some(name) = func_name(line) {
                    if ext {
                        out.extern_funcs.push(name)
                    } else {
                        out.defined_funcs.push(name)
                    }
                }
            }
            Some(".global") | Some(".const") => {
                if let Some(v) = var(&words[1..]) {
                    if ext {
                        out.extern_vars.push(v)
                    } else {
                        out.defined_vars.push(v)
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The symbols some unit uses and no unit defines: what a library (the device runtime's
/// `cudaGetParameterBufferV2`, ...) must supply, or an undefined reference.
pub fn unresolved(units: &[Symbols]) -> Vec<String> {
    let defined = |name: &str| {
        units.iter().any(|u| u.defined_funcs.iter().any(|f| f == name) || u.defined_vars.iter().any(|v| v.name == name))
    };
    let mut out: Vec<String> = units
        .iter()
        .flat_map(|u| u.extern_funcs.iter().cloned().chain(u.extern_vars.iter().map(|v| v.name.clone())))
        .filter(|name| !defined(name))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The function's name in `.visible .func (.param .b32 func_retval0) name(` or `.extern .func name(`.
fn func_name(line: &str) -> Option<String> {
    let at = line.find(".func").or_else(|| line.find(".entry"))?;
    let mut rest = line[at..].split_once(char::is_whitespace)?.1.trim_start();
    if rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$').collect();
    (!name.is_empty()).then_some(name)
}

/// `.global .align 4 .u32 counter[16] = {...};` from the state space on.
fn var(words: &[&str]) -> Option<Var> {
    let space = words.first()?;
    let mut ty = None;
    for (i, w) in words.iter().enumerate().skip(1) {
        if *w == ".align" {
            continue;
        }
        if i > 1 && words[i - 1] == ".align" {
            continue;
        }
        if let Some(t) = w.strip_prefix('.') {
            ty = Some(format!("{space} .{t}"));
            continue;
        }
        let decl = w.split(['=', ';']).next()?;
        let (name, count) = match decl.split_once('[') {
            Some((n, c)) => (n, c.trim_end_matches(']').parse().ok()),
            None => (decl, None),
        };
        if name.is_empty() {
            return None;
        }
        return Some(Var { name: name.to_string(), ty: ty?, count });
    }
    None
}

/// `sq(float)`, `ns::f(float*, int const*)` from an Itanium-mangled function symbol, for
/// messages; the symbol itself when it is not one this small reader understands.
pub fn demangle(sym: &str) -> String {
    demangled(sym).unwrap_or_else(|| sym.to_string())
}

/// The qualified name of a mangled function symbol (`_ZN2ns2sqEf` -> `ns::sq`), or the symbol of
/// an `extern "C"` one.
pub fn base_name(sym: &str) -> String {
    match sym.strip_prefix("_Z") {
        Some(rest) => name(rest).map(|(n, _)| n).unwrap_or_else(|| sym.to_string()),
        None => sym.to_string(),
    }
}

fn demangled(sym: &str) -> Option<String> {
    let rest = sym.strip_prefix("_Z")?;
    let (qualified, mut rest) = name(rest)?;
    let mut params = Vec::new();
    while !rest.is_empty() {
        let (t, r) = ty(rest)?;
        params.push(t);
        rest = r;
    }
    if params == ["void"] {
        params.clear();
    }
    Some(format!("{qualified}({})", params.join(", ")))
}

/// `<len><id>` or `N <len><id>... E`, returning the `::`-joined name and the rest.
fn name(s: &str) -> Option<(String, &str)> {
    if let Some(mut rest) = s.strip_prefix('N') {
        let mut parts = Vec::new();
        while !rest.starts_with('E') {
            let (id, r) = source_name(rest)?;
            parts.push(id);
            rest = r;
        }
        return Some((parts.join("::"), &rest[1..]));
    }
    let (id, rest) = source_name(s)?;
    Some((id.to_string(), rest))
}

fn source_name(s: &str) -> Option<(&str, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let len: usize = s[..digits].parse().ok()?;
    let rest = &s[digits..];
    (rest.len() >= len).then(|| (&rest[..len], &rest[len..]))
}

fn ty(s: &str) -> Option<(String, &str)> {
    let c = s.chars().next()?;
    let builtin = match c {
        'v' => "void",
        'b' => "bool",
        'c' => "char",
        'a' => "signed char",
        'h' => "unsigned char",
        's' => "short",
        't' => "unsigned short",
        'i' => "int",
        'j' => "unsigned int",
        'l' => "long",
        'm' => "unsigned long",
        'x' => "long long",
        'y' => "unsigned long long",
        'f' => "float",
        'd' => "double",
        _ => "",
    };
    if !builtin.is_empty() {
        return Some((builtin.to_string(), &s[1..]));
    }
    match c {
        'P' => ty(&s[1..]).map(|(t, r)| (format!("{t}*"), r)),
        'R' => ty(&s[1..]).map(|(t, r)| (format!("{t}&"), r)),
        'K' => ty(&s[1..]).map(|(t, r)| (format!("const {t}"), r)),
        'V' => ty(&s[1..]).map(|(t, r)| (format!("volatile {t}"), r)),
        '0'..='9' | 'N' => name(s),
        _ => None,
    }
}

/// The symbols a linker log says are undefined: nvlink's `Undefined reference to 'X'` and
/// ptxas's (after LTO) `Unresolved extern function 'X'` / `variable 'X'`.
pub fn undefined_in_log(log: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in log.lines() {
        for marker in ["Undefined reference to '", "Unresolved extern function '", "Unresolved extern variable '"] {
            if let Some(rest) = line.split(marker).nth(1) {
                if let Some(sym) = rest.split('\'').next().filter(|s| !s.is_empty()) {
                    if !out.iter().any(|o| o == sym) {
                        out.push(sym.to_string());
                    }
                }
            }
        }
    }
    out
}

/// One problem with the symbols across the units, with the unit to report it at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Index of the unit that uses the symbol.
    pub unit: usize,
    /// The message.
    pub message: String,
}

/// Variables declared `extern` in one unit with a type or length other than the definition's in
/// another (the linker joins them silently; the program would read the wrong bytes).
pub fn var_mismatches(units: &[(&str, &Symbols)]) -> Vec<Problem> {
    let mut out = Vec::new();
    for (ui, (file, syms)) in units.iter().enumerate() {
        for ext in &syms.extern_vars {
            for (other, theirs) in units.iter().filter(|u| u.0 != *file) {
                let Some(def) = theirs.defined_vars.iter().find(|d| d.name == ext.name) else { continue };
                if !ext.matches(def) {
                    out.push(Problem {
                        unit: ui,
                        message: format!(
                            "mismatched `__device__` variable `{}`: `{file}` declares it as {} but `{other}` defines it as {}; \
                             make the `extern` declaration match the definition",
                            ext.name,
                            ext.describe(),
                            def.describe()
                        ),
                    });
                }
            }
        }
    }
    out
}

/// Explains each undefined symbol: which unit uses it and, when another unit defines a function
/// of the same name with other parameter types, that the signatures differ.
pub fn explain_undefined(undefined: &[String], units: &[(&str, &Symbols)]) -> Vec<Problem> {
    let files: Vec<&str> = units.iter().map(|u| u.0).collect();
    let mut out = Vec::new();
    for sym in undefined {
        let users: Vec<usize> = (0..units.len())
            .filter(|&i| {
                units[i].1.extern_funcs.iter().any(|f| f == sym)
                    || units[i].1.extern_vars.iter().any(|v| &v.name == sym)
            })
            .collect();
        let ui = users.first().copied().unwrap_or(0);
        let user = files.get(ui).copied().unwrap_or("the module");
        let base = base_name(sym);
        let namesake = units.iter().enumerate().find_map(|(i, (file, s))| {
            s.defined_funcs.iter().find(|d| *d != sym && base_name(d) == base).map(|d| (i, *file, d))
        });
        let message = match namesake {
            Some((_, file, def)) => format!(
                "mismatched `__device__` function `{base}`: `{user}` declares and calls `{}` but `{file}` defines `{}`; \
                 the parameter types are part of the symbol, so the link finds no `{}`: make the declaration and the \
                 definition agree (a shared header declaring it helps)",
                demangle(sym),
                demangle(def),
                demangle(sym)
            ),
            None => format!(
                "undefined `__device__` symbol `{}`: `{user}` uses it but no file of this module defines it (the module \
                 links {}); define it in one of them, or add the file that does to `link = [...]`",
                demangle(sym),
                files.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            ),
        };
        out.push(Problem { unit: ui, message });
    }
    out
}
