// One link of a chain of dependent kernels, for programmatic dependent launch (PDL; the `pdl`
// test and bench): each link reads what the one before it wrote.
//
// It lets the next kernel launch at once (the trigger only schedules it, and makes nothing
// visible), waits for the kernel before it to complete (which makes its writes visible), then
// reads what that kernel wrote. The grid-dependency calls exist on sm_90 and newer (the binary
// also holds sm_80 code, where a dependent launch is a plain one).
extern "C" __global__ void link(const float* in, float* out, float a, int n) {
#if __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
    cudaGridDependencySynchronize();
#endif
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * a + 1.0f;
}
