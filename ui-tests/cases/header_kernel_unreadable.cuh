// A kernel definition the signature reader cannot read: an error citing this file and line, not
// a kernel silently left without a launcher.
#pragma once

__global__ void broken(float* x, , int n) {
    x[threadIdx.x] = 1.0f;
}
