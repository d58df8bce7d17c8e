//! One tuned kernel at run time: the variants the macro built, the in-memory choice per device
//! and key (the fast path: one read-locked hash lookup), and the first-use timing (the slow
//! path) that fills it.
//!
//! # How the user's buffers are protected while variants are timed
//!
//! Before timing, every buffer the kernel may write (each `T*` parameter) is copied to a scratch
//! allocation of the same size, and all timing launches run on those scratch copies instead; the
//! user's buffers are touched by exactly one launch, the winner's, after the timing. So a kernel
//! that accumulates (`y[i] += x[i]`) or reads what it writes gives the result of one launch. The
//! scratch memory (the sum of the output buffers' sizes) is freed when the timing ends; if it
//! cannot be allocated, the first variant is used without tuning (and nothing is recorded).
//! Pointer-to-pointer parameters (raw device addresses) cannot be followed and are not
//! protected.
//!
//! # What is timed
//!
//! Each sample is a batch of back-to-back launches of one variant queued behind a blocking
//! kernel ([`time_queued`](super::queued::time_queued)), so it measures the variant's GPU
//! execution; plain events around launches would measure the host's launch path instead
//! whenever a kernel takes less time than its launch (a few microseconds), and rank variants
//! by noise there.

use super::expr::{eval, Op};
use super::record::{Device, Record};
use super::state;
use crate::error::{Error, Result};
use crate::module::kernel::KernelRef;
use crate::module::registry::Module;
use cudarc::driver::{sys, CudaContext, CudaStream, LaunchConfig};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// The most key values a tuned kernel may name.
pub const MAX_KEY: usize = 4;

/// One variant: a template instance with its launch settings.
#[derive(Debug)]
pub struct Variant {
    /// `BLOCK=256 ITEMS=2`: how records and logs name it.
    pub label: &'static str,
    /// Index of the instance's kernel in the module.
    pub index: usize,
    /// The value of each tune parameter (integers and bools; 0 for a type), for the formulas.
    pub values: &'static [i64],
}

/// What the macro embeds for a tuned kernel.
#[derive(Debug)]
pub struct TuneSpec {
    /// The kernel's C++ name.
    pub kernel: &'static str,
    /// Hash of the source and the tune declaration.
    pub source: &'static str,
    /// The variants, in declaration order (the first is the fallback).
    pub variants: &'static [Variant],
    /// The names of the scalar arguments the formulas and the key read, in the order the
    /// launcher passes them.
    pub scalars: &'static [&'static str],
    /// The key: indices into `scalars`.
    pub key: &'static [u16],
    /// Whether key values are used as they are (`bucket = "exact"`) instead of rounded up to a
    /// power of two.
    pub exact: bool,
    /// Grid dimensions (x, y, z); an empty formula is 1.
    pub grid: [&'static [Op]; 3],
    /// Block dimensions (x, y, z); an empty formula is 1.
    pub block: [&'static [Op]; 3],
    /// Dynamic shared memory bytes per block; empty is 0.
    pub shared: &'static [Op],
    /// The formulas as written, for errors.
    pub formulas: &'static str,
}

/// The in-memory choice: device ordinal and bucketed key values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    device: usize,
    values: [i64; MAX_KEY],
}

/// A small multiplicative hasher for the few integers of a [`Key`].
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

type Choices = HashMap<Key, usize, BuildHasherDefault<KeyHasher>>;

/// Launches one variant: its kernel, its configuration, the output addresses to use.
type LaunchFn<'a> = dyn FnMut(KernelRef, &LaunchConfig, &[u64]) -> Result<()> + 'a;

/// Entries of the lock-free table in front of the choices.
const SLOTS: usize = 64;

/// The run-time side of one tuned kernel (`NAME::tuner()`).
///
/// A call finds its choice in a small direct-mapped table of atomics (one load: the key's
/// 64-bit hash, its low byte replaced by the variant), backed by the complete table under a
/// read-write lock. Two keys whose hashes agree in 56 bits would share a choice: a slower
/// variant at worst, never a wrong result, since every variant computes the same thing.
pub struct Tuner {
    spec: &'static TuneSpec,
    slots: [AtomicU64; SLOTS],
    chosen: RwLock<Choices>,
    tuning: Mutex<()>,
    /// The keys whose choice came from a record (given or on disk), not from timing here: a
    /// launch of such a choice that fails tunes the key again ([`Tuner::launch`]).
    from_record: Mutex<Vec<Key>>,
}

impl std::fmt::Debug for Tuner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tuner").field("kernel", &self.spec.kernel).finish()
    }
}

/// Rounds a key value up to the next power of two (values below 1 are kept).
pub fn bucket(v: i64) -> i64 {
    if v <= 1 {
        v
    } else {
        (v as u64).checked_next_power_of_two().map_or(i64::MAX, |p| p.min(i64::MAX as u64) as i64)
    }
}

impl Tuner {
    /// The tuner of `spec` (generated code only).
    pub const fn new(spec: &'static TuneSpec) -> Tuner {
        Tuner {
            spec,
            slots: [const { AtomicU64::new(0) }; SLOTS],
            chosen: RwLock::new(HashMap::with_hasher(BuildHasherDefault::new())),
            tuning: Mutex::new(()),
            from_record: Mutex::new(Vec::new()),
        }
    }

    /// What the macro declared.
    pub fn spec(&self) -> &'static TuneSpec {
        self.spec
    }

    /// The labels of the variants, in declaration order.
    pub fn variants(&self) -> impl Iterator<Item = &'static str> {
        self.spec.variants.iter().map(|v| v.label)
    }

    /// Forgets every choice made in this process, so the next call looks its key up again
    /// (records given or on disk, else tunes).
    pub fn forget(&self) {
        if let Ok(mut m) = self.chosen.write() {
            m.clear();
        }
        for s in &self.slots {
            s.store(0, Ordering::Relaxed);
        }
        self.from_record.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The variant chosen so far on device `ordinal` for these scalar arguments (in the order
    /// of [`TuneSpec::scalars`]), if any.
    pub fn chosen(&self, ordinal: usize, scalars: &[i64]) -> Option<&'static str> {
        let key = self.key(ordinal, scalars);
        let v = *self.chosen.read().ok()?.get(&key)?;
        Some(self.spec.variants[v].label)
    }

    /// The key's hash with its low byte cleared (for the slot entry).
    #[inline(always)]
    fn hash(key: &Key) -> u64 {
        let mut h = KeyHasher::default();
        h.write_usize(key.device);
        for v in key.values {
            h.write_i64(v);
        }
        // One more round so the low bits (the slot index) depend on every value.
        let x = h.finish();
        (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) & !0xFF
    }

    #[inline(always)]
    fn key(&self, device: usize, scalars: &[i64]) -> Key {
        let mut values = [0i64; MAX_KEY];
        for (slot, &k) in values.iter_mut().zip(self.spec.key) {
            let v = scalars.get(k as usize).copied().unwrap_or(0);
            *slot = if self.spec.exact { v } else { bucket(v) };
        }
        Key { device, values }
    }

    /// Launches the chosen variant (choosing it first if this device and key are new).
    /// `outputs` are the device addresses of the buffers the kernel may write and `bytes` their
    /// sizes; `config` is the formulas compiled to Rust (`None` when a step fails: the formulas
    /// are then evaluated again here to say which); `launch` launches one variant with its
    /// configuration and the output addresses to use in place of the user's.
    ///
    /// When the choice came from a record (given, or on disk) and its variant cannot be
    /// configured or launched with these arguments (a stale or foreign record), the record is
    /// dropped, a line on stderr says so, and the key is chosen again as if it had none (timed,
    /// or the first variant with tuning off); the error of a variant that was timed here, or of
    /// the new choice, is returned as it is.
    ///
    /// # Safety
    /// `launch` must launch the given kernel with the given configuration and its arguments,
    /// the outputs replaced by the given addresses, which hold as many bytes as `bytes` says.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch<C, F>(
        &self,
        module: &'static Module,
        stream: &CudaStream,
        scalars: &[i64],
        outputs: &[u64],
        bytes: &[usize],
        config: C,
        mut launch: F,
    ) -> Result<()>
    where
        C: Fn(usize, &[i64]) -> Option<LaunchConfig>,
        F: FnMut(KernelRef, &LaunchConfig, &[u64]) -> Result<()>,
    {
        let key = self.key(stream.context().ordinal(), scalars);
        let h = Self::hash(&key);
        let e = self.slots[(h >> 8) as usize % SLOTS].load(Ordering::Relaxed);
        let v = if e & 0xFF != 0 && e & !0xFF == h {
            (e & 0xFF) as usize - 1
        } else {
            // SAFETY: forwarded from the caller.
            unsafe { self.lookup(module, stream, key, h, scalars, outputs, bytes, &mut launch)? }
        };
        let r = match config(v, scalars) {
            Some(c) => Ok(c),
            None => self.config(module, v, scalars),
        }
        // SAFETY: `index` is the variant's kernel in `module` (generated together).
        .and_then(|cfg| launch(unsafe { KernelRef::new(module, self.spec.variants[v].index) }, &cfg, outputs));
        match r {
            Ok(()) => Ok(()),
            // SAFETY: forwarded from the caller.
            Err(e) => unsafe { self.after_failure(module, stream, key, h, v, e, scalars, outputs, bytes, &mut launch) },
        }
    }

    /// Variant `v`, the choice of `key`, failed with `error`. A choice read from a record whose
    /// variant cannot be configured (a formula's [`Error::Tune`]) or launched (a refused
    /// configuration's [`Error::Launch`]) is dropped with its record and the key chosen again
    /// (then launched once, its error returned); any other choice or error returns `error` (a
    /// driver error is no sign of a stale record). Nothing was queued by the refused launch, so
    /// launching again is safe.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn after_failure(
        &self,
        module: &'static Module,
        stream: &CudaStream,
        key: Key,
        h: u64,
        v: usize,
        error: Error,
        scalars: &[i64],
        outputs: &[u64],
        bytes: &[usize],
        launch: &mut LaunchFn<'_>,
    ) -> Result<()> {
        if !matches!(error, Error::Launch { .. } | Error::Tune { .. }) {
            return Err(error);
        }
        let v = {
            let _one_at_a_time = self.tuning.lock().unwrap_or_else(|p| p.into_inner());
            let mut from_record = self.from_record.lock().unwrap_or_else(|p| p.into_inner());
            let Some(at) = from_record.iter().position(|k| *k == key) else {
                return Err(error);
            };
            from_record.swap_remove(at);
            drop(from_record);
            if let Ok(mut m) = self.chosen.write() {
                m.remove(&key);
            }
            let slot = &self.slots[(h >> 8) as usize % SLOTS];
            if slot.load(Ordering::Relaxed) & !0xFF == h {
                slot.store(0, Ordering::Relaxed);
            }
            let identity = self.identity(stream, &key)?;
            state::forget(&identity);
            eprintln!("{}", self.stale_line(module, v, &key, &error));
            // SAFETY: forwarded from the caller.
            unsafe { self.choose_locked(module, stream, key, scalars, outputs, bytes, launch, false)? }
        };
        let cfg = self.config(module, v, scalars)?;
        // SAFETY: `index` is the variant's kernel in `module` (generated together).
        launch(unsafe { KernelRef::new(module, self.spec.variants[v].index) }, &cfg, outputs)
    }

    /// The stderr line saying that a recorded choice cannot launch and the key is chosen again.
    fn stale_line(&self, module: &Module, v: usize, key: &Key, error: &Error) -> String {
        format!(
            "cuda-embed tune: the recorded winner [{}] of `{}` of {}, {}, cannot launch ({error}): the record is \
             dropped and this key is {} again",
            self.spec.variants[v].label,
            self.spec.kernel,
            module.origin(),
            self.key_text(key),
            if super::enabled() { "tuned" } else { "given the first variant (tuning is off)" }
        )
    }

    /// `n~4096, m~64` (the key's bucketed values), or `no key`.
    fn key_text(&self, key: &Key) -> String {
        let parts: Vec<String> = self
            .spec
            .key
            .iter()
            .zip(key.values)
            .map(|(&k, v)| format!("{}~{v}", self.spec.scalars[k as usize]))
            .collect();
        if parts.is_empty() {
            "no key".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// The names and bucketed values of the key, as records hold them.
    fn key_names(&self, key: &Key) -> Vec<(String, i64)> {
        self.spec.key.iter().zip(key.values).map(|(&k, v)| (self.spec.scalars[k as usize].to_string(), v)).collect()
    }

    /// The record identity of `key` on `stream`'s device.
    fn identity(&self, stream: &CudaStream, key: &Key) -> Result<String> {
        let device = state::device(stream.context())?;
        Ok(super::record::identity(self.spec.kernel, self.spec.source, &device, &self.key_names(key)))
    }

    /// A slot miss: the complete table, else [`Tuner::choose`]; the slot is filled either way.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn lookup(
        &self,
        module: &'static Module,
        stream: &CudaStream,
        key: Key,
        h: u64,
        scalars: &[i64],
        outputs: &[u64],
        bytes: &[usize],
        launch: &mut LaunchFn<'_>,
    ) -> Result<usize> {
        let hit = self.chosen.read().ok().and_then(|m| m.get(&key).copied());
        let v = match hit {
            Some(v) => v,
            // SAFETY: forwarded from the caller.
            None => unsafe { self.choose(module, stream, key, scalars, outputs, bytes, launch)? },
        };
        if v < 255 && self.chosen.read().is_ok_and(|m| m.contains_key(&key)) {
            self.slots[(h >> 8) as usize % SLOTS].store(h | (v as u64 + 1), Ordering::Relaxed);
        }
        Ok(v)
    }

    /// The launch configuration of variant `v` for these scalars.
    pub fn config(&self, module: &Module, v: usize, scalars: &[i64]) -> Result<LaunchConfig> {
        let values = self.spec.variants[v].values;
        let dim = |ops: &'static [Op], what: &str, empty: i64| -> Result<u32> {
            let r = if ops.is_empty() { Some(empty) } else { eval(ops, scalars, values) };
            match r {
                Some(x) if (0..=i64::from(u32::MAX)).contains(&x) => Ok(x as u32),
                other => Err(self.formula_error(module, v, what, other, scalars)),
            }
        };
        let s = &self.spec;
        Ok(LaunchConfig {
            grid_dim: (dim(s.grid[0], "grid.x", 1)?, dim(s.grid[1], "grid.y", 1)?, dim(s.grid[2], "grid.z", 1)?),
            block_dim: (dim(s.block[0], "block.x", 1)?, dim(s.block[1], "block.y", 1)?, dim(s.block[2], "block.z", 1)?),
            shared_mem_bytes: dim(s.shared, "shared", 0)?,
        })
    }

    #[cold]
    #[inline(never)]
    fn formula_error(&self, module: &Module, v: usize, what: &str, got: Option<i64>, scalars: &[i64]) -> Error {
        let args: Vec<String> = self.spec.scalars.iter().zip(scalars).map(|(n, v)| format!("{n} = {v}")).collect();
        let got = match got {
            Some(x) => format!("is {x}, outside 0..=4294967295"),
            None => "overflows or divides by zero".to_string(),
        };
        Error::Tune {
            what: format!("kernel `{}` of {}", self.spec.kernel, module.origin()),
            cause: format!(
                "the {what} formula of variant {} {got} with {} (formulas: {})",
                self.spec.variants[v].label,
                if args.is_empty() { "no arguments".to_string() } else { args.join(", ") },
                self.spec.formulas
            ),
            fix: Some("check the arguments, or the formulas in `tune = { ... }`".into()),
        }
    }

    /// The slow path: a recorded choice, else the first variant (tuning off), else timing.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn choose(
        &self,
        module: &'static Module,
        stream: &CudaStream,
        key: Key,
        scalars: &[i64],
        outputs: &[u64],
        bytes: &[usize],
        launch: &mut LaunchFn<'_>,
    ) -> Result<usize> {
        let _one_at_a_time = self.tuning.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: forwarded from the caller.
        unsafe { self.choose_locked(module, stream, key, scalars, outputs, bytes, launch, true) }
    }

    /// [`Tuner::choose`] with `tuning` held; `use_records: false` skips the records (a record
    /// of this key was just found stale).
    #[allow(clippy::too_many_arguments)]
    unsafe fn choose_locked(
        &self,
        module: &'static Module,
        stream: &CudaStream,
        key: Key,
        scalars: &[i64],
        outputs: &[u64],
        bytes: &[usize],
        launch: &mut LaunchFn<'_>,
        use_records: bool,
    ) -> Result<usize> {
        if let Some(v) = self.chosen.read().ok().and_then(|m| m.get(&key).copied()) {
            return Ok(v);
        }
        // An empty grid (n = 0) is the launch's error to report, not something to tune.
        let first = self.config(module, 0, scalars)?;
        let (g, b) = (first.grid_dim, first.block_dim);
        if g.0 == 0 || g.1 == 0 || g.2 == 0 || b.0 == 0 || b.1 == 0 || b.2 == 0 {
            return Ok(0);
        }
        let ctx = stream.context();
        let device = state::device(ctx)?;
        let names = self.key_names(&key);
        let identity = super::record::identity(self.spec.kernel, self.spec.source, &device, &names);
        let recorded =
            if use_records { state::recorded(&identity).and_then(|r| self.index_of(&r.winner)) } else { None };
        let v = match recorded {
            Some(v) => {
                self.from_record.lock().unwrap_or_else(|p| p.into_inner()).push(key);
                v
            }
            None if !super::enabled() => 0,
            None => {
                // SAFETY: forwarded from the caller.
                match unsafe { self.tune(module, stream, ctx, scalars, outputs, bytes, launch)? } {
                    Some((v, times, ms)) => {
                        let record = Record {
                            kernel: self.spec.kernel.to_string(),
                            source: self.spec.source.to_string(),
                            device: device.clone(),
                            key: names.clone(),
                            winner: self.spec.variants[v].label.to_string(),
                            times_us: times,
                        };
                        let file = state::remember(record.clone());
                        if super::logging() {
                            eprintln!("{}", self.log_line(module, &record, ms, file.as_deref()));
                        }
                        v
                    }
                    None => 0,
                }
            }
        };
        if let Ok(mut m) = self.chosen.write() {
            m.insert(key, v);
        }
        Ok(v)
    }

    fn index_of(&self, label: &str) -> Option<usize> {
        self.spec.variants.iter().position(|v| v.label == label)
    }

    fn log_line(&self, module: &Module, r: &Record, ms: f64, file: Option<&std::path::Path>) -> String {
        let tried: Vec<String> = self
            .spec
            .variants
            .iter()
            .zip(&r.times_us)
            .map(|(v, t)| match t {
                Some(t) => format!("[{}] {t:.1} us", v.label),
                None => format!("[{}] failed", v.label),
            })
            .collect();
        let key: Vec<String> = r.key.iter().map(|(k, v)| format!("{k}~{v}")).collect();
        format!(
            "cuda-embed tune: `{}` of {} on {} (sm_{}{}), {}: {} -> [{}] ({ms:.0} ms{})",
            r.kernel,
            module.origin(),
            r.device.name,
            r.device.cc.0,
            r.device.cc.1,
            if key.is_empty() { "no key".to_string() } else { key.join(", ") },
            tried.join(", "),
            r.winner,
            file.map(|f| format!("; recorded in {}", f.display())).unwrap_or_default()
        )
    }

    /// Times every variant on scratch copies of the outputs; the winner's index, each variant's
    /// median time in microseconds and the milliseconds it all took. `None` when scratch memory
    /// could not be had.
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    unsafe fn tune(
        &self,
        module: &'static Module,
        stream: &CudaStream,
        ctx: &Arc<CudaContext>,
        scalars: &[i64],
        outputs: &[u64],
        bytes: &[usize],
        launch: &mut LaunchFn<'_>,
    ) -> Result<Option<(usize, Vec<Option<f64>>, f64)>> {
        let started = std::time::Instant::now();
        let Some(scratch) = Scratch::copy(ctx, stream, outputs, bytes) else {
            return Ok(None);
        };
        let n = self.spec.variants.len();
        let kref = |v: usize| {
            // SAFETY: `index` is the variant's kernel in `module` (generated together).
            unsafe { KernelRef::new(module, self.spec.variants[v].index) }
        };
        let mut cfgs: Vec<Option<LaunchConfig>> = Vec::with_capacity(n);
        let mut first_error = None;
        for v in 0..n {
            let cfg = self.config(module, v, scalars).and_then(|c| launch(kref(v), &c, &scratch.ptrs).map(|()| c));
            match cfg {
                Ok(c) => cfgs.push(Some(c)),
                Err(e) => {
                    first_error.get_or_insert(e);
                    cfgs.push(None);
                }
            }
        }
        if cfgs.iter().all(Option::is_none) {
            return Err(first_error.unwrap_or_else(|| self.no_variant(module)));
        }
        // Every timing below is of launches queued behind a blocking kernel (see
        // `super::queued`): the GPU runs each batch back to back, so the events measure the
        // variants' own execution, not the host's launch path, which at small sizes costs more
        // than the kernels and would decide the ranking.
        let mut batch = |v: usize, c: &LaunchConfig, reps: u32| -> Result<Option<f64>> {
            let mut ok = true;
            let t = super::queued::time_queued(stream, || {
                for _ in 0..reps {
                    ok &= launch(kref(v), c, &scratch.ptrs).is_ok();
                }
                Ok(())
            })?;
            Ok(ok.then_some(t.ms))
        };
        // Repetitions per sample: enough launches for about 100 us of GPU time, from one timed
        // launch.
        let mut reps = vec![1u32; n];
        for v in 0..n {
            if let Some(c) = cfgs[v] {
                match batch(v, &c, 1)? {
                    Some(ms) => reps[v] = ((0.1 / ms.max(1e-4)).ceil() as u32).clamp(1, 64),
                    None => cfgs[v] = None,
                }
            }
        }
        // Samples round-robin over the variants, so clock changes hit all of them alike.
        const SAMPLES: usize = 7;
        let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(SAMPLES); n];
        for _ in 0..SAMPLES {
            for v in 0..n {
                let Some(c) = cfgs[v] else { continue };
                match batch(v, &c, reps[v])? {
                    Some(ms) => samples[v].push(ms * 1000.0 / f64::from(reps[v])),
                    None => cfgs[v] = None,
                }
            }
        }
        drop(scratch);
        let times: Vec<Option<f64>> = (0..n)
            .map(|v| {
                let s = &mut samples[v];
                if cfgs[v].is_none() || s.is_empty() {
                    return None;
                }
                s.sort_by(f64::total_cmp);
                Some(s[s.len() / 2])
            })
            .collect();
        let best = (0..n)
            .filter_map(|v| times[v].map(|t| (v, t)))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            .map(|(v, _)| v);
        match best {
            Some(v) => Ok(Some((v, times, started.elapsed().as_secs_f64() * 1000.0))),
            None => Err(first_error.unwrap_or_else(|| self.no_variant(module))),
        }
    }

    #[cold]
    fn no_variant(&self, module: &Module) -> Error {
        Error::Tune {
            what: format!("kernel `{}` of {}", self.spec.kernel, module.origin()),
            cause: "no variant could be launched with these arguments".into(),
            fix: None,
        }
    }
}

/// Scratch copies of the output buffers, freed (stream-ordered) on drop.
struct Scratch<'a> {
    stream: &'a CudaStream,
    ptrs: Vec<u64>,
}

impl<'a> Scratch<'a> {
    /// Allocates and fills one copy per output; `None` (nothing left allocated) on failure.
    fn copy(ctx: &CudaContext, stream: &'a CudaStream, outputs: &[u64], bytes: &[usize]) -> Option<Scratch<'a>> {
        ctx.bind_to_thread().ok()?;
        let mut s = Scratch { stream, ptrs: Vec::with_capacity(outputs.len()) };
        for (&src, &len) in outputs.iter().zip(bytes) {
            // SAFETY: the stream is live and its context bound; a fresh allocation of `len` bytes.
            let dst = unsafe { cudarc::driver::result::malloc_async(stream.cu_stream(), len.max(1)) }.ok()?;
            s.ptrs.push(dst);
            // SAFETY: `src` holds `len` bytes (the launcher's contract), `dst` was just allocated
            // with as many; both are used in stream order.
            unsafe { cudarc::driver::result::memcpy_dtod_async(dst, src, len, stream.cu_stream()) }.ok()?;
        }
        Some(s)
    }
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        for &p in &self.ptrs {
            // SAFETY: allocated by `copy` on this stream; every launch using it was queued before.
            let _ = unsafe { cudarc::driver::result::free_async(p, self.stream.cu_stream()) };
        }
    }
}

/// Reads the device's identity for records.
pub(super) fn read_device(ctx: &Arc<CudaContext>) -> Result<Device> {
    let d = |e: cudarc::driver::DriverError| Error::Driver {
        call: "cuDeviceGetAttribute",
        device: ctx.ordinal(),
        cause: crate::error::DriverCode(e.0),
    };
    let name = ctx.name().map_err(d)?;
    let cc = ctx.compute_capability().map_err(d)?;
    let sms = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(d)?;
    let mut driver = 0i32;
    // SAFETY: a valid out-pointer; the driver is loaded (a context exists).
    unsafe { sys::cuDriverGetVersion(&mut driver) };
    Ok(Device { name, cc, sms, driver })
}
