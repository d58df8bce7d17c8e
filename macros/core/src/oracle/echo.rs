//! The source lines nvcc quotes under a diagnostic, in the user's words.
//!
//! nvcc's front end quotes the *preprocessed* line: `__global__` comes back as
//! `__attribute__((global))`, `__forceinline__` as `__inline__ __attribute__((always_inline))`,
//! `__launch_bounds__(256)` as `__attribute__((launch_bounds(256)))`. A quoted line that, with
//! those expansions undone, is a line of the source the user wrote is shown as they wrote it, and
//! the caret under it moved by what the undoing removed before it. A line that matches nothing
//! in the source (a header's, or one the user really wrote with `__attribute__`) is left alone.

/// The CUDA keywords that are macros of `host_defines.h`, as nvcc echoes them expanded:
/// `(expanded, written)`; one that takes an argument has `(` at the end of both.
const EXPANSIONS: &[(&str, &str)] = &[
    ("__attribute__((global))", "__global__"),
    ("__attribute__((device))", "__device__"),
    ("__attribute__((host))", "__host__"),
    ("__attribute__((shared))", "__shared__"),
    ("__attribute__((constant))", "__constant__"),
    ("__attribute__((managed))", "__managed__"),
    ("__attribute__((noinline))", "__noinline__"),
    ("__inline__ __attribute__((always_inline))", "__forceinline__"),
];

/// Macros with arguments: `__attribute__((launch_bounds(256)))` is `__launch_bounds__(256)`.
const WITH_ARGS: &[(&str, &str)] = &[
    ("__attribute__((launch_bounds(", "__launch_bounds__("),
    ("__attribute__((cluster_dims(", "__cluster_dims__("),
    ("__attribute__((aligned(", "__align__("),
];

/// `log` with every quoted source line that is an expanded line of `source` shown as written.
pub fn restore(log: &str, source: &str) -> String {
    let written: std::collections::HashSet<String> = source.lines().map(squash).collect();
    let lines: Vec<&str> = log.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some((restored, shifts)) = unexpand(line) {
            if written.contains(&squash(&restored)) {
                out.push(restored);
                // The caret line under it (spaces, then `^`): moved left by what was removed before it.
                if let Some(caret) = lines.get(i + 1).filter(|c| is_caret(c)) {
                    let col = caret.len() - caret.trim_start().len();
                    let removed: usize = shifts.iter().filter(|(at, _)| *at < col).map(|(_, n)| n).sum();
                    out.push(format!("{}{}", " ".repeat(col.saturating_sub(removed)), caret.trim_start()));
                    i += 2;
                    continue;
                }
                i += 1;
                continue;
            }
        }
        out.push(line.to_string());
        i += 1;
    }
    let mut text = out.join("\n");
    if log.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// `line` with the keyword expansions undone, and per undone expansion `(byte offset in line,
/// bytes removed)`; `None` when it holds none.
fn unexpand(line: &str) -> Option<(String, Vec<(usize, usize)>)> {
    let mut out = String::with_capacity(line.len());
    let mut shifts = Vec::new();
    let mut rest = line;
    let mut at = 0;
    'scan: while !rest.is_empty() {
        for (expanded, written) in EXPANSIONS {
            if let Some(tail) = rest.strip_prefix(expanded) {
                out.push_str(written);
                shifts.push((at, expanded.len() - written.len()));
                at += expanded.len();
                rest = tail;
                continue 'scan;
            }
        }
        for (open, written) in WITH_ARGS {
            if let Some(tail) = rest.strip_prefix(open) {
                // The arguments run to the `)))` that closes the attribute (parentheses balanced).
                if let Some(end) = closing(tail) {
                    out.push_str(written);
                    out.push_str(&tail[..end]);
                    out.push(')');
                    shifts.push((at, open.len() - written.len() + 2));
                    at += open.len() + end + 3;
                    rest = &tail[end + 3..];
                    continue 'scan;
                }
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        at += c.len_utf8();
        rest = &rest[c.len_utf8()..];
    }
    (!shifts.is_empty()).then_some((out, shifts))
}

/// In `s` (after `__attribute__((name(`), the byte offset of the `)))` that closes it.
fn closing(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            ')' => return s[i..].starts_with(")))").then_some(i),
            _ => {}
        }
    }
    None
}

/// A caret line: blanks, then `^` and `~` only.
fn is_caret(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('^') && t.chars().all(|c| c == '^' || c == '~')
}

/// The line without leading and trailing blanks, runs of blanks as one space.
fn squash(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "extern \"C\" __global__ void k(float* x, undefined_t n) { x[0] = 1.0f; }\n\
        __device__ __forceinline__ float f(float a) { return a + bogus; }\n\
        __global__ void __launch_bounds__(256) g(float* x) { x[0] = f(1.0f) + nope; }\n";

    #[test]
    fn quoted_lines_show_the_keywords_as_written_and_the_caret_follows() {
        // nvcc 13.0's log for SOURCE (with `#line 5`), as it quotes the preprocessed lines.
        let log = "/x/src/lib.rs(5): error: identifier \"undefined_t\" is undefined\n\
            \x20 extern \"C\" __attribute__((global)) void k(float* x, undefined_t n) { x[0] = 1.0f; }\n\
            \x20                                                     ^\n\
            /x/src/lib.rs(6): error: identifier \"bogus\" is undefined\n\
            \x20 __attribute__((device)) __inline__ __attribute__((always_inline)) float f(float a) { return a + bogus; }\n\
            \x20                                                                                                 ^\n\
            /x/src/lib.rs(7): error: identifier \"nope\" is undefined\n\
            \x20 __attribute__((global)) void __attribute__((launch_bounds(256))) g(float* x) { x[0] = f(1.0f) + nope; }\n\
            \x20                                                                                                 ^\n";
        let restored = restore(log, SOURCE);
        let lines: Vec<&str> = restored.lines().collect();
        assert_eq!(lines.len(), 9);
        for (triple, written) in lines.chunks(3).zip(SOURCE.lines()) {
            let [header, quoted, caret] = triple else { unreachable!() };
            assert_eq!(quoted.trim(), written.trim(), "the line as the user wrote it");
            // The caret still points at the identifier the error names.
            let name = header.split('"').nth(1).unwrap();
            let col = caret.find('^').unwrap();
            assert!(quoted[col..].starts_with(name), "caret under `{name}` in {quoted:?} / {caret:?}");
        }
    }

    #[test]
    fn lines_not_in_the_source_are_left_alone() {
        let log = "h.cuh(3): error: bad\n  __attribute__((global)) void h() { oops; }\n                                     ^\n";
        assert_eq!(restore(log, SOURCE), log, "a header's line: not the user's source");
        let written = "__attribute__((global)) void h() { oops; }";
        let log = format!("f.rs(1): error: bad\n  {written}\n                                     ^\n");
        assert_eq!(restore(&log, written), log, "written with __attribute__ by the user: kept");
    }
}
