//! The kernels an ELF image holds, for the tests that check what a link step kept (shared by
//! `tests/link.rs` and `macros/core/tests/nvrtc_build.rs`, which include it by path; no
//! dependencies).

/// The kernels (`.text.NAME` sections) of every ELF image in `blob`: a cubin, or a fatbin of
/// uncompressed cubins (what nvlink and fatbinary make here), one sorted list per image.
pub fn kernels_in_images(blob: &[u8]) -> Vec<Vec<String>> {
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]) as usize;
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let mut images = Vec::new();
    let mut at = 0;
    while let Some(i) = blob[at..].windows(4).position(|w| w == b"\x7fELF") {
        let elf = &blob[at + i..];
        let (shoff, entsize, count, names) =
            (u64_at(elf, 0x28), u16_at(elf, 0x3a), u16_at(elf, 0x3c), u16_at(elf, 0x3e));
        let header = |k: usize| shoff + k * entsize;
        let strtab = u64_at(elf, header(names) + 0x18);
        let mut kernels: Vec<String> = (0..count)
            .filter_map(|k| {
                let name = &elf[strtab + u32_at(elf, header(k))..];
                let name = String::from_utf8_lossy(&name[..name.iter().position(|&c| c == 0)?]).into_owned();
                name.strip_prefix(".text.").map(str::to_string)
            })
            .collect();
        kernels.sort();
        images.push(kernels);
        at += i + shoff + count * entsize;
    }
    images
}
