//! Reading a cubin (an ELF file of NVIDIA's): what the runtime and the macro learn from it without
//! a driver.
//!
//! - [`param_counts`]: each kernel's parameter count, so that the driver is only asked about
//!   parameters that exist. Drivers before `cuFuncGetParamCount` (CUDA 13.0's among them) can only
//!   say how many parameters a kernel has by failing `cuFuncGetParamInfo` one past the end, a
//!   failing call that compute-sanitizer reports as an API error. The cubin says it without a
//!   failing call: section `.nv.info.<symbol>` holds one `EIATTR_KPARAM_INFO` record per parameter.
//! - [`block_limits`]: the largest block each kernel is sure to take on a GPU that runs this
//!   cubin, from its register count and its `__launch_bounds__`, so that a first launch need not
//!   ask the driver (`cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)`) before the kernel runs.
//!
//! The format is not documented by NVIDIA; every read here is bounds-checked, and anything
//! unexpected gives `None` (the caller then asks the driver), never a panic.

/// `EIATTR_MAX_THREADS`: `__launch_bounds__`' first argument (PTX `.maxntid`), as x, y, z.
const MAX_THREADS: u8 = 0x05;
/// `EIATTR_REQNTID`: PTX `.reqntid`, as x, y, z.
const REQNTID: u8 = 0x10;
/// `EIATTR_KPARAM_INFO`: one record per kernel parameter.
const KPARAM_INFO: u8 = 0x17;
/// `EIATTR_REGCOUNT` (in the file-wide `.nv.info`): a function's symbol index and its registers
/// per thread.
const REGCOUNT: u8 = 0x2f;

/// The `.nv.info` record formats: no value, a byte, a 16-bit value, a sized value. Every record
/// starts with a 4-byte header (format, attribute, 16 bits of value or size): the byte value sits in
/// the low byte of those 16 bits and a no-value record leaves them zero; a sized value's bytes follow.
const FMT_NVAL: u8 = 1;
const FMT_BVAL: u8 = 2;
const FMT_HVAL: u8 = 3;
const FMT_SVAL: u8 = 4;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<usize> {
    usize::try_from(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?)).ok()
}

/// One section of an ELF file.
struct Section<'a> {
    name: &'a [u8],
    /// `sh_type` (2: a symbol table).
    ty: u32,
    /// `sh_link` (for a symbol table: the section holding its names).
    link: u32,
    data: &'a [u8],
}

/// The sections of a 64-bit little-endian ELF file, in index order.
fn sections(elf: &[u8]) -> Option<Vec<Section<'_>>> {
    // ELF magic, ELFCLASS64, ELFDATA2LSB.
    if elf.get(0..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let shoff = u64_at(elf, 0x28)?;
    let entsize = usize::from(u16_at(elf, 0x3A)?);
    let count = usize::from(u16_at(elf, 0x3C)?);
    let names_index = usize::from(u16_at(elf, 0x3E)?);
    if entsize < 0x40 {
        return None;
    }
    // (name offset, type, link, contents) of section `i`.
    let header = |i: usize| -> Option<(u32, u32, u32, &[u8])> {
        let h = shoff.checked_add(i.checked_mul(entsize)?)?;
        let (offset, size) = (u64_at(elf, h.checked_add(0x18)?)?, u64_at(elf, h.checked_add(0x20)?)?);
        let ty = u32_at(elf, h.checked_add(4)?)?;
        // SHT_NOBITS occupies no bytes in the file.
        let data = if ty == 8 { &[][..] } else { elf.get(offset..offset.checked_add(size)?)? };
        Some((u32_at(elf, h)?, ty, u32_at(elf, h.checked_add(0x28)?)?, data))
    };
    let (_, _, _, names) = header(names_index)?;
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let (name_at, ty, link, data) = header(i)?;
        out.push(Section { name: c_str(names, name_at)?, ty, link, data });
    }
    Some(out)
}

/// The NUL-terminated string at `at` in a string table.
fn c_str(table: &[u8], at: u32) -> Option<&[u8]> {
    let tail = table.get(usize::try_from(at).ok()?..)?;
    Some(&tail[..tail.iter().position(|&c| c == 0)?])
}

/// One record of an `.nv.info` section: its attribute and, for a sized record, its bytes.
struct Record<'a> {
    attribute: u8,
    sized: Option<&'a [u8]>,
}

/// The records of one `.nv.info` section; `None` when it does not parse to its end.
fn records(info: &[u8]) -> Option<Vec<Record<'_>>> {
    let (mut at, mut out) = (0usize, Vec::new());
    while at < info.len() {
        let (format, attribute) = (*info.get(at)?, *info.get(at + 1)?);
        at += 2;
        match format {
            FMT_NVAL | FMT_BVAL | FMT_HVAL => {
                u16_at(info, at)?;
                at += 2;
                out.push(Record { attribute, sized: None });
            }
            FMT_SVAL => {
                let size = usize::from(u16_at(info, at)?);
                at += 2;
                let value = info.get(at..at.checked_add(size)?)?;
                at += size;
                out.push(Record { attribute, sized: Some(value) });
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The kernels of a cubin: `(symbol, its .nv.info.<symbol> section if any)` for every
/// `.text.<symbol>` section.
fn kernels<'a>(sections: &'a [Section<'a>]) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> + 'a {
    sections.iter().filter_map(move |s| {
        let symbol = s.name.strip_prefix(b".text.")?;
        let info = sections.iter().find(|i| i.name.strip_prefix(b".nv.info.") == Some(symbol)).map(|i| i.data);
        Some((symbol, info))
    })
}

/// The parameter count of every kernel in `cubin`, by symbol; `None` when `cubin` is not an ELF
/// file this reader understands (a fatbin, PTX, a format change).
///
/// A kernel is a `.text.<symbol>` section; its count is the number of `EIATTR_KPARAM_INFO`
/// records in `.nv.info.<symbol>` (a kernel without parameters may have no such section: 0).
pub fn param_counts(cubin: &[u8]) -> Option<Vec<(String, usize)>> {
    let sections = sections(cubin)?;
    let mut out = Vec::new();
    for (symbol, info) in kernels(&sections) {
        let count = match info {
            Some(data) => records(data)?.iter().filter(|r| r.attribute == KPARAM_INFO && r.sized.is_some()).count(),
            None => 0,
        };
        out.push((String::from_utf8(symbol.to_vec()).ok()?, count));
    }
    Some(out)
}

/// The parameter count of kernel `symbol` among `counts` (from [`param_counts`]).
pub fn lookup(counts: &[(String, usize)], symbol: &str) -> Option<usize> {
    counts.iter().find(|(s, _)| s == symbol).map(|&(_, n)| n)
}

/// Threads per block every GPU allows.
const DEVICE_MAX_THREADS: u32 = 1024;
/// 32-bit registers a block may use on the GPUs [`block_limits`] answers for (compute capability
/// 7.0 and newer; some older ones, 5.3 and 6.2, have half as many).
const REGISTERS_PER_BLOCK: u32 = 64 * 1024;

/// The most threads a block of a kernel using `registers` per thread can have on a GPU with 64K
/// registers per block (compute capability 7.0 and newer), at most 1024: registers are given out per warp of 32 threads, in units of 256
/// (8 per thread), so a warp takes `registers` rounded up to a multiple of 8, times 32. `None`
/// past 255 registers (no GPU runs such code: not a cubin this reader understands).
pub fn threads_for_registers(registers: u32) -> Option<u32> {
    if registers > 255 {
        return None;
    }
    let per_warp = registers.max(1).div_ceil(8) * 8 * 32;
    Some((REGISTERS_PER_BLOCK / per_warp * 32).min(DEVICE_MAX_THREADS))
}

/// The largest block every kernel of `cubin` (built for `sm_<arch>`, e.g. 90) is sure to take on
/// a GPU that loads this cubin: the least of 1024 threads, what its registers allow
/// ([`threads_for_registers`]) and its `__launch_bounds__` (`EIATTR_MAX_THREADS`) or required
/// block size (`EIATTR_REQNTID`), as `(symbol, threads)`. This is what the driver reports as
/// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`, read here without a driver.
///
/// A kernel whose register count is not in the file (or whose records do not read) is left
/// out; `None` when `cubin` is not an ELF file this reader understands, or for an architecture
/// before 7.0 (where the register file per block may be half as large).
pub fn block_limits(cubin: &[u8], arch: u32) -> Option<Vec<(String, u32)>> {
    if arch < 70 {
        return None;
    }
    let sections = sections(cubin)?;
    // Registers per thread of each function, by symbol index (the file-wide `.nv.info`).
    let file_info = sections.iter().find(|s| s.name == b".nv.info")?;
    let registers: Vec<(u32, u32)> = records(file_info.data)?
        .iter()
        .filter(|r| r.attribute == REGCOUNT)
        .filter_map(|r| {
            let v = r.sized?;
            (v.len() == 8).then(|| Some((u32_at(v, 0)?, u32_at(v, 4)?)))?
        })
        .collect();
    let symtab = sections.iter().find(|s| s.ty == 2)?;
    let names = sections.get(usize::try_from(symtab.link).ok()?)?.data;
    let mut out = Vec::new();
    for (symbol, info) in kernels(&sections) {
        let Some(index) = function_symbol(symtab.data, names, symbol) else { continue };
        let Some(&(_, regs)) = registers.iter().find(|(i, _)| *i == index) else { continue };
        let Some(mut limit) = threads_for_registers(regs) else { continue };
        if let Some(info) = info {
            let Some(records) = records(info) else { continue };
            let mut readable = true;
            for r in records.iter().filter(|r| r.attribute == MAX_THREADS || r.attribute == REQNTID) {
                match r.sized.filter(|v| v.len() == 12) {
                    Some(v) => {
                        let dims = [u32_at(v, 0), u32_at(v, 4), u32_at(v, 8)];
                        let threads = dims.iter().try_fold(1u64, |n, d| Some(n.saturating_mul(u64::from((*d)?))));
                        match threads {
                            Some(t) => limit = limit.min(u32::try_from(t).unwrap_or(u32::MAX)),
                            None => readable = false,
                        }
                    }
                    None => readable = false,
                }
            }
            if !readable {
                continue;
            }
        }
        out.push((String::from_utf8(symbol.to_vec()).ok()?, limit));
    }
    Some(out)
}

/// The index of the function symbol (`STT_FUNC`) named `symbol` in a symbol table (`symtab`, its
/// names in `names`).
fn function_symbol(symtab: &[u8], names: &[u8], symbol: &[u8]) -> Option<u32> {
    // Elf64_Sym: st_name (4), st_info (1), st_other (1), st_shndx (2), st_value (8), st_size (8).
    (0..symtab.len() / 24).find_map(|i| {
        let at = i * 24;
        let is_function = symtab.get(at + 4)? & 0xf == 2;
        (is_function && c_str(names, u32_at(symtab, at)?)? == symbol).then(|| u32::try_from(i).ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-built ELF: section 0 (empty), `.shstrtab`, then `sections` as `(name, type, link,
    /// contents)` (section `i` of the list has index `i + 2`).
    fn elf(sections: &[(&str, u32, u32, Vec<u8>)]) -> Vec<u8> {
        let mut names = b"\0.shstrtab\0".to_vec();
        let mut headers = vec![(0u32, 0u32, 0u32, 0usize, 0usize), (1, 3, 0, 0, 0)];
        let mut elf = vec![0u8; 0x40];
        elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
        for (name, ty, link, data) in sections {
            let at = names.len() as u32;
            names.extend_from_slice(name.as_bytes());
            names.push(0);
            headers.push((at, *ty, *link, elf.len(), data.len()));
            elf.extend_from_slice(data);
        }
        headers[1].3 = elf.len();
        headers[1].4 = names.len();
        elf.extend_from_slice(&names);
        let shoff = elf.len();
        elf[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        elf[0x3A..0x3C].copy_from_slice(&0x40u16.to_le_bytes());
        elf[0x3C..0x3E].copy_from_slice(&(headers.len() as u16).to_le_bytes());
        elf[0x3E..0x40].copy_from_slice(&1u16.to_le_bytes());
        for (name, ty, link, offset, size) in headers {
            let mut h = vec![0u8; 0x40];
            h[0..4].copy_from_slice(&name.to_le_bytes());
            h[4..8].copy_from_slice(&ty.to_le_bytes());
            h[0x18..0x20].copy_from_slice(&(offset as u64).to_le_bytes());
            h[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
            h[0x28..0x2C].copy_from_slice(&link.to_le_bytes());
            elf.extend(h);
        }
        elf
    }

    /// A hand-built ELF with kernel `k`: an empty `.text.k` and `.nv.info.k` holding `info`.
    fn elf_with(info: &[u8]) -> Vec<u8> {
        elf(&[(".nv.info.k", 1, 0, info.to_vec()), (".text.k", 1, 0, Vec::new())])
    }

    /// A sized `.nv.info` record.
    fn record(attribute: u8, words: &[u32]) -> Vec<u8> {
        let mut r = vec![FMT_SVAL, attribute];
        r.extend_from_slice(&((words.len() * 4) as u16).to_le_bytes());
        words.iter().for_each(|w| r.extend_from_slice(&w.to_le_bytes()));
        r
    }

    /// A cubin laid out as nvcc 13.0 lays one out: kernels with `.text.<name>` and
    /// `.nv.info.<name>` sections, function symbols in `.symtab` (names in `.strtab`), and the
    /// register count of each in the file-wide `.nv.info`, by symbol index. `kernels`: `(name,
    /// registers (None: no record), .nv.info.<name> records)`.
    fn cubin(kernels: &[(&str, Option<u32>, Vec<u8>)]) -> Vec<u8> {
        // Symbol 0 is the null symbol, then a section symbol, then the functions (in reverse, so
        // a symbol's index is not its kernel's position).
        let mut strtab = b"\0.text.x\0".to_vec();
        let mut symtab = vec![0u8; 24];
        let mut section_symbol = vec![0u8; 24];
        section_symbol[0..4].copy_from_slice(&1u32.to_le_bytes());
        section_symbol[4] = 3; // STT_SECTION
        symtab.extend(section_symbol);
        let mut file_info = Vec::new();
        for (name, regs, _) in kernels.iter().rev() {
            let index = (symtab.len() / 24) as u32;
            let mut sym = vec![0u8; 24];
            sym[0..4].copy_from_slice(&(strtab.len() as u32).to_le_bytes());
            sym[4] = 0x12; // STB_GLOBAL, STT_FUNC
            symtab.extend(sym);
            strtab.extend_from_slice(name.as_bytes());
            strtab.push(0);
            if let Some(r) = regs {
                file_info.extend(record(REGCOUNT, &[index, *r]));
                file_info.extend(record(0x11, &[index, 0])); // EIATTR_FRAME_SIZE, ignored
            }
        }
        let mut sections = vec![
            (".strtab".to_string(), 3, 0, strtab),
            (".symtab".to_string(), 2, 2, symtab), // link: section 2, `.strtab`
            (".nv.info".to_string(), 0x70000000, 3, file_info),
        ];
        for (name, _, info) in kernels {
            sections.push((format!(".nv.info.{name}"), 0x70000000, 3, info.clone()));
            sections.push((format!(".text.{name}"), 1, 0, vec![0u8; 16]));
        }
        let refs: Vec<(&str, u32, u32, Vec<u8>)> =
            sections.iter().map(|(n, t, l, d)| (n.as_str(), *t, *l, d.clone())).collect();
        elf(&refs)
    }

    #[test]
    fn threads_follow_the_registers_per_warp() {
        // 64 registers: 2048 a warp, 32 warps fill 64K. 65-72: 2304 a warp, 28 warps.
        let cases = [(0, 1024), (8, 1024), (64, 1024), (65, 896), (72, 896), (128, 512), (168, 384), (255, 256)];
        for (regs, threads) in cases {
            assert_eq!(threads_for_registers(regs), Some(threads), "{regs} registers");
        }
        assert_eq!(threads_for_registers(256), None);
    }

    #[test]
    fn block_limits_combine_registers_and_launch_bounds() {
        let elf = cubin(&[
            ("plain", Some(10), record(KPARAM_INFO, &[0, 0x0008_0001, 0x0011_f000])),
            ("heavy", Some(72), Vec::new()),
            ("bounded", Some(8), record(MAX_THREADS, &[128, 1, 1])),
            ("required", Some(8), record(REQNTID, &[64, 2, 1])),
            ("bounded_heavy", Some(168), record(MAX_THREADS, &[512, 1, 1])),
            ("unknown_registers", None, Vec::new()),
            ("odd_bounds", Some(8), record(MAX_THREADS, &[128, 1])),
        ]);
        let limits = block_limits(&elf, 90).expect("a readable cubin");
        let expected = [("plain", 1024), ("heavy", 896), ("bounded", 128), ("required", 128), ("bounded_heavy", 384)];
        assert_eq!(limits, expected.map(|(s, n)| (s.to_string(), n)).to_vec());
        // The parameter reader reads the same file.
        assert_eq!(lookup(&param_counts(&elf).unwrap(), "plain"), Some(1));
        // Before 7.0 some GPUs have half the registers per block: no answer.
        assert_eq!(block_limits(&elf, 62), None);
        assert_eq!(block_limits(b"not an elf", 90), None);
        // A file without the register records answers nothing.
        assert_eq!(block_limits(&elf_with(&hex(K3)), 90), None);
    }

    /// `.nv.info.k3` of `k3(const float*, float*, int)` as nvcc 13.0 wrote it for sm_90.
    const K3: &str = "043704008200000004170c00000000000200100000f0110004170c00000000000100080000f0210004170c0000\
                      0000000000000000f0210003500000031bff00035f0101041c0800300000009000000003191400040a08000f00\
                      0000100214000436040008000000";

    /// `.nv.info` of this crate's generated column-reduction kernel (6 parameters) as NVRTC 13.0
    /// wrote it for sm_90: it holds byte-valued records (`EIATTR` 0x4c), 4 bytes each like the others.
    const COLS6: &str = "043704008200000004170c00000000000500280000f0210004170c00000000000400200000f0210004170c000000\
                         00000300180000f0210004170c00000000000200100000f0210004170c00000000000100080000f0210004170c00\
                         000000000000000000f0210003500000031b4000024c0100035f010104310800d01f0000a0200000041c1c006021\
                         0000d0210000402800006028000080280000c0290000f029000004050c00000100000100000001000000041e0400\
                         0000000003193000040a080029000000100230000436040008000000";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn counts_the_kparam_records_of_a_real_section() {
        let elf = elf_with(&hex(K3));
        assert_eq!(param_counts(&elf), Some(vec![("k".to_string(), 3)]));
        let counts = param_counts(&elf).unwrap();
        assert_eq!(lookup(&counts, "k"), Some(3));
        // Byte-valued records are 4 bytes long too.
        assert_eq!(param_counts(&elf_with(&hex(COLS6))), Some(vec![("k".to_string(), 6)]));
        // Not a kernel of the cubin: unknown.
        assert_eq!(lookup(&counts, "other"), None);
    }

    /// Calls `read` with every truncation of `good` and with 20,000 copies of it, each with one
    /// byte changed (xorshift from a fixed seed).
    fn each_damaged(good: &[u8], mut read: impl FnMut(&[u8])) {
        for cut in 0..good.len() {
            read(&good[..cut]);
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut bad = good.to_vec();
            let i = (state as usize) % bad.len();
            bad[i] = (state >> 32) as u8;
            read(&bad);
        }
    }

    #[test]
    fn never_panics_on_damaged_input() {
        assert_eq!(param_counts(b"not an elf"), None);
        assert_eq!(param_counts(&[]), None);
        each_damaged(&elf_with(&hex(K3)), |bad| {
            let _ = param_counts(bad);
        });
        let good = cubin(&[("k", Some(40), record(MAX_THREADS, &[256, 1, 1]))]);
        assert_eq!(block_limits(&good, 90), Some(vec![("k".to_string(), 256)]));
        each_damaged(&good, |bad| {
            if let Some(limits) = block_limits(bad, 90) {
                // Whatever a damaged file says, no limit exceeds what the device allows.
                assert!(limits.iter().all(|(_, n)| *n <= 1024), "{limits:?}");
            }
        });
    }
}
