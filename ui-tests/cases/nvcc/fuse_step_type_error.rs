// A step whose value does not convert to its declared type (`float` to `float3`) is a compile
// error at that step's line (line 9), with the compiler's log.
use cuda_embed::fuse;

fuse!(
    weighted,
    inputs = "float x, float w",
    steps = ["float d = x * w",
             "float3 e = d * d"],
    outputs = "float s",
    reduce = "a + b",
    identity = "0",
);

fn main() {}
