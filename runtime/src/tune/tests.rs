use super::expr::{eval, Op};
use super::record::{identity, parse_all, write_atomic, Device, Record, Store};
use super::*;

fn device() -> Device {
    Device { name: "NVIDIA H100 80GB HBM3".into(), cc: (9, 0), sms: 132, driver: 13000 }
}

fn record(n: i64, winner: &str) -> Record {
    Record {
        kernel: "scale".into(),
        source: "0123456789abcdef".into(),
        device: device(),
        key: vec![("n".into(), n)],
        winner: winner.into(),
        times_us: vec![Some(12.5), None, Some(10.25)],
    }
}

#[test]
fn formulas_evaluate_with_checked_steps() {
    use Op::*;
    // cdiv(n, BLOCK * ITEMS) with n = 1000, BLOCK = 128, ITEMS = 2
    let grid = [Scalar(0), Param(0), Param(1), Mul, CeilDiv];
    assert_eq!(eval(&grid, &[1000], &[128, 2]), Some(4));
    assert_eq!(eval(&grid, &[1024], &[128, 2]), Some(4));
    assert_eq!(eval(&grid, &[1025], &[128, 2]), Some(5));
    // (n + B - 1) / B, min, max, rem
    let f = [Scalar(0), Param(0), Add, Const(1), Sub, Param(0), Div];
    assert_eq!(eval(&f, &[1000], &[256]), Some(4));
    assert_eq!(eval(&[Const(7), Const(3), Min, Const(5), Max], &[], &[]), Some(5));
    assert_eq!(eval(&[Const(7), Const(3), Rem], &[], &[]), Some(1));
    // Division by zero, overflow, bad programs: None.
    assert_eq!(eval(&[Const(1), Const(0), Div], &[], &[]), None);
    assert_eq!(eval(&[Const(i64::MAX), Const(2), Mul], &[], &[]), None);
    assert_eq!(eval(&[Add], &[], &[]), None);
    assert_eq!(eval(&[Const(1), Const(2)], &[], &[]), None);
    assert_eq!(eval(&[Scalar(3)], &[1], &[]), None);
}

#[test]
fn key_values_round_up_to_powers_of_two() {
    assert_eq!(bucket(0), 0);
    assert_eq!(bucket(1), 1);
    assert_eq!(bucket(3), 4);
    assert_eq!(bucket(4096), 4096);
    assert_eq!(bucket(4097), 8192);
    assert_eq!(bucket(-5), -5);
    assert_eq!(bucket(i64::MAX), i64::MAX);
}

#[test]
fn a_record_is_one_line_that_reads_back() {
    let r = record(1 << 26, "BLOCK=256 ITEMS=2");
    let line = r.to_line();
    assert!(!line.contains('\n'));
    assert!(
        line.starts_with("cuda-embed-tune v1 | kernel=scale | source=0123456789abcdef | device=NVIDIA H100"),
        "{line}"
    );
    assert!(line.ends_with("| winner=BLOCK=256 ITEMS=2 | times_us=12.50 - 10.25"), "{line}");
    assert_eq!(Record::parse(&line), Some(r.clone()));
    // The identity leaves the result out.
    assert_eq!(r.identity(), identity("scale", "0123456789abcdef", &device(), &[("n".into(), 1 << 26)]));
    assert!(!r.identity().contains("winner"));
    // Anything else does not parse.
    for bad in [
        "",
        "cuda-embed-tune v2 | kernel=scale",
        &line.replace("cc=9.0", "cc=nine"),
        &line.replace(" | times_us=12.50 - 10.25", ""),
        &format!("{line} | extra=1"),
        &line.replace("winner=BLOCK=256 ITEMS=2", "winner="),
    ] {
        assert_eq!(Record::parse(bad), None, "{bad}");
    }
    // A separator inside a value is replaced, so the line still reads back.
    let mut odd = record(8, "A=1");
    odd.device.name = "GPU | with bar".into();
    assert_eq!(Record::parse(&odd.to_line()).map(|r| r.device.name), Some("GPU / with bar".into()));
}

#[test]
fn files_of_records_skip_comments_and_name_bad_lines() {
    let text = format!("# header\n\n{}\n{}\n", record(4, "A").to_line(), record(8, "B").to_line());
    assert_eq!(parse_all(&text).map(|v| v.len()), Ok(2));
    assert_eq!(parse_all(&format!("{text}garbage\n")).map(|v| v.len()), Err(5));
}

#[test]
fn the_store_writes_reads_and_rewrites_a_corrupt_record() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("tune"));
    let r = record(1024, "BLOCK=128 ITEMS=1");
    assert_eq!(store.read(&r.identity()), None);
    let file = store.write(&r).unwrap();
    assert!(file.extension().is_some_and(|e| e == "tune"));
    assert_eq!(store.read(&r.identity()), Some(r.clone()));
    // Another key is another file.
    let other = record(2048, "BLOCK=512 ITEMS=4");
    assert_ne!(store.path(&other.identity()), file);
    // Corrupt: truncated, garbage, or someone else's record under this name: a miss.
    std::fs::write(&file, &r.to_line()[..40]).unwrap();
    assert_eq!(store.read(&r.identity()), None);
    std::fs::write(&file, "\u{0}\u{1}garbage").unwrap();
    assert_eq!(store.read(&r.identity()), None);
    std::fs::write(&file, other.to_line()).unwrap();
    assert_eq!(store.read(&r.identity()), None);
    assert!(store.all().is_empty(), "a record filed under another identity's name is not listed");
    // ...and the next write replaces it.
    store.write(&r).unwrap();
    assert_eq!(store.read(&r.identity()), Some(r.clone()));
    store.write(&other).unwrap();
    assert_eq!(store.all().len(), 2);
    // No temporary files are left behind.
    let names: Vec<String> =
        std::fs::read_dir(store.dir()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
    assert!(names.iter().all(|n| n.ends_with(".tune")), "{names:?}");
}

#[test]
fn concurrent_writers_never_leave_a_torn_record() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    // All threads write key 1 (the same file) and a key of their own.
                    store.write(&record(1, &format!("W={t}.{i}"))).unwrap();
                    store.write(&record(100 + t, "W=own")).unwrap();
                    let seen = store.read(&record(1, "").identity());
                    assert!(seen.is_some_and(|r| r.winner.starts_with("W=")), "torn or missing record");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(store.all().len(), 9);
}

#[test]
fn write_atomic_replaces_a_file_whole() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("sub").join("records.txt");
    write_atomic(&f, "one\n").unwrap();
    write_atomic(&f, "two\n").unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "two\n");
    assert_eq!(std::fs::read_dir(f.parent().unwrap()).unwrap().count(), 1);
}

/// The blocking kernel's PTX is checked by the real assembler for the oldest architecture it
/// names and a current one (the driver JIT-compiles the same text at the first timing).
#[test]
fn the_blocking_kernel_assembles() {
    let roots = ["CUDA_EMBED_TOOLKIT", "CUDA_PATH", "CUDA_HOME"].iter().filter_map(std::env::var_os);
    let ptxas = roots
        .map(|r| std::path::PathBuf::from(r).join("bin").join("ptxas"))
        .find(|p| p.exists())
        .unwrap_or_else(|| std::path::PathBuf::from("ptxas"));
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("blocker.ptx");
    std::fs::write(&src, queued::BLOCKER_PTX.trim_end_matches('\0')).unwrap();
    for arch in ["sm_75", "sm_90"] {
        let out = std::process::Command::new(&ptxas)
            .arg(format!("-arch={arch}"))
            .arg(&src)
            .arg("-o")
            .arg(dir.path().join(format!("{arch}.cubin")))
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run {} ({e}): run the tests through scripts/with-cuda", ptxas.display())
            });
        assert!(out.status.success(), "ptxas {arch}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(dir.path().join(format!("{arch}.cubin")).metadata().unwrap().len() > 0);
    }
    // One entry point, NUL-terminated for cuModuleLoadData.
    assert!(queued::BLOCKER_PTX.ends_with("}\n\0"));
    assert_eq!(queued::BLOCKER_PTX.matches(".entry").count(), 1);
}
