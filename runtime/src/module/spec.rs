//! What `cuda_kernel!` embeds for one invocation: the compiled image (or the source for NVRTC),
//! the kernels and the global variables, in the order the generated code indexes them.
//!
//! Everything here is built by generated code only and reached through
//! [`__private`](crate::__private); the constructors that let bytes reach the driver are `unsafe`.

/// What the macro embedded for one `cuda_kernel!` invocation.
#[derive(Debug)]
pub struct ModuleSpec {
    /// `file:line` of the invocation, for messages.
    pub origin: &'static str,
    /// The compiled image or the source to compile at first use.
    pub image: Image,
    /// The kernels, in the order the generated launchers index them.
    pub kernels: &'static [KernelSpec],
    /// The `__constant__`/`__device__` variables, in the order the generated handles index them.
    pub globals: &'static [GlobalSpec],
}

/// The code embedded in the binary: a fatbin built at build time, or source for NVRTC.
#[derive(Debug)]
pub struct Image(pub(crate) ImageKind);

#[derive(Debug)]
pub(crate) enum ImageKind {
    Fatbin {
        bytes: &'static [u8],
        targets: &'static [&'static str],
        compiler: &'static str,
        /// Per cubin, by architecture (90 for `sm_90` and `sm_90a`), the largest block each
        /// kernel (in the spec's order) is sure to take where that cubin is loaded; 0: not known.
        limits: &'static [(u32, &'static [u32])],
    },
    Cubins {
        cubins: &'static [(&'static str, &'static [u8])],
        ptx: &'static str,
        ptx_target: &'static str,
        compiler: &'static str,
    },
    Source {
        source: &'static str,
        options: &'static [&'static str],
        headers: &'static [(&'static str, &'static str)],
        reason: &'static str,
        /// C++ appended to the source: the type probe of every kernel parameter.
        probe: &'static str,
        /// What each probed parameter must be, checked at first load.
        checks: &'static [ParamCheck],
        /// [`cuda_embed_source::key::checks_mark`] of `source` and `probe`, computed by the macro
        /// (empty: computed at load).
        mark: &'static str,
        /// [`cuda_embed_source::key::nvrtc_unit_digest`] of the module's NVRTC compile (program
        /// name, options, name expressions of the kernels then the globals, source, headers),
        /// computed by the macro (empty: computed at load).
        unit: &'static str,
        /// The length of the module's own text: where the type check the macro appended to
        /// `source` starts ([`cuda_embed_source::typecode::static_checks_start`], found by the
        /// macro), or `source.len()` when none was appended.
        own_len: usize,
    },
    Linked {
        units: &'static [LinkedUnit],
        headers: &'static [(&'static str, &'static str)],
        lto: bool,
        reason: &'static str,
    },
}

/// One translation unit of a separately compiled module (`rdc`, `link`, `lto`) built with no
/// compiler at build time: compiled by NVRTC and linked with the others at first use.
#[derive(Debug)]
pub struct LinkedUnit {
    /// How messages name it: the `link` path, or the module's own origin.
    pub name: &'static str,
    /// `#line` directive and source.
    pub source: &'static str,
    /// NVRTC options, including `-I` for its include directories.
    pub options: &'static [&'static str],
    /// The kernels and globals whose symbols this unit resolves, as indices into the module's
    /// kernels followed by its globals (a global's index is the kernel count plus its own).
    pub exprs: &'static [usize],
}

/// What the launcher of a module compiled at run time was generated for, for one kernel
/// parameter: the probe's answer (a `u64` type code, see the macro core's `probe` module) must
/// match `value` in the bits of `mask`. The macro appends this as a `static_assert` to the source,
/// so the module's compile checks it; when that compile fails, the runtime compiles the probe and
/// reads the answer to say what the parameter is.
#[derive(Debug)]
pub struct ParamCheck {
    /// Index of the kernel in [`ModuleSpec::kernels`].
    pub kernel: usize,
    /// Index of the parameter.
    pub param: usize,
    /// The parameter's name.
    pub name: &'static str,
    /// The parameter as written in C++ (`real* x`).
    pub cxx: &'static str,
    /// The launcher's Rust type for it (`&mut impl DeviceBufferMut<f32>`).
    pub rust: &'static str,
    /// The `__device__` variable holding the probe's answer.
    pub symbol: &'static str,
    /// The bits of the answer that are checked.
    pub mask: u64,
    /// What those bits must be.
    pub value: u64,
}

impl Image {
    /// A fatbin built by nvcc at build time, holding `targets` (`["sm_80", "sm_90", "compute_80"]`),
    /// and `limits`: for each of its cubins, by architecture (90 for `sm_90` and `sm_90a`), the
    /// largest block each kernel (in the order of [`ModuleSpec::kernels`]) takes on a GPU that
    /// loads that cubin, as the driver would report it (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`;
    /// 0: not known). A launch within it need not ask the driver first.
    ///
    /// # Safety
    /// `bytes` must be a complete, 8-byte aligned fatbin or cubin image: the driver reads it
    /// without a length. Each limit must be at most what the driver reports for the kernel in
    /// that cubin: a launch within it reaches the driver unchecked.
    pub const unsafe fn fatbin(
        bytes: &'static [u8],
        targets: &'static [&'static str],
        compiler: &'static str,
        limits: &'static [(u32, &'static [u32])],
    ) -> Image {
        Image(ImageKind::Fatbin { bytes, targets, compiler, limits })
    }

    /// Cubins built by NVRTC at build time (`("sm_80", bytes)`, lowest architecture first) and
    /// the PTX of the lowest (`ptx_target`, e.g. `compute_80`): the runtime loads the newest cubin
    /// the device runs, else JIT-compiles the PTX.
    ///
    /// # Safety
    /// Every blob must be a complete, 8-byte aligned cubin for the architecture it is paired with.
    pub const unsafe fn cubins(
        cubins: &'static [(&'static str, &'static [u8])],
        ptx: &'static str,
        ptx_target: &'static str,
        compiler: &'static str,
    ) -> Image {
        Image(ImageKind::Cubins { cubins, ptx, ptx_target, compiler })
    }

    /// As [`source`](Image::source), with the type `probe` appended to the source at compile
    /// time and its answers held to `checks` at first load. `mark` is
    /// [`checks_mark`](cuda_embed_source::key::checks_mark)`(source, probe)`, which a passed check
    /// is recorded under in the cubin's cache entry, and `unit` the
    /// [`nvrtc_unit_digest`](cuda_embed_source::key::nvrtc_unit_digest) of the module's compile
    /// (the program name [`NVRTC_KERNEL_NAME`](cuda_embed_source::key::NVRTC_KERNEL_NAME), the
    /// options, the name expressions of the kernels then of the globals, the source, the
    /// headers), which its cache key hashes; either empty: computed at load. `own_len` is where
    /// the type check the macro appended as `static_assert`s starts
    /// ([`static_checks_start`](cuda_embed_source::typecode::static_checks_start)), or
    /// `source.len()` when it appended none: the include scan of a cache hit stops there, and
    /// the load knows without searching the source that its compile is the type check. A value
    /// that does not fall on a character boundary of `source` is taken as `source.len()`.
    #[allow(clippy::too_many_arguments)]
    pub const fn source_checked(
        source: &'static str,
        options: &'static [&'static str],
        headers: &'static [(&'static str, &'static str)],
        reason: &'static str,
        probe: &'static str,
        checks: &'static [ParamCheck],
        mark: &'static str,
        unit: &'static str,
        own_len: usize,
    ) -> Image {
        let own_len = if source.is_char_boundary(own_len) { own_len } else { source.len() };
        Image(ImageKind::Source { source, options, headers, reason, probe, checks, mark, unit, own_len })
    }

    /// CUDA source compiled by NVRTC for the device at first use. `source` starts with a `#line`
    /// directive naming the Rust file; `options` go to NVRTC (the architecture is the device's);
    /// `headers` are the user headers the source includes, as (name as included, text); `reason`
    /// says why nvcc was not used (shown by [`Module::build_info`](crate::Module::build_info)).
    pub const fn source(
        source: &'static str,
        options: &'static [&'static str],
        headers: &'static [(&'static str, &'static str)],
        reason: &'static str,
    ) -> Image {
        Image(ImageKind::Source {
            source,
            options,
            headers,
            reason,
            probe: "",
            checks: &[],
            mark: "",
            unit: "",
            own_len: source.len(),
        })
    }

    /// Translation units compiled by NVRTC for the device and linked (with `libcudadevrt`, by the
    /// driver's linker, or by nvJitLink when `lto`) at first use; `reason` says why no compiler
    /// linked them at build time.
    pub const fn linked(
        units: &'static [LinkedUnit],
        headers: &'static [(&'static str, &'static str)],
        lto: bool,
        reason: &'static str,
    ) -> Image {
        Image(ImageKind::Linked { units, headers, lto, reason })
    }

    /// For an nvcc fatbin, the block limits read from its cubins at build time: per cubin, by
    /// architecture (90 for `sm_90` and `sm_90a`), the most threads per block each kernel (in
    /// the order of [`ModuleSpec::kernels`]) takes where that cubin is loaded (0: not known).
    /// Empty for other images, whose limits the driver reports at load.
    pub fn block_limits(&self) -> &'static [(u32, &'static [u32])] {
        match &self.0 {
            ImageKind::Fatbin { limits, .. } => limits,
            _ => &[],
        }
    }

    /// The fatbin bytes, when the image is one.
    pub fn fatbin_bytes(&self) -> Option<&'static [u8]> {
        match self.0 {
            ImageKind::Fatbin { bytes, .. } => Some(bytes),
            ImageKind::Cubins { .. } | ImageKind::Source { .. } | ImageKind::Linked { .. } => None,
        }
    }
}

/// One kernel of a module.
#[derive(Debug)]
pub struct KernelSpec {
    /// The name as written in C++ (`saxpy`, `ns::scale`, `axpy<float>`).
    pub name: &'static str,
    /// The symbol in the compiled image when known at build time (nvcc path).
    pub symbol: Option<&'static str>,
    /// The NVRTC name expression that yields the symbol (`saxpy`, `&ns::scale`); C linkage uses
    /// the plain name.
    pub name_expression: &'static str,
    /// Byte size of every parameter, as the launcher packs them.
    pub param_sizes: &'static [u32],
}

/// What the macro knows about one global variable.
#[derive(Debug)]
pub struct GlobalSpec {
    /// The name as written in C++ (`coeffs`, `ns::table`).
    pub name: &'static str,
    /// The symbol in the compiled image when known at build time (nvcc path).
    pub symbol: Option<&'static str>,
    /// NVRTC name expression yielding the symbol (`&ns::table`).
    pub name_expression: &'static str,
    /// Size in bytes when known at build time (checked against the module at run time).
    pub bytes: Option<u64>,
    /// Size of one element (the Rust type's size).
    pub elem_size: usize,
}

/// How a module's code was produced, for users checking which path a build took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildPath {
    /// nvcc at build time; the fatbin holds these targets.
    Nvcc {
        /// e.g. `["sm_80", "sm_90", "compute_80"]`.
        targets: Vec<String>,
        /// nvcc release.
        compiler: String,
    },
    /// NVRTC at build time (no nvcc was found): a cubin per target and PTX for the lowest.
    NvrtcBuild {
        /// e.g. `["sm_80", "sm_90", "compute_80"]`.
        targets: Vec<String>,
        /// NVRTC release.
        compiler: String,
    },
    /// NVRTC at first use, for the device's own architecture. The build-time checks against the
    /// compiler did not run: the parameter types are checked at first load instead (see
    /// [`ParamCheck`]).
    Nvrtc {
        /// Why no compiler was used at build time.
        reason: String,
    },
}

/// One line for logs: `nvcc 13.0 at build time (sm_80, sm_90, compute_80)`, `NVRTC 13.0 at
/// build time (...)` or `NVRTC at first use (no nvcc found ...)`.
impl std::fmt::Display for BuildPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildPath::Nvcc { targets, compiler } => {
                write!(f, "nvcc {compiler} at build time ({})", targets.join(", "))
            }
            BuildPath::NvrtcBuild { targets, compiler } => {
                write!(f, "NVRTC {compiler} at build time ({})", targets.join(", "))
            }
            BuildPath::Nvrtc { reason } => write!(f, "NVRTC at first use ({reason})"),
        }
    }
}

impl ModuleSpec {
    /// What NVRTC lowers for a module compiled at run time: the kernels' name expressions, then
    /// the globals'.
    pub(crate) fn name_expressions(&self) -> Vec<&'static str> {
        self.kernels.iter().map(|k| k.name_expression).chain(self.globals.iter().map(|g| g.name_expression)).collect()
    }

    /// For tests of `cuda_kernel!`: for a module compiled by NVRTC at run time, the digest of its
    /// compile's fixed inputs that the macro embedded (empty for none) and the one computed from
    /// the spec now, which must be equal.
    #[doc(hidden)]
    pub fn nvrtc_unit_digests(&self) -> Option<(&'static str, String)> {
        let ImageKind::Source { source, options, headers, unit, .. } = &self.image.0 else { return None };
        let computed = cuda_embed_source::key::nvrtc_unit_digest(
            cuda_embed_source::key::NVRTC_KERNEL_NAME,
            source,
            options,
            headers,
            &self.name_expressions(),
        );
        Some((unit, computed))
    }

    /// For tests of `cuda_kernel!`: for a module compiled by NVRTC at run time, what its compile
    /// takes: the source (with the type check the macro appended), the options, the headers and
    /// the name expressions.
    #[doc(hidden)]
    #[allow(clippy::type_complexity)]
    pub fn nvrtc_inputs(
        &self,
    ) -> Option<(&'static str, &'static [&'static str], &'static [(&'static str, &'static str)], Vec<&'static str>)>
    {
        let ImageKind::Source { source, options, headers, .. } = &self.image.0 else { return None };
        Some((source, options, headers, self.name_expressions()))
    }

    /// For tests of `cuda_kernel!`: for a module compiled by NVRTC at run time, the length of
    /// its own text that the macro embedded (where its appended type check starts).
    #[doc(hidden)]
    pub fn nvrtc_own_len(&self) -> Option<usize> {
        let ImageKind::Source { own_len, .. } = &self.image.0 else { return None };
        Some(*own_len)
    }

    pub(crate) fn build_path(&self) -> BuildPath {
        match &self.image.0 {
            ImageKind::Fatbin { targets, compiler, .. } => BuildPath::Nvcc {
                targets: targets.iter().map(|s| s.to_string()).collect(),
                compiler: compiler.to_string(),
            },
            ImageKind::Cubins { cubins, ptx_target, compiler, .. } => BuildPath::NvrtcBuild {
                // A linked module has no PTX (`ptx_target` is empty).
                targets: cubins
                    .iter()
                    .map(|c| c.0)
                    .chain([*ptx_target].into_iter().filter(|t| !t.is_empty()))
                    .map(str::to_string)
                    .collect(),
                compiler: compiler.to_string(),
            },
            ImageKind::Source { reason, .. } | ImageKind::Linked { reason, .. } => {
                BuildPath::Nvrtc { reason: reason.to_string() }
            }
        }
    }
}
