//! The bounds-check report of a Rust-syntax kernel: its `__device__` slot read after a launch.
//! Support for generated code (`NAME::check_errors`), not a public API.

use crate::{CudaStream, Error, Global, Result};

/// Reads kernel `kernel`'s out-of-bounds slot (`[Rust line, index, length]`, line 0 when
/// nothing went wrong) after waiting for `stream`, clears it, and reports the recorded index.
#[doc(hidden)]
pub fn check_bounds(slot: &Global<u64>, stream: &CudaStream, kernel: &str, file: &str) -> Result<()> {
    let v = slot.read(stream)?;
    match v.as_slice() {
        [0, ..] => Ok(()),
        [line, index, len] => {
            slot.write(stream, &[0, 0, 0])?;
            Err(Error::IndexOutOfBounds {
                kernel: kernel.to_string(),
                location: format!("{file}:{line}"),
                index: *index,
                len: *len,
            })
        }
        other => Err(Error::Global {
            name: "__ce_oob",
            origin: "a #[cuda_embed::kernel]",
            device: stream.context().ordinal(),
            cause: format!("the bounds-check slot of kernel `{kernel}` holds {} words, expected 3", other.len()),
            fix: None,
        }),
    }
}
