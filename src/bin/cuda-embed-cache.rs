//! `cuda-embed-cache usage|clear|dir`: the disk cache of compiled kernels from the command line
//! (see `cuda_embed::cache`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let arg = std::env::args().nth(1).unwrap_or_default();
    match arg.as_str() {
        "usage" => println!("{}", cuda_embed::cache::usage()),
        "dir" => println!("{}", cuda_embed::cache::root().display()),
        "clear" => match cuda_embed::cache::clear() {
            Ok(freed) => {
                println!("cleared {}: freed {:.1} MiB", cuda_embed::cache::root().display(), freed as f64 / 1048576.0)
            }
            Err(e) => {
                eprintln!("cuda-embed-cache: cannot clear {}: {e}", cuda_embed::cache::root().display());
                return ExitCode::FAILURE;
            }
        },
        _ => {
            eprintln!(
                "usage: cuda-embed-cache usage|clear|dir\n\n  usage  entries and bytes in the cache, and its cap ({})\n  clear  \
                 delete every entry\n  dir    print the cache directory (CUDA_EMBED_CACHE_DIR, XDG_CACHE_HOME, HOME)",
                cuda_embed::cache::MAX_VAR
            );
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
