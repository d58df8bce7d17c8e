//! Reading kernel entries and their parameter layout from PTX, and resolving C++ symbols.

/// One `.param` of an `.entry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtxParam {
    /// Size in bytes.
    pub size: u32,
    /// Alignment when stated (`.align N`), else the size.
    pub align: u32,
}

/// One `.entry`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The symbol (mangled for C++ linkage).
    pub symbol: String,
    /// Its parameters.
    pub params: Vec<PtxParam>,
}

/// All kernel entries in a PTX text.
pub fn entries(ptx: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut lines = ptx.lines().peekable();
    while let Some(line) = lines.next() {
        let l = line.trim();
        let Some(at) = l.find(".entry ") else { continue };
        let head = &l[at + ".entry ".len()..];
        let symbol = head.split(|c: char| c == '(' || c.is_whitespace()).next().unwrap_or("").to_string();
        let mut params = Vec::new();
        // Parameters follow on their own lines until `)`; a parameterless entry may be `name()`.
        if !head.contains(')') {
            for p in lines.by_ref() {
                let p = p.trim();
                if p.starts_with(')') {
                    break;
                }
                if let Some(param) = parse_param(p) {
                    params.push(param);
                }
            }
        }
        out.push(Entry { symbol, params });
    }
    out
}

fn parse_param(p: &str) -> Option<PtxParam> {
    let p = p.trim_end_matches(',');
    if !p.starts_with(".param") {
        return None;
    }
    let toks: Vec<&str> = p.split_whitespace().collect();
    let mut align = None;
    let mut elem = 0u32;
    let mut count = 1u32;
    let mut k = 1;
    while k < toks.len() {
        let t = toks[k];
        if t == ".align" {
            align = toks.get(k + 1).and_then(|a| a.parse().ok());
            k += 2;
            continue;
        }
        if let Some(sz) = scalar_size(t) {
            elem = sz;
        } else if !t.starts_with('.') {
            if let (Some(open), true) = (t.find('['), t.ends_with(']')) {
                count = t[open + 1..t.len() - 1].parse().ok()?;
            }
        }
        k += 1;
    }
    let size = elem.checked_mul(count)?;
    (elem > 0).then(|| PtxParam { size, align: align.unwrap_or(elem) })
}

fn scalar_size(t: &str) -> Option<u32> {
    let t = t.strip_prefix('.')?;
    let (kind, bits) = (*t.as_bytes().first()?, t.get(1..)?);
    match (kind, bits.parse::<u32>().ok()?) {
        (b'u' | b's' | b'b' | b'f', n @ (8 | 16 | 32 | 64)) => Some(n / 8),
        _ => None,
    }
}

/// Finds the entry for a kernel: exact symbol for `extern "C"`, otherwise the C++ mangled name of
/// a free function `ns::name(...)` (`_Z4namei...`, `_ZN2ns4nameE...`).
pub fn find<'a>(entries: &'a [Entry], namespaces: &[String], name: &str, extern_c: bool) -> Option<&'a Entry> {
    if extern_c {
        return entries.iter().find(|e| e.symbol == name);
    }
    let prefix = if namespaces.is_empty() {
        format!("_Z{}{name}", name.len())
    } else {
        let mut s = "_ZN".to_string();
        for n in namespaces.iter().map(String::as_str).chain([name]) {
            s.push_str(&format!("{}{n}", n.len()));
        }
        s.push('E');
        s
    };
    // The length prefix makes the match exact: `_Z2cx` never matches `_Z3cxx...`.
    let matches: Vec<&Entry> = entries.iter().filter(|e| e.symbol.starts_with(&prefix)).collect();
    if !matches.is_empty() {
        return (matches.len() == 1).then(|| matches[0]);
    }
    // Anonymous namespaces: GCC's `_GLOBAL__N_1`, nvcc 13's `_GLOBAL__N__<hash>_<file>_...`,
    // at any depth. The reader leaves them out of `namespaces`, so compare without them.
    let want: Vec<&str> = namespaces.iter().map(String::as_str).chain([name]).collect();
    let anon: Vec<&Entry> = entries
        .iter()
        .filter(|e| {
            nested_name(&e.symbol).is_some_and(|parts| {
                parts.len() > want.len()
                    && parts.iter().copied().filter(|p| !p.starts_with("_GLOBAL__N")).eq(want.iter().copied())
            })
        })
        .collect();
    (anon.len() == 1).then(|| anon[0])
}

/// Whether a kernel symbol is a template instance: an Itanium-mangled name whose function name
/// (or an enclosing class) carries template arguments (`_Z4fillIfEvPT_i`, `_ZN2ns4fillIiEEvPT_`).
/// `extern "C"` names, plain C++ functions and anything this reader does not follow are not.
pub fn is_template_symbol(symbol: &str) -> bool {
    let Some(mut rest) = symbol.strip_prefix("_Z") else { return false };
    let nested = rest.starts_with('N');
    if nested {
        rest = &rest[1..];
    }
    loop {
        rest = rest.strip_prefix('L').unwrap_or(rest); // internal linkage (`static`)
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let Some(n) = rest.get(..digits).and_then(|d| d.parse::<usize>().ok()) else { return false };
        let Some(after) = rest.get(digits + n..) else { return false };
        if after.starts_with('I') {
            return true;
        }
        if !nested || after.starts_with('E') {
            return false;
        }
        rest = after;
    }
}

/// The components of an Itanium-mangled nested name (`_ZN2ns4scaleEPf` -> `["ns", "scale"]`,
/// `_Z5scalePf` -> `["scale"]`), or `None` for anything else (templates, operators, ...).
fn nested_name(symbol: &str) -> Option<Vec<&str>> {
    let read = |s: &'_ str| -> Option<(usize, usize)> {
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        let n: usize = s.get(..digits)?.parse().ok()?;
        (n > 0 && s.len() >= digits + n).then_some((digits, n))
    };
    if let Some(mut rest) = symbol.strip_prefix("_ZN") {
        let mut parts = Vec::new();
        while !rest.starts_with('E') {
            let (d, n) = read(rest)?;
            parts.push(rest.get(d..d + n)?);
            rest = &rest[d + n..];
        }
        return Some(parts);
    }
    let rest = symbol.strip_prefix("_Z")?;
    let (d, n) = read(rest)?;
    Some(vec![rest.get(d..d + n)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "
.visible .entry saxpy(
	.param .f32 saxpy_param_0,
	.param .u64 .ptr .align 1 saxpy_param_1,
	.param .u64 saxpy_param_3,
	.param .align 8 .b8 saxpy_param_4[16],
	.param .align 2 .b8 saxpy_param_5[2],
	.param .u8 saxpy_param_6
)
{
}
.visible .entry _Z3cxxiPd(
	.param .u32 _Z3cxxiPd_param_0,
	.param .u64 _Z3cxxiPd_param_1
)
.visible .entry _ZN2ns5innerEi(
	.param .u32 _ZN2ns5innerEi_param_0
)
.visible .entry empty()
{
.global .align 8 .u64 __cuda_embed_probe_0_1 = 4503599627370500;
";

    #[test]
    fn reads_entries_and_params() {
        let e = entries(PTX);
        assert_eq!(e.len(), 4);
        let sizes: Vec<(u32, u32)> = e[0].params.iter().map(|p| (p.size, p.align)).collect();
        assert_eq!(sizes, [(4, 4), (8, 1), (8, 8), (16, 8), (2, 2), (1, 1)]);
        assert_eq!(e[3].symbol, "empty");
        assert!(e[3].params.is_empty());
    }

    #[test]
    fn resolves_cxx_names() {
        let e = entries(PTX);
        assert_eq!(find(&e, &[], "saxpy", true).unwrap().symbol, "saxpy");
        assert_eq!(find(&e, &[], "cxx", false).unwrap().symbol, "_Z3cxxiPd");
        assert_eq!(find(&e, &["ns".into()], "inner", false).unwrap().symbol, "_ZN2ns5innerEi");
        assert!(find(&e, &[], "cx", false).is_none());
        assert!(find(&e, &[], "inner", true).is_none());
    }

    #[test]
    fn anonymous_namespaces_as_nvcc_13_and_gcc_mangle_them() {
        let ptx = ".entry _ZN29_GLOBAL__N__9b914f75_4_a_cu_p6anon_kEPf(\n)\n\
                   .entry _ZN2ns29_GLOBAL__N__9b914f75_4_a_cu_p5innerEPf(\n)\n\
                   .entry _ZN12_GLOBAL__N_13gccEi(\n)\n";
        let e = entries(ptx);
        assert_eq!(find(&e, &[], "anon_k", false).unwrap().symbol, e[0].symbol);
        assert_eq!(find(&e, &["ns".into()], "inner", false).unwrap().symbol, e[1].symbol);
        assert_eq!(find(&e, &[], "gcc", false).unwrap().symbol, e[2].symbol);
        assert!(find(&e, &[], "inner", false).is_none(), "inner is in ns");
        assert!(find(&e, &[], "anon", false).is_none());
        assert_eq!(nested_name("_ZN2ns5innerEi"), Some(vec!["ns", "inner"]));
        assert_eq!(nested_name("_ZN99x"), None, "never reads past the end");
        assert_eq!(nested_name("_Z4fillIfLi4EEvPT_S0_6Params"), Some(vec!["fill"]));
    }

    #[test]
    fn template_symbols() {
        for t in ["_Z4fillIfEvPT_i", "_ZN2ns4fillIiEEvPT_", "_ZN36_GLOBAL__N__1a2b3c4d_5_x_cu_f1e2d3c44fillIfEEvPT_"] {
            assert!(is_template_symbol(t), "{t}");
        }
        for t in [
            "saxpy",
            "_Z3cxxiPd",
            "_ZN2ns5innerEi",
            "_ZL6staticPf",
            "_ZN36_GLOBAL__N__1a2b3c4d_5_x_cu_f1e2d3c45innerEi",
        ] {
            assert!(!is_template_symbol(t), "{t}");
        }
    }

    #[test]
    fn probe_values() {
        let v = crate::oracle::probe::read(PTX);
        assert_eq!(crate::oracle::probe::number(&v, "0_1"), Some(4503599627370500));
    }
}
