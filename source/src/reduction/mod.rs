//! The CUDA source of a reduction kernel (`reduction_kernel!` at build time and the run-time twin
//! alike) and the launch plans its three kernels run under.
//!
//! One reduction becomes three kernels over the same user code (`map`, `reduce`, `post_map`,
//! `identity`):
//!
//! - `NAME_full`: contiguous segments (the whole array, or long rows), each reduced by
//!   `blocks_per_row` blocks (interleaved tiles of it).
//!   With more than one block per segment, each block writes its partial value to a scratch
//!   buffer and the last block to finish (elected by an integer counter) combines the partials
//!   **in block order**: one launch, no floating-point atomics.
//! - `NAME_rows`: short rows, a group of `g` (a power of two up to 32) threads per row, each
//!   group [`ROWS_AT_ONCE`] rows at a time.
//! - `NAME_cols`: the columns of a row-major matrix: threads over columns (coalesced row-wise
//!   reads), rows split over `splits` blocks; partials combined in split order by the last block
//!   of each column tile.
//!
//! Every thread reads its elements in a fixed order, in groups of `V` consecutive elements (`V =
//! 16 / the largest input element size`), with one 16-byte load per input when the pointers are
//! aligned (streaming loads: non-coherent, no L1 allocation, 256-byte L2 prefetch) and `V` scalar
//! loads otherwise: the same elements meet in the same order either way,
//! so the result depends only on the plan, and the plan only on the shape and the GPU's
//! multiprocessor count. The same input gives bit-identical output on every run.

use std::fmt::Write;

mod kernels;
mod plan;

pub use plan::{plan_cols, plan_full_fixed, plan_segments, Plan, PlanKind};

/// The device helpers every reduction source starts with (vector loads, shuffles, block-wide
/// and column combinations, the last-block election).
const HELPERS: &str = include_str!("helpers.cuh");

/// Threads per block of every reduction kernel.
pub const BLOCK: u32 = 256;
/// Element groups each thread loads before combining any (loads in flight per thread).
pub const UNROLL: u32 = 4;
/// Largest `reduce_type` size in bytes; the scratch buffer holds this much per partial value.
pub const MAX_REDUCE_BYTES: usize = 32;
/// Resident blocks per multiprocessor the plans aim for (`__launch_bounds__(256, 4)`).
pub const BLOCKS_PER_SM: u32 = 4;
/// Rows each lane group of `NAME_rows` reduces at once (their loads in flight together).
pub const ROWS_AT_ONCE: u32 = 4;

/// A piece of user code and where it was written (for `#line`, so compiler errors point at it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snippet {
    /// The C++ text.
    pub text: String,
    /// The Rust file and line it came from, when known.
    pub origin: Option<(String, usize)>,
}

impl Snippet {
    /// A snippet with no known origin.
    pub fn new(text: impl Into<String>) -> Snippet {
        Snippet { text: text.into(), origin: None }
    }

    fn emit(&self, out: &mut String) {
        if let Some((file, line)) = &self.origin {
            let _ = writeln!(out, "#line {} \"{}\"", line, file.replace('\\', "/"));
        }
        out.push_str(&self.text);
    }
}

/// One parameter of a reduction: an array (one element per index) or a scalar (one value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedParam {
    /// The name the user code sees.
    pub name: String,
    /// The C++ element type (a placeholder like `T`, or a concrete type).
    pub ty: String,
    /// A scalar (passed by value) rather than an array.
    pub scalar: bool,
}

/// Everything the generator needs for one reduction.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReductionSource {
    /// The reduction's name; kernels are `NAME_full`, `NAME_rows`, `NAME_cols`.
    pub name: String,
    /// The template parameters (placeholders), in order.
    pub placeholders: Vec<String>,
    /// Inputs: arrays and scalars, in declaration order.
    pub inputs: Vec<RedParam>,
    /// Outputs (arrays, one element per reduced segment).
    pub outputs: Vec<RedParam>,
    /// The per-element value (may use every input, `i` and `n`).
    pub map: Snippet,
    /// Combines partial values `a` and `b`.
    pub reduce: Snippet,
    /// Writes the result `a` to the outputs; default: the first output `= a`.
    pub post_map: Option<Snippet>,
    /// The identity of `reduce`.
    pub identity: Snippet,
    /// The type of the partial values; default: the first output's type.
    pub reduce_type: Option<Snippet>,
    /// Code before the kernels (helper functions, structs, includes).
    pub preamble: Option<Snippet>,
    /// The instances to build: for each, one C++ type per placeholder (empty without placeholders).
    pub instances: Vec<Vec<String>>,
}

/// The three kernel names of reduction `name`.
pub fn kernel_names(name: &str) -> [String; 3] {
    [format!("{name}_full"), format!("{name}_rows"), format!("{name}_cols")]
}

/// Elements per vector group: 16 bytes of the largest array input (1 when that size does not
/// divide 16). Host and device compute the same number.
pub fn vec_width(input_sizes: &[usize]) -> u32 {
    match input_sizes.iter().copied().max() {
        Some(m) if m > 0 && m <= 16 && 16 % m == 0 => (16 / m) as u32,
        _ => 1,
    }
}

impl ReductionSource {
    fn arrays(&self) -> impl Iterator<Item = &RedParam> {
        self.inputs.iter().filter(|p| !p.scalar)
    }

    fn scalars(&self) -> impl Iterator<Item = &RedParam> {
        self.inputs.iter().filter(|p| p.scalar)
    }

    /// The template instances to compile (`NAME_full<float>`, ...), empty without placeholders.
    pub fn instance_exprs(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.placeholders.is_empty() {
            return out;
        }
        for inst in &self.instances {
            for k in kernel_names(&self.name) {
                out.push(format!("{k}<{}>", inst.join(", ")));
            }
            let axes = crate::ndarray::reduction::axes_kernel_name(&self.name);
            out.push(format!("{axes}<{}>", inst.join(", ")));
        }
        out
    }

    /// The complete CUDA source: helpers, preamble, the user code's struct and the three kernels.
    pub fn source(&self) -> String {
        let mut out = String::new();
        let types: String = self
            .inputs
            .iter()
            .chain(&self.outputs)
            .map(|p| p.ty.as_str())
            .chain(self.reduce_type.iter().map(|s| s.text.as_str()))
            .collect::<Vec<_>>()
            .join(" ");
        let instances: String = self.instances.iter().flatten().map(|t| format!(" {t}")).collect();
        let types = types + &instances;
        if types.contains("half") {
            out.push_str("#include <cuda_fp16.h>\n");
        }
        if types.contains("bfloat16") {
            out.push_str("#include <cuda_bf16.h>\n");
        }
        out.push_str(HELPERS);
        if let Some(p) = &self.preamble {
            let bindings: Vec<(String, String)> = match self.instances.as_slice() {
                [only] => self.placeholders.iter().cloned().zip(only.iter().cloned()).collect(),
                _ => Vec::new(),
            };
            out.push_str(&crate::typedefs::type_preamble(&bindings, self.instances.len(), &p.text));
            p.emit(&mut out);
            out.push('\n');
        }
        out.push_str("#line 1 \"<reduction_kernel! generated code>\"\n");
        self.ops(&mut out);
        self.full_kernel(&mut out);
        self.rows_kernel(&mut out);
        self.cols_kernel(&mut out);
        crate::ndarray::reduction::axes_kernel(self, &mut out);
        out
    }
}

#[cfg(test)]
mod tests;
