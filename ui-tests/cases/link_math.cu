// The linked file of the link_* ui cases.
__device__ unsigned int calls;
__device__ float square(float x) { return x * x; }
