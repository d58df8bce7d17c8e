// The linked file of the link_template_* ui cases: a template kernel whose instances the module lists.
template <typename T, int K> __global__ void scale(T* y) { y[threadIdx.x] *= (T)K; }
