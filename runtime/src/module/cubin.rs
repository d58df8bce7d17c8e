//! Reads the parameter count of each kernel from a cubin (an ELF file), so that the driver is
//! only asked about parameters that exist.
//!
//! Drivers before `cuFuncGetParamCount` (CUDA 13.0's among them) can only say how many
//! parameters a kernel has by failing `cuFuncGetParamInfo` one past the end, a failing call that
//! compute-sanitizer reports as an API error. The cubin says it without a failing call: section
//! `.nv.info.<symbol>` holds one `EIATTR_KPARAM_INFO` record per parameter. The format is not
//! documented by NVIDIA; every read here is bounds-checked, and anything unexpected gives `None`
//! (the caller then falls back to asking the driver), never a panic.

/// `EIATTR_KPARAM_INFO`: one record per kernel parameter.
const KPARAM_INFO: u8 = 0x17;

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

/// The sections of a 64-bit little-endian ELF file: `(name, contents)`.
fn sections(elf: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
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
    let header = |i: usize| -> Option<(u32, &[u8])> {
        let h = shoff.checked_add(i.checked_mul(entsize)?)?;
        let (offset, size) = (u64_at(elf, h.checked_add(0x18)?)?, u64_at(elf, h.checked_add(0x20)?)?);
        let ty = u32_at(elf, h.checked_add(4)?)?;
        // SHT_NOBITS occupies no bytes in the file.
        let data = if ty == 8 { &[][..] } else { elf.get(offset..offset.checked_add(size)?)? };
        Some((u32_at(elf, h)?, data))
    };
    let (_, names) = header(names_index)?;
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let (name_at, data) = header(i)?;
        let tail = names.get(usize::try_from(name_at).ok()?..)?;
        let name = &tail[..tail.iter().position(|&c| c == 0)?];
        out.push((name, data));
    }
    Some(out)
}

/// The number of `EIATTR_KPARAM_INFO` records in one `.nv.info.<symbol>` section.
fn count_params(info: &[u8]) -> Option<usize> {
    let (mut at, mut params) = (0usize, 0usize);
    while at < info.len() {
        let (format, attribute) = (*info.get(at)?, *info.get(at + 1)?);
        at += 2;
        match format {
            FMT_NVAL | FMT_BVAL | FMT_HVAL => {
                u16_at(info, at)?;
                at += 2;
            }
            FMT_SVAL => {
                let size = usize::from(u16_at(info, at)?);
                at += 2;
                info.get(at..at.checked_add(size)?)?;
                at += size;
                if attribute == KPARAM_INFO {
                    params += 1;
                }
            }
            _ => return None,
        }
    }
    (at == info.len()).then_some(params)
}

/// The parameter count of every kernel in `cubin`, by symbol; `None` when `cubin` is not an ELF
/// file this reader understands (a fatbin, PTX, a format change).
///
/// A kernel is a `.text.<symbol>` section; its count is the number of `EIATTR_KPARAM_INFO`
/// records in `.nv.info.<symbol>` (a kernel without parameters may have no such section: 0).
pub(crate) fn param_counts(cubin: &[u8]) -> Option<Vec<(String, usize)>> {
    let sections = sections(cubin)?;
    let mut out = Vec::new();
    for (name, _) in &sections {
        let Some(symbol) = name.strip_prefix(b".text.") else { continue };
        let info = sections.iter().find(|(n, _)| n.strip_prefix(b".nv.info.") == Some(symbol));
        let count = match info {
            Some((_, data)) => count_params(data)?,
            None => 0,
        };
        out.push((String::from_utf8(symbol.to_vec()).ok()?, count));
    }
    Some(out)
}

/// The parameter count of kernel `symbol` among `counts` (from [`param_counts`]).
pub(crate) fn lookup(counts: &[(String, usize)], symbol: &str) -> Option<usize> {
    counts.iter().find(|(s, _)| s == symbol).map(|&(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-built ELF with kernel `k`: an empty `.text.k` and `.nv.info.k` holding `info`.
    fn elf_with(info: &[u8]) -> Vec<u8> {
        let names = b"\0.shstrtab\0.nv.info.k\0.text.k\0";
        let mut elf = vec![0u8; 0x40];
        elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let names_at = elf.len();
        elf.extend_from_slice(names);
        let info_at = elf.len();
        elf.extend_from_slice(info);
        let shoff = elf.len();
        elf[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        elf[0x3A..0x3C].copy_from_slice(&0x40u16.to_le_bytes());
        elf[0x3C..0x3E].copy_from_slice(&4u16.to_le_bytes());
        elf[0x3E..0x40].copy_from_slice(&1u16.to_le_bytes());
        let section = |name: u32, offset: usize, size: usize| {
            let mut h = vec![0u8; 0x40];
            h[0..4].copy_from_slice(&name.to_le_bytes());
            h[4..8].copy_from_slice(&1u32.to_le_bytes());
            h[0x18..0x20].copy_from_slice(&(offset as u64).to_le_bytes());
            h[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
            h
        };
        elf.extend(section(0, 0, 0));
        elf.extend(section(1, names_at, names.len()));
        elf.extend(section(11, info_at, info.len()));
        elf.extend(section(22, info_at, 0));
        elf
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

    #[test]
    fn never_panics_on_damaged_input() {
        let good = elf_with(&hex(K3));
        assert_eq!(param_counts(b"not an elf"), None);
        assert_eq!(param_counts(&[]), None);
        for cut in 0..good.len() {
            let _ = param_counts(&good[..cut]);
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut bad = good.clone();
            let i = (state as usize) % bad.len();
            bad[i] = (state >> 32) as u8;
            let _ = param_counts(&bad);
        }
    }
}
