//! Autotuning (`tune = { ... }`, `NAME::tuned`): the generated tuner and the records API on any
//! machine; on a GPU (ignored tests) the choice, its results, output protection and tuning off.

mod common;

use cuda_embed::{cuda_kernel, tune};
use std::sync::Mutex;

cuda_kernel!(
    r#"
    // Each thread handles ITEMS elements, BLOCK threads per block.
    template <int BLOCK, int ITEMS>
    __global__ void scale(const float* x, float* y, float a, size_t n) {
        size_t base = (size_t)blockIdx.x * BLOCK * ITEMS + threadIdx.x;
        #pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            size_t i = base + (size_t)k * BLOCK;
            if (i < n) y[i] = a * x[i];
        }
    }

    extern "C" __global__ void untuned(float* y) { *y = 1.0f; }
"#,
    tune = {
        kernel = "scale",
        params = ["BLOCK: 128, 256, 512", "ITEMS: 1, 2, 4"],
        block = "BLOCK",
        grid = "cdiv(n, BLOCK * ITEMS)",
        key = "n",
    },
    instances = ["scale<1024, 1>"]
);

cuda_kernel!(
    r#"
    // Accumulates into its output: timing it on the user's buffer would add x many times.
    template <int BLOCK>
    __global__ void accumulate(const float* x, float* y, int n) {
        int i = blockIdx.x * BLOCK + threadIdx.x;
        if (i < n) y[i] += x[i];
    }
"#,
    tune = { params = ["BLOCK: 64, 128, 256, 1024"], block = "BLOCK", grid = "cdiv(n, BLOCK)", key = "n", bucket = "exact" }
);

/// The records directory and the on/off switch are process-wide: one test at a time uses them.
static GLOBAL: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    GLOBAL.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn the_tuner_lists_every_combination_first_parameter_slowest() {
    let labels: Vec<&str> = scale::tuner().variants().collect();
    assert_eq!(labels.len(), 9);
    assert_eq!(labels[0], "BLOCK=128 ITEMS=1");
    assert_eq!(labels[1], "BLOCK=128 ITEMS=2");
    assert_eq!(labels[8], "BLOCK=512 ITEMS=4");
    let spec = scale::tuner().spec();
    assert_eq!(spec.kernel, "scale");
    assert_eq!(spec.scalars, ["n"]);
    assert!(!spec.exact && accumulate::tuner().spec().exact);
    assert_eq!(spec.source.len(), 16);
    // The variants are the template's instances, launchable on their own too.
    let names: Vec<&str> = scale::module().kernel_names().collect();
    assert!(names.contains(&"scale<256, 2>") && names.contains(&"scale<1024, 1>"), "{names:?}");
    // The grid formula, evaluated as the launch does: cdiv(1000, 256 * 2) = 2.
    let cfg = scale::tuner().config(scale::module(), 4, &[1000]).unwrap();
    assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((2, 1, 1), (256, 1, 1), 0));
}

#[test]
fn a_formula_out_of_range_is_an_error_naming_it() {
    // cdiv(2^40, 128) blocks does not fit a grid dimension.
    let e = scale::tuner().config(scale::module(), 0, &[1 << 40]).unwrap_err().to_string();
    assert!(
        e.contains("grid.x formula of variant BLOCK=128 ITEMS=1 is 8589934592") && e.contains("n = 1099511627776"),
        "{e}"
    );
}

fn line(n: i64, winner: &str) -> String {
    tune::Record {
        kernel: "scale".into(),
        source: scale::tuner().spec().source.into(),
        device: tune::Device { name: "Test GPU".into(), cc: (9, 0), sms: 132, driver: 13000 },
        key: vec![("n".into(), n)],
        winner: winner.into(),
        times_us: vec![Some(1.0); 9],
    }
    .to_line()
}

#[test]
fn records_load_export_and_embed() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    tune::set_records_dir(dir.path().join("tune"));
    assert_eq!(tune::records_dir(), dir.path().join("tune"));
    // A bad line is an error naming it, and nothing is added.
    let text = format!("# shipped\n{}\n", line(4096, "BLOCK=256 ITEMS=2"));
    let e = tune::load_records(&format!("{text}not a record\n")).unwrap_err().to_string();
    assert!(e.contains("line 3 is not a tuning record"), "{e}");
    assert!(!tune::records().iter().any(|r| r.device.name == "Test GPU"));
    // Loaded records are the table...
    assert_eq!(tune::load_records(&text).unwrap(), 1);
    assert!(tune::records().iter().any(|r| r.winner == "BLOCK=256 ITEMS=2" && r.key == [("n".to_string(), 4096)]));
    // ...and an export holds them and those on disk, ready for include_str! or the env var.
    tune::record::Store::new(tune::records_dir())
        .write(&tune::Record::parse(&line(1 << 26, "BLOCK=512 ITEMS=4")).unwrap())
        .unwrap();
    let file = dir.path().join("export.txt");
    // (Records tuned by the GPU tests of this process are exported too.)
    let count = tune::export(&file).unwrap();
    let exported = tune::record::parse_all(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(exported.len(), count);
    let test_gpu: Vec<i64> = exported.iter().filter(|r| r.device.name == "Test GPU").map(|r| r.key[0].1).collect();
    assert_eq!(test_gpu, [4096, 1 << 26]);
    assert_eq!(tune::load_records_file(&file).unwrap(), count);
    let e = tune::load_records_file(dir.path().join("missing.txt")).unwrap_err().to_string();
    assert!(e.contains("missing.txt"), "{e}");
}

#[test]
fn the_switch_overrides_the_environment() {
    let _g = lock();
    tune::set_enabled(false);
    assert!(!tune::enabled());
    tune::set_enabled(true);
    assert!(tune::enabled());
}

/// Run by `concurrent_processes_write_whole_records` in child processes.
#[test]
#[ignore = "helper run as a child process"]
fn child_writer() {
    let Some(dir) = std::env::var_os("TUNE_CHILD_DIR") else { return };
    let id: usize = std::env::var("TUNE_CHILD_ID").unwrap().parse().unwrap();
    let store = tune::record::Store::new(dir);
    for i in 0..100 {
        store.write(&tune::Record::parse(&line(1, &format!("W={id}.{i}"))).unwrap()).unwrap();
        store.write(&tune::Record::parse(&line(100 + id as i64, "W=own")).unwrap()).unwrap();
    }
}

#[test]
fn concurrent_processes_write_whole_records() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|id| {
            std::process::Command::new(&exe)
                .args(["--exact", "child_writer", "--ignored", "--quiet"])
                .env("TUNE_CHILD_DIR", dir.path())
                .env("TUNE_CHILD_ID", id.to_string())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let store = tune::record::Store::new(dir.path());
    let shared = tune::Record::parse(&line(1, "x")).unwrap().identity();
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(store.path(&shared)) {
            assert!(tune::Record::parse(text.trim()).is_some(), "torn record: {text:?}");
        }
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert_eq!(store.all().len(), 5);
    assert!(store.read(&shared).is_some_and(|r| r.winner.starts_with("W=")));
}

// ---- GPU ----

use common::gpu;

fn setup_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    tune::set_records_dir(dir.path());
    dir
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tuned_picks_a_variant_whose_result_every_variant_gives() -> cuda_embed::Result<()> {
    let _g = lock();
    let _dir = setup_dir();
    tune::set_enabled(true);
    let stream = gpu();
    for n in [1000usize, 1 << 20] {
        let host = common::data(n, 7);
        let x = stream.clone_htod(&host)?;
        let mut y = stream.alloc_zeros::<f32>(n)?;
        unsafe { scale::tuned(&stream, &x, &mut y, 3.0, n)? };
        let got = stream.clone_dtoh(&y)?;
        let want: Vec<f32> = host.iter().map(|v| 3.0 * v).collect();
        assert_eq!(got, want, "tuned, n = {n}");
        let chosen = scale::tuner().chosen(0, &[n as i64]).expect("a choice was made");
        let record = tune::records()
            .into_iter()
            .find(|r| r.kernel == "scale" && r.key[0].1 == (n as u64).next_power_of_two() as i64);
        let record = record.expect("the tuning was recorded");
        assert_eq!(record.winner, chosen);
        assert_eq!(record.times_us.iter().filter(|t| t.is_some()).count(), 9, "{record:?}");
        println!("n = {n}: {}", record.to_line());
        // Every variant, launched on its own, gives the same result.
        macro_rules! each {
            ($($b:literal, $i:literal);*) => {$({
                let mut z = stream.alloc_zeros::<f32>(n)?;
                let cfg = scale::tuner().config(scale::module(), scale::tuner().variants().position(|l| l == concat!("BLOCK=", $b, " ITEMS=", $i)).unwrap(), &[n as i64])?;
                unsafe { scale::launch::<$b, $i>(&stream, cfg, &x, &mut z, 3.0, n)? };
                assert_eq!(stream.clone_dtoh(&z)?, want, "variant {} {}", $b, $i);
            })*};
        }
        each!(128, 1; 128, 2; 128, 4; 256, 1; 256, 2; 256, 4; 512, 1; 512, 2; 512, 4);
        // A second call is a lookup: the same choice, the same result.
        unsafe { scale::tuned(&stream, &x, &mut y, 3.0, n)? };
        assert_eq!(stream.clone_dtoh(&y)?, want);
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_accumulating_kernel_is_tuned_without_corrupting_its_output() -> cuda_embed::Result<()> {
    let _g = lock();
    let _dir = setup_dir();
    tune::set_enabled(true);
    accumulate::tuner().forget();
    let stream = gpu();
    let n = 1 << 18;
    let xs = common::data(n, 1);
    let ys = common::data(n, 2);
    let x = stream.clone_htod(&xs)?;
    let mut y = stream.clone_htod(&ys)?;
    unsafe { accumulate::tuned(&stream, &x, &mut y, n as i32)? };
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(a, b)| a + b).collect();
    assert_eq!(stream.clone_dtoh(&y)?, want, "y += x must have run exactly once");
    assert!(accumulate::tuner().chosen(0, &[n as i64]).is_some());
    // Tuned again (forgotten, record removed): still exactly once more.
    accumulate::tuner().forget();
    let _dir2 = setup_dir();
    unsafe { accumulate::tuned(&stream, &x, &mut y, n as i32)? };
    let want2: Vec<f32> = want.iter().zip(&xs).map(|(w, a)| w + a).collect();
    assert_eq!(stream.clone_dtoh(&y)?, want2);
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tuning_off_uses_the_record_else_the_first_variant() -> cuda_embed::Result<()> {
    let _g = lock();
    let dir = setup_dir();
    let stream = gpu();
    let n = 4096usize;
    let x = stream.clone_htod(&vec![1.0f32; n])?;
    let mut y = stream.alloc_zeros::<f32>(n)?;
    tune::set_enabled(false);
    // No record: the first listed variant, and nothing timed or written.
    scale::tuner().forget();
    let before = tune::records().len();
    unsafe { scale::tuned(&stream, &x, &mut y, 2.0, n)? };
    assert_eq!(scale::tuner().chosen(0, &[n as i64]), Some("BLOCK=128 ITEMS=1"));
    assert_eq!(tune::records().len(), before);
    assert_eq!(std::fs::read_dir(dir.path()).map(|d| d.count()).unwrap_or(0), 0);
    assert_eq!(stream.clone_dtoh(&y)?, vec![2.0f32; n]);
    // A given record for this device and key: used, still without timing.
    let ctx = stream.context();
    let device = tune::Device {
        name: ctx.name()?,
        cc: ctx.compute_capability()?,
        sms: ctx
            .attribute(cuda_embed::cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        driver: tune::records().first().map_or(0, |r| r.device.driver),
    };
    let mut driver = 0;
    unsafe { cuda_embed::cudarc::driver::sys::cuDriverGetVersion(&mut driver) };
    let record = tune::Record {
        kernel: "scale".into(),
        source: scale::tuner().spec().source.into(),
        device: tune::Device { driver, ..device },
        key: vec![("n".into(), 4096)],
        winner: "BLOCK=512 ITEMS=2".into(),
        times_us: vec![None; 9],
    };
    tune::load_records(&record.to_line())?;
    scale::tuner().forget();
    unsafe { scale::tuned(&stream, &x, &mut y, 5.0, n)? };
    assert_eq!(scale::tuner().chosen(0, &[n as i64]), Some("BLOCK=512 ITEMS=2"));
    assert_eq!(stream.clone_dtoh(&y)?, vec![5.0f32; n]);
    tune::set_enabled(true);
    Ok(())
}

cuda_kernel!(
    r#"
    template <int BLOCK>
    __global__ void fill_two(float* y, int n) {
        int i = blockIdx.x * BLOCK + threadIdx.x;
        if (i < n) y[i] = 2.0f;
    }
"#,
    // A block of 2048 threads cannot launch on any GPU: a record naming it is stale.
    tune = { params = ["BLOCK: 128, 256, 2048"], block = "BLOCK", grid = "cdiv(n, BLOCK)", key = "n", bucket = "exact" }
);

/// The identity of the device of `stream` as records hold it.
fn this_device(stream: &cuda_embed::CudaStream) -> cuda_embed::Result<tune::Device> {
    use cuda_embed::cudarc::driver::sys;
    let ctx = stream.context();
    let mut driver = 0;
    // SAFETY: a valid out-pointer; the driver is loaded (a context exists).
    unsafe { sys::cuDriverGetVersion(&mut driver) };
    Ok(tune::Device {
        name: ctx.name()?,
        cc: ctx.compute_capability()?,
        sms: ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        driver,
    })
}

/// A record (given, or on disk) whose winner cannot launch with the arguments, here a block of
/// 2048 threads: `tuned` drops it, says so on stderr and chooses the key again (timed with
/// tuning on, the first variant with it off), instead of returning the launch's error (which it
/// did before).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_recorded_winner_that_cannot_launch_is_chosen_again() -> cuda_embed::Result<()> {
    let _g = lock();
    let dir = setup_dir();
    let stream = gpu();
    let n = 4096usize;
    let stale = tune::Record {
        kernel: "fill_two".into(),
        source: fill_two::tuner().spec().source.into(),
        device: this_device(&stream)?,
        key: vec![("n".into(), n as i64)],
        winner: "BLOCK=2048".into(),
        times_us: vec![None; 3],
    };
    let ours = |r: &tune::Record| r.kernel == "fill_two" && r.key == [("n".to_string(), n as i64)];
    for (on, from_disk) in [(true, false), (false, false), (true, true)] {
        tune::set_enabled(on);
        if from_disk {
            tune::record::Store::new(dir.path()).write(&stale).unwrap();
        } else {
            tune::load_records(&stale.to_line())?;
        }
        fill_two::tuner().forget();
        let mut y = stream.alloc_zeros::<f32>(n)?;
        // SAFETY: every variant writes `n` elements of `y` at most.
        unsafe { fill_two::tuned(&stream, &mut y, n as i32)? };
        assert_eq!(stream.clone_dtoh(&y)?, vec![2.0f32; n], "tuning on: {on}");
        let chosen = fill_two::tuner().chosen(0, &[n as i64]).expect("a choice");
        if on {
            assert_ne!(chosen, "BLOCK=2048");
            let record = tune::records().into_iter().find(ours).expect("the key was tuned again and recorded");
            assert_eq!(record.winner, chosen, "the stale record was replaced");
            let on_disk = tune::record::Store::new(dir.path()).read(&stale.identity()).expect("written");
            assert_eq!(on_disk.winner, chosen);
        } else {
            assert_eq!(chosen, "BLOCK=128", "tuning off: the first variant");
        }
        // The next call is a lookup of the new choice.
        let mut z = stream.alloc_zeros::<f32>(n)?;
        // SAFETY: as above.
        unsafe { fill_two::tuned(&stream, &mut z, n as i32)? };
        assert_eq!(stream.clone_dtoh(&z)?, vec![2.0f32; n]);
    }
    tune::set_enabled(true);
    Ok(())
}

#[test]
fn the_compiled_formulas_agree_with_the_reference() {
    for v in 0..9 {
        for n in [0i64, 1, 127, 128, 1000, 4096, 1 << 26, 1 << 40, i64::MAX] {
            let reference = scale::tuner().config(scale::module(), v, &[n]).ok();
            let compiled = scale::tuned_config(v, &[n]);
            assert_eq!(
                compiled.map(|c| (c.grid_dim, c.block_dim, c.shared_mem_bytes)),
                reference.map(|c| (c.grid_dim, c.block_dim, c.shared_mem_bytes)),
                "variant {v}, n = {n}"
            );
        }
    }
}

cuda_kernel!(
    r#"
    // Spins for `ns` nanoseconds of the GPU's global timer.
    extern "C" __global__ void spin_ns(unsigned long long ns) {
        unsigned long long start, now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
        do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
    }
"#
);

/// One thread spinning for `ns` nanoseconds.
fn spin(stream: &std::sync::Arc<cuda_embed::CudaStream>, ns: u64) -> cuda_embed::Result<()> {
    let cfg = cuda_embed::LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: the kernel touches no memory.
    unsafe { spin_ns::launch(stream, cfg, ns) }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn queued_timing_measures_the_kernels_releases_on_error_and_reports_a_timeout() -> cuda_embed::Result<()> {
    let _g = lock();
    let stream = gpu();
    // Loaded and launched once outside any timing: a batch queued behind the blocking kernel
    // should not be where a module is loaded.
    spin(&stream, 0)?;
    stream.synchronize()?;
    // 20 kernels of 5 us each, queued behind the blocking kernel: at least 5 us each, plus the
    // GPU's gap between kernels and the global timer's steps (6.7 us measured on an H100). What
    // this checks is that the batch's time is the kernels', not the wait of the blocking kernel
    // (up to 200 ms, 10,000 us per kernel here): the upper bound sits far from both, so the
    // test says nothing about speed and does not depend on the machine's.
    for _ in 0..2 {
        let t = tune::time_queued(&stream, || {
            for _ in 0..20 {
                spin(&stream, 5000)?;
            }
            Ok(())
        })?;
        let each = t.ms * 1e3 / 20.0;
        println!("queued spin_ns(5000): {each:.2} us per launch");
        assert!(!t.with_gaps);
        // Under compute-sanitizer every kernel is instrumented (22 us measured for these): only
        // the lower bound holds there.
        let sanitized = std::env::var_os("NV_SANITIZER_INJECTION_PORT_RANGE_BEGIN").is_some();
        let upper = if sanitized { f64::INFINITY } else { 500.0 };
        assert!(each >= 5.0 && each < upper, "{each} us per 5 us kernel");
    }
    // An error in the batch is returned, and the blocking kernel was released at once: the next
    // timing does not wait for the timeout.
    let e = tune::time_queued(&stream, || {
        spin(&stream, 1000)?;
        Err(cuda_embed::Error::Tune { what: "the test".into(), cause: "a failing batch".into(), fix: None })
    });
    assert!(e.unwrap_err().to_string().contains("a failing batch"));
    stream.synchronize()?;
    let started = std::time::Instant::now();
    let t = tune::time_queued(&stream, || spin(&stream, 1000))?;
    assert!(!t.with_gaps && started.elapsed().as_millis() < 100, "{:?} after a failed batch", started.elapsed());
    // A batch that keeps the host longer than the timeout: the kernel gives up and says so.
    let t = tune::time_queued(&stream, || {
        std::thread::sleep(std::time::Duration::from_millis(tune::queued::TIMEOUT_MS + 100));
        spin(&stream, 1000)
    })?;
    assert!(t.with_gaps, "{t:?}");
    Ok(())
}
