// The operation names the generated kernel's raw pointer behind `y` (through a preamble macro):
// it could write past the array's end, so it is refused at the operation's literal.
use cuda_embed::elementwise_kernel;

elementwise_kernel!(
    poke,
    inputs = "float x",
    outputs = "float y",
    preamble = "#define PTR _ce_p_y",
    operation = "PTR[i + 1000000] = x",
);

fn main() {}
