// A reduction without `map`, `reduce` or `identity` names the missing key at the reduction's name.
use cuda_embed::reduction_kernel;

reduction_kernel!(no_map, inputs = "float x", outputs = "float y", reduce = "a + b", identity = "0");

reduction_kernel!(no_reduce, inputs = "float x", outputs = "float y", map = "x", identity = "0");

reduction_kernel!(no_identity, inputs = "float x", outputs = "float y", map = "x", reduce = "a + b");

fn main() {}
