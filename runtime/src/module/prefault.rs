//! Mapping the code of a first load ahead: the pages of this library's code that the first launch
//! on a device runs are mapped in one call (`MADV_POPULATE_READ`) when a context is first made,
//! so that the first launch takes no page faults in them.

use crate::module::load::{fatbin_in_place, load, load_any, static_limit};
use std::ffi::c_void;
use std::sync::atomic::Ordering;

/// Maps (once per process) the pages of this library's code that a first launch runs and the
/// process has not run before: the launch's full path, the registry's and this file's loading
/// code, the NVRTC disk cache's lookup, and what lies between them (the generic code they
/// call). A first launch would otherwise take page faults in them, one per 64 KiB of code it
/// reaches (a few microseconds each on a virtual machine); the kernel maps them here instead, in
/// one call, from the page cache. Nothing is read or changed: a system without
/// `MADV_POPULATE_READ` (Linux before 5.14) refuses the call, and the first launch takes its page
/// faults as before. Whether the pages were mapped.
pub(crate) fn map_first_load_code(elsewhere: &[usize]) -> bool {
    // 0: not tried yet, 1: not mapped (refused, or no such call here), 2: mapped.
    static STATE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let mapped = populate(first_load_code(elsewhere));
            STATE.store(1 + mapped as u8, Ordering::Relaxed);
            mapped
        }
        state => state == 2,
    }
}

/// The range of code [`map_first_load_code`] maps: from the lowest to the highest of the
/// functions a first load runs, 32 KiB more on each side, the start aligned to 64 KiB (a page
/// boundary whatever the page size). `None` when they lie too far apart to be one library's.
fn first_load_code(elsewhere: &[usize]) -> Option<(usize, usize)> {
    const MARGIN: usize = 32 * 1024;
    let own = [
        fatbin_in_place as *const () as usize,
        load as *const () as usize,
        load_any as *const () as usize,
        static_limit as *const () as usize,
        crate::module::registry::load_slow_address(),
        cuda_embed_source::cache::Store::read as *const () as usize,
    ];
    let code: Vec<usize> = own.iter().chain(elsewhere).copied().collect();
    let (lo, hi) = (code.iter().min().copied()?, code.iter().max().copied()?);
    let start = lo.saturating_sub(MARGIN) & !0xffff;
    let end = hi.saturating_add(MARGIN);
    (end - start <= 4 << 20).then_some((start, end))
}

/// Asks the kernel to map `range` of this process's code (`MADV_POPULATE_READ`); whether it did.
#[cfg(target_os = "linux")]
fn populate(range: Option<(usize, usize)>) -> bool {
    unsafe extern "C" {
        fn madvise(addr: *mut c_void, len: usize, advice: std::ffi::c_int) -> std::ffi::c_int;
    }
    const MADV_POPULATE_READ: std::ffi::c_int = 22;
    let Some((start, end)) = range else { return false };
    // SAFETY: `MADV_POPULATE_READ` only fills the page tables of the mappings in the range, as
    // reading them would, without reading: no memory changes. A range that is not all mapped
    // is refused (ENOMEM) after what is mapped was; a kernel without the advice refuses it
    // (EINVAL). Either way nothing else happens.
    unsafe { madvise(start as *mut c_void, end - start, MADV_POPULATE_READ) == 0 }
}

/// Elsewhere the first launch takes its page faults.
#[cfg(not(target_os = "linux"))]
fn populate(_range: Option<(usize, usize)>) -> bool {
    false
}

#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod tests {
    /// Whether the page holding `addr` is in this process's page table (`/proc/self/pagemap`,
    /// bit 63 of the page's entry; 4 KiB pages).
    fn present(addr: usize) -> Option<bool> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = std::fs::File::open("/proc/self/pagemap").ok()?;
        f.seek(SeekFrom::Start((addr / 4096 * 8) as u64)).ok()?;
        let mut entry = [0u8; 8];
        f.read_exact(&mut entry).ok()?;
        Some(u64::from_le_bytes(entry) >> 63 == 1)
    }

    /// Where the kernel takes the advice, every page of the first load's code is mapped after
    /// it (the first launch then takes no page faults in it); where it does not, nothing fails.
    #[test]
    fn the_first_load_code_is_mapped_ahead() {
        let (start, end) = super::first_load_code(&crate::first_load_elsewhere()).expect("one library's code");
        assert!(end > start && end - start < 4 << 20, "{start:#x}..{end:#x}");
        if !super::map_first_load_code(&crate::first_load_elsewhere()) {
            eprintln!("MADV_POPULATE_READ refused here (Linux before 5.14?): nothing to check");
            return;
        }
        assert!(super::map_first_load_code(&crate::first_load_elsewhere()), "the answer is kept");
        for page in (start..end).step_by(4096) {
            if let Some(p) = present(page) {
                assert!(p, "page {page:#x} of {start:#x}..{end:#x} is not mapped");
            }
        }
    }
}
