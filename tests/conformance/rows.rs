// The conformance matrix: one row per public launcher, one column per hazard, and how each cell is
// refused. Plain data, included by the test binary `tests/conformance/main.rs` (which runs every
// `Gpu` cell on a GPU and checks every `Compile` cell's ui-test exists) and by
// `macros/core/tests/launcher_rows.rs` (which fails when a macro generates a public launcher that
// has no row here). A new launcher family adds its rows here, and its cells to the tests.

/// The hazards, in column order.
pub const HAZARDS: [&str; 7] = [
    "another device's buffer",
    "a view re-pointed at a smaller buffer",
    "an output aliasing an input",
    "an output aliasing another output",
    "a 2-D block for a 1-D kernel",
    "a slice out of range",
    "empty operands",
];

/// How one cell is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// An `Err` before anything is enqueued, the context usable afterwards: asserted by the GPU
    /// test of this name in `tests/conformance/main.rs`.
    Gpu(&'static str),
    /// A compile error: the ui-test of this path (under `ui-tests/cases/`).
    Compile(&'static str),
    /// Not a hazard for this launcher, for the reason given (the GPU test of the column still
    /// runs the launcher where it can, and asserts what it does).
    None(&'static str),
}

/// One launcher: the family that generates or defines it, its name, and its seven cells.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// `cuda_kernel!`, `elementwise_kernel!`, ..., or the run-time type (`Kernel`).
    pub family: &'static str,
    /// The launcher's name (`launch_nd`, `GraphExec::set`).
    pub launcher: &'static str,
    /// One cell per hazard, in the order of [`HAZARDS`].
    pub cells: [Cell; 7],
}

use Cell::{Compile, Gpu, None as NotHazard};

// The cells most rows share.
const DEVICE: Cell = Gpu("another_device");
const FLAT: Cell = NotHazard("takes no view: a flat buffer's length is its own (an `unsafe` DeviceBuffer promise)");
const VIEW: Cell = Compile("conformance_view_repoint.rs");
const LAUNCH_ALIAS: Cell = Compile("conformance_launch_aliasing.rs");
const ASYNC_ALIAS: Cell = Compile("future_output_pending.rs");
const NODE_ALIAS: Cell = Gpu("graph_aliasing");
const RAW_CONFIG: Cell =
    NotHazard("the kernel's own C++ (or Rust) decides how it indexes: the caller's configuration, `unsafe`");
const CHOSEN: Cell = NotHazard("the launcher chooses the configuration");
const ONE_D: Cell = Gpu("two_dimensional_block");
const SLICE: Cell = Gpu("slice_out_of_range");
const EMPTY: Cell = Gpu("empty_operands");

const TMAP_ALIAS: Cell = Compile("tensor_map_aliasing.rs");
const TMAP_OUTPUTS: Cell = Compile("tensor_map_two_outputs.rs");
const TMAP_VIEW: Cell = Compile("tensor_map_borrow.rs");
const TMAP_SLICE: Cell = NotHazard(
    "a map's extent is its view's, checked when the view was made; the TMA clips boxes at the tensor's edges",
);
const TMAP_EMPTY: Cell =
    NotHazard("an empty view is refused when the map is made (Error::Shape, rule `extent`: tests/tensor_map.rs)");

/// `cuda_kernel!` launchers of a kernel taking `const __grid_constant__ CUtensorMap` parameters
/// (`&TensorMap` / `&mut TensorMapMut`): a map borrows its view's buffer (a written one
/// exclusively), so the borrow checker refuses what would alias or re-point it, in launches and
/// graph nodes alike.
const fn tensor_map(launcher: &'static str) -> Row {
    row(
        "cuda_kernel! (CUtensorMap)",
        launcher,
        [DEVICE, TMAP_VIEW, TMAP_ALIAS, TMAP_OUTPUTS, RAW_CONFIG, TMAP_SLICE, TMAP_EMPTY],
    )
}

const fn row(family: &'static str, launcher: &'static str, cells: [Cell; 7]) -> Row {
    Row { family, launcher, cells }
}

/// Launchers that take flat buffers and choose their configuration (or take it, raw kernels).
const fn flat(family: &'static str, launcher: &'static str, alias: Cell, config: Cell) -> Row {
    row(family, launcher, [DEVICE, FLAT, alias, alias, config, SLICE, EMPTY])
}

/// The launchers of a fused reduction (one output: two outputs over one buffer cannot be asked).
const fn fused_reduction(launcher: &'static str, alias: Cell, view: Cell) -> Row {
    row("fuse!", launcher, [DEVICE, view, alias, ONE_OUTPUT, CHOSEN, SLICE, EMPTY])
}

const ONE_OUTPUT: Cell = NotHazard("a fused reduction has one output");

/// Launchers that take N-D views.
const fn nd(family: &'static str, launcher: &'static str, alias: Cell) -> Row {
    row(family, launcher, [DEVICE, VIEW, alias, alias, CHOSEN, SLICE, EMPTY])
}

/// Every public launcher. The generated ones are checked against what the macros emit.
pub const ROWS: &[Row] = &[
    flat("cuda_kernel!", "launch", LAUNCH_ALIAS, RAW_CONFIG),
    flat("cuda_kernel!", "launch_timed", LAUNCH_ALIAS, RAW_CONFIG),
    flat("cuda_kernel!", "launch_cooperative", LAUNCH_ALIAS, RAW_CONFIG),
    flat("cuda_kernel!", "launch_cluster", LAUNCH_ALIAS, RAW_CONFIG),
    flat("cuda_kernel!", "launch_dependent", LAUNCH_ALIAS, RAW_CONFIG),
    flat("cuda_kernel!", "node", NODE_ALIAS, RAW_CONFIG),
    flat("cuda_kernel!", "update", NODE_ALIAS, RAW_CONFIG),
    flat("cuda_kernel!", "tuned", LAUNCH_ALIAS, CHOSEN),
    flat("cuda_kernel!", "launch_async", ASYNC_ALIAS, RAW_CONFIG),
    flat("cuda_kernel!", "tuned_async", ASYNC_ALIAS, CHOSEN),
    flat("elementwise_kernel!", "launch", LAUNCH_ALIAS, CHOSEN),
    flat("elementwise_kernel!", "launch_with", LAUNCH_ALIAS, ONE_D),
    flat("elementwise_kernel!", "launch_async", ASYNC_ALIAS, CHOSEN),
    nd("elementwise_kernel!", "launch_nd", LAUNCH_ALIAS),
    nd("elementwise_kernel!", "launch_nd_async", ASYNC_ALIAS),
    flat("elementwise_kernel!", "node", NODE_ALIAS, CHOSEN),
    flat("elementwise_kernel!", "node_with", NODE_ALIAS, ONE_D),
    nd("elementwise_kernel!", "node_nd", NODE_ALIAS),
    nd("elementwise_kernel!", "update_nd", NODE_ALIAS),
    flat("reduction_kernel!", "launch", LAUNCH_ALIAS, CHOSEN),
    flat("reduction_kernel!", "launch_rows", LAUNCH_ALIAS, CHOSEN),
    flat("reduction_kernel!", "launch_async", ASYNC_ALIAS, CHOSEN),
    flat("reduction_kernel!", "launch_cols", LAUNCH_ALIAS, CHOSEN),
    nd("reduction_kernel!", "launch_axes", LAUNCH_ALIAS),
    nd("reduction_kernel!", "launch_axes_async", ASYNC_ALIAS),
    flat("reduction_kernel!", "node", NODE_ALIAS, CHOSEN),
    flat("reduction_kernel!", "node_rows", NODE_ALIAS, CHOSEN),
    flat("reduction_kernel!", "node_cols", NODE_ALIAS, CHOSEN),
    nd("reduction_kernel!", "node_axes", NODE_ALIAS),
    // `fuse!` generates an elementwise or a reduction module: the same generators as above.
    flat("fuse!", "launch", LAUNCH_ALIAS, CHOSEN),
    flat("fuse!", "launch_with", LAUNCH_ALIAS, ONE_D),
    flat("fuse!", "launch_async", ASYNC_ALIAS, CHOSEN),
    nd("fuse!", "launch_nd", LAUNCH_ALIAS),
    nd("fuse!", "launch_nd_async", ASYNC_ALIAS),
    flat("fuse!", "node", NODE_ALIAS, CHOSEN),
    flat("fuse!", "node_with", NODE_ALIAS, ONE_D),
    nd("fuse!", "node_nd", NODE_ALIAS),
    nd("fuse!", "update_nd", NODE_ALIAS),
    fused_reduction("launch_rows", LAUNCH_ALIAS, FLAT),
    fused_reduction("launch_cols", LAUNCH_ALIAS, FLAT),
    fused_reduction("launch_axes", LAUNCH_ALIAS, VIEW),
    fused_reduction("launch_axes_async", ASYNC_ALIAS, VIEW),
    fused_reduction("node_rows", NODE_ALIAS, FLAT),
    fused_reduction("node_cols", NODE_ALIAS, FLAT),
    fused_reduction("node_axes", NODE_ALIAS, VIEW),
    flat("#[kernel]", "launch", LAUNCH_ALIAS, RAW_CONFIG),
    flat("#[kernel]", "launch_timed", LAUNCH_ALIAS, RAW_CONFIG),
    flat("#[kernel]", "launch_cooperative", LAUNCH_ALIAS, RAW_CONFIG),
    flat("#[kernel]", "launch_cluster", LAUNCH_ALIAS, RAW_CONFIG),
    flat("#[kernel]", "launch_async", ASYNC_ALIAS, RAW_CONFIG),
    flat("#[kernel]", "node", NODE_ALIAS, RAW_CONFIG),
    flat("#[kernel]", "update", NODE_ALIAS, RAW_CONFIG),
    flat("Kernel", "launch", LAUNCH_ALIAS, RAW_CONFIG),
    flat("Kernel", "launch_timed", LAUNCH_ALIAS, RAW_CONFIG),
    flat("Kernel", "launch_cooperative", LAUNCH_ALIAS, RAW_CONFIG),
    flat("Kernel", "launch_cluster", LAUNCH_ALIAS, RAW_CONFIG),
    flat("Kernel", "launch_async", ASYNC_ALIAS, RAW_CONFIG),
    flat("Kernel", "launch_dependent", LAUNCH_ALIAS, RAW_CONFIG),
    flat("Kernel", "node", NODE_ALIAS, RAW_CONFIG),
    flat("Kernel", "GraphExec::set", NODE_ALIAS, RAW_CONFIG),
    flat("ElementwiseKernel", "launch", LAUNCH_ALIAS, CHOSEN),
    flat("ElementwiseKernel", "launch_with", LAUNCH_ALIAS, ONE_D),
    flat("ElementwiseKernel", "launch_async", ASYNC_ALIAS, CHOSEN),
    flat("ElementwiseKernel", "launch_n", LAUNCH_ALIAS, CHOSEN),
    flat("ElementwiseKernel", "launch_raw", LAUNCH_ALIAS, CHOSEN),
    nd("ElementwiseKernel", "launch_nd", LAUNCH_ALIAS),
    nd("ElementwiseKernel", "launch_nd_raw", LAUNCH_ALIAS),
    flat("Reduction", "launch", LAUNCH_ALIAS, CHOSEN),
    flat("Reduction", "launch_rows", LAUNCH_ALIAS, CHOSEN),
    flat("Reduction", "launch_async", ASYNC_ALIAS, CHOSEN),
    flat("Reduction", "launch_cols", LAUNCH_ALIAS, CHOSEN),
    nd("Reduction", "launch_axes", LAUNCH_ALIAS),
    flat("ProgramKernel", "launch", LAUNCH_ALIAS, RAW_CONFIG),
    flat("ProgramKernel", "launch_as", LAUNCH_ALIAS, RAW_CONFIG),
    flat("ProgramKernel", "launch_async", ASYNC_ALIAS, RAW_CONFIG),
    flat("ProgramKernel", "node", NODE_ALIAS, RAW_CONFIG),
    tensor_map("launch"),
    tensor_map("launch_timed"),
    tensor_map("launch_cooperative"),
    tensor_map("launch_cluster"),
    tensor_map("launch_async"),
    tensor_map("launch_dependent"),
    tensor_map("node"),
    tensor_map("update"),
];
