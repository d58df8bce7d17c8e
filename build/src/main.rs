//! `cuda-embed-build`: a crate's kernels prebuilt from the command line, and its build cache
//! entries exported to one file and imported elsewhere (a CI cache).

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: cuda-embed-build prebuild [--jobs N] [PACKAGE_DIR]
       cuda-embed-build export [--jobs N] BUNDLE [PACKAGE_DIR]
       cuda-embed-build import BUNDLE

  prebuild  compile the kernel macros of the package (default: the current folder) in parallel
            into the build cache, as its build script's cuda_embed_build::prebuild() does
  export    write the cache entries the package's kernels use to the file BUNDLE (run it after
            a build, in the build's environment)
  import    add the entries of BUNDLE to the cache (all checked first: a foreign or corrupt
            file is refused and changes nothing)

The cache is CUDA_EMBED_CACHE_DIR, else $XDG_CACHE_HOME/cuda-embed, else ~/.cache/cuda-embed.";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut jobs = 0;
    if let Some(i) = args.iter().position(|a| a == "--jobs" || a == "-j") {
        match args.get(i + 1).and_then(|n| n.parse().ok()) {
            Some(n) => jobs = n,
            None => return usage(),
        }
        args.drain(i..i + 2);
    }
    let dir = |i: usize| args.get(i).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    match args.first().map(String::as_str) {
        Some("prebuild") if args.len() <= 2 => {
            let report = cuda_embed_build::Prebuild::package(dir(1)).jobs(jobs).cargo_output(false).run();
            println!("{report}");
            for f in &report.unreadable {
                eprintln!("cuda-embed-build: could not read {f}");
            }
            if report.skipped.is_some() {
                return ExitCode::FAILURE;
            }
        }
        Some("export") if (2..=3).contains(&args.len()) => {
            match cuda_embed_build::export(&dir(2), &PathBuf::from(&args[1]), jobs) {
                Ok((report, moved)) => println!("{report}\nexported {moved} to {}", args[1]),
                Err(e) => {
                    eprintln!("cuda-embed-build: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        Some("import") if args.len() == 2 => match cuda_embed_source::cache::import(&PathBuf::from(&args[1])) {
            Ok(moved) => println!("imported {moved} into {}", cuda_embed_source::cache::root().display()),
            Err(e) => {
                eprintln!("cuda-embed-build: {e}");
                return ExitCode::FAILURE;
            }
        },
        _ => return usage(),
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
}
