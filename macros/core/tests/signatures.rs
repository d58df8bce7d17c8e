//! Table-driven test of the signature parser and the type mapping on real-world kernel signatures
//! (taken from or modelled on llm.c, cuda-samples, candle, CuPy, flashinfer, PyTorch, ...), with
//! no compiler probe: names resolve through the source's own `typedef`/`using`/`#define`s.
//!
//! Each row gives the source, then per kernel its qualified name, whether it has C linkage and,
//! per parameter, `name: mapping`. The mapping is written short and expanded to the exact
//! [`Mapped::describe`] string by [`expect`]:
//!
//! | short        | `Mapped::describe()`                 |
//! |--------------|--------------------------------------|
//! | `f32`        | `f32` (a value; crate types too: `Float4`, `f16`, `TextureObject`) |
//! | `&f32`       | `&impl DeviceBuffer<f32>`            |
//! | `&mut f32`   | `&mut impl DeviceBufferMut<f32>`     |
//! | `&any`       | `&impl DeviceBuffer<T> (any T)`      |
//! | `&mut any`   | `&mut impl DeviceBufferMut<T> (any T)` |
//! | `raw`        | `RawDevicePtr`                       |
//! | `user P`     | `P (your #[repr(C)] type)`           |

use cuda_embed_macros_core::front::types::{self, Mapped};
use cuda_embed_macros_core::lex;
use cuda_embed_macros_core::signature::{self, Parsed};

/// One kernel the row expects: qualified name, `extern "C"`, `["name: short", ...]`.
type K = (&'static str, bool, &'static [&'static str]);

struct Row {
    /// Where the signature comes from (or what it models).
    from: &'static str,
    src: &'static str,
    kernels: &'static [K],
    templates: &'static [&'static str],
}

const fn row(from: &'static str, src: &'static str, kernels: &'static [K]) -> Row {
    Row { from, src, kernels, templates: &[] }
}

const fn tmpl(from: &'static str, src: &'static str, kernels: &'static [K], templates: &'static [&'static str]) -> Row {
    Row { from, src, kernels, templates }
}

/// Expands the short notation of the table into `Mapped::describe()` text.
fn expect(short: &str) -> String {
    let elem = |t: &str| if t == "any" { "T".to_string() } else { t.to_string() };
    let any = |t: &str| if t == "any" { " (any T)" } else { "" };
    if short == "raw" {
        "RawDevicePtr".into()
    } else if let Some(t) = short.strip_prefix("&mut ") {
        format!("&mut impl DeviceBufferMut<{}>{}", elem(t), any(t))
    } else if let Some(t) = short.strip_prefix('&') {
        format!("&impl DeviceBuffer<{}>{}", elem(t), any(t))
    } else if let Some(t) = short.strip_prefix("user ") {
        format!("{t} (your #[repr(C)] type)")
    } else {
        short.to_string()
    }
}

const ROWS: &[Row] = &[
    // ---------------------------------------------------------------- llm.c
    row(
        "llm.c dev/cuda/encoder_forward.cu (typedef float floatX)",
        "typedef float floatX;\n\
         __global__ void encoder_forward_kernel3(floatX* out, const int* inp, const floatX* wte, const floatX* wpe,\n\
                                                 int B, int T, int C) {}",
        &[("encoder_forward_kernel3", false, &["out: &mut f32", "inp: &i32", "wte: &f32", "wpe: &f32", "B: i32", "T: i32", "C: i32"])],
    ),
    row(
        "llm.c llmc/layernorm.cuh (bf16 floatX, __restrict__)",
        "typedef __nv_bfloat16 floatX;\n\
         __global__ void layernorm_forward_kernel3(floatX* __restrict__ out, float* __restrict__ mean,\n\
                                    float* __restrict__ rstd,\n\
                                    const floatX*  __restrict__ inp, const floatX*  __restrict__ weight,\n\
                                    const floatX* __restrict__ bias, int N, int C) {}",
        &[(
            "layernorm_forward_kernel3",
            false,
            &["out: &mut bf16", "mean: &mut f32", "rstd: &mut f32", "inp: &bf16", "weight: &bf16", "bias: &bf16", "N: i32", "C: i32"],
        )],
    ),
    row(
        "llm.c llmc/layernorm.cuh (__launch_bounds__ between void and the name)",
        "typedef float floatX;\n\
         __global__ void __launch_bounds__(512, 2)\n\
             layernorm_backward_kernel10(floatX* dinp, floatX* dweight, floatX* dbias, float* scratch,\n\
                                         const floatX* dout, const floatX* inp, const floatX* weight,\n\
                                         const float* mean, const float* rstd,\n\
                                         int B, int T, int C) {}",
        &[(
            "layernorm_backward_kernel10",
            false,
            &[
                "dinp: &mut f32", "dweight: &mut f32", "dbias: &mut f32", "scratch: &mut f32", "dout: &f32", "inp: &f32",
                "weight: &f32", "mean: &f32", "rstd: &f32", "B: i32", "T: i32", "C: i32",
            ],
        )],
    ),
    row(
        "llm.c dev/cuda/adamw.cu (long, many floats)",
        "__global__ void adamw_kernel2(float* params_memory, const float* grads_memory, float* m_memory, float* v_memory, long num_parameters,\n\
                                      float learning_rate, float beta1, float beta2, float beta1_correction, float beta2_correction, float eps, float weight_decay) {}",
        &[(
            "adamw_kernel2",
            false,
            &[
                "params_memory: &mut f32", "grads_memory: &f32", "m_memory: &mut f32", "v_memory: &mut f32", "num_parameters: i64",
                "learning_rate: f32", "beta1: f32", "beta2: f32", "beta1_correction: f32", "beta2_correction: f32", "eps: f32",
                "weight_decay: f32",
            ],
        )],
    ),
    tmpl(
        "llm.c llmc/adamw.cuh (template kernel)",
        "template <typename Tp, typename Tg>\n\
         __global__ void adamw_kernel3(Tp* params_memory, float* master_params_memory, Tg* grads_memory, float* m_memory, float* v_memory, size_t num_parameters) {}",
        &[],
        &["adamw_kernel3"],
    ),
    row(
        "llm.c dev/cuda/global_norm.cu (std::size_t, size_t)",
        "__global__ void norm_kernel1(float* out, const float* data, std::size_t count) {}\n\
         __global__ void norm_kernel2(float* out, const float* data, size_t count) {}",
        &[
            ("norm_kernel1", false, &["out: &mut f32", "data: &f32", "count: usize"]),
            ("norm_kernel2", false, &["out: &mut f32", "data: &f32", "count: usize"]),
        ],
    ),
    // ---------------------------------------------------------------- cuda-samples
    row(
        "cuda-samples vectorAdd",
        "__global__ void vectorAdd(const float *A, const float *B, float *C, int numElements) {}",
        &[("vectorAdd", false, &["A: &f32", "B: &f32", "C: &mut f32", "numElements: i32"])],
    ),
    tmpl(
        "cuda-samples matrixMul (template) + vectorAddDrv (extern \"C\")",
        "template <int BLOCK_SIZE> __global__ void MatrixMulCUDA(float *C, float *A, float *B, int wA, int wB) {}\n\
         extern \"C\" __global__ void VecAdd_kernel(const float *A, const float *B, float *C, int N) {}",
        &[("VecAdd_kernel", true, &["A: &f32", "B: &f32", "C: &mut f32", "N: i32"])],
        &["MatrixMulCUDA"],
    ),
    row(
        "cuda-samples simpleTexture (cudaTextureObject_t)",
        "__global__ void transformKernel(float *outputData, int width, int height, float theta, cudaTextureObject_t tex) {}",
        &[("transformKernel", false, &["outputData: &mut f32", "width: i32", "height: i32", "theta: f32", "tex: TextureObject"])],
    ),
    row(
        "cuda-samples simpleSurfaceWrite (cudaSurfaceObject_t)",
        "__global__ void surfaceWriteKernel(float *gIData, int width, int height, cudaSurfaceObject_t outputSurface) {}",
        &[("surfaceWriteKernel", false, &["gIData: &mut f32", "width: i32", "height: i32", "outputSurface: SurfaceObject"])],
    ),
    row(
        "cuda-samples clock (static, clock_t*)",
        "__global__ static void timedReduction(const float *input, float *output, clock_t *timer) {}",
        &[("timedReduction", false, &["input: &f32", "output: &mut f32", "timer: &mut i64"])],
    ),
    row(
        "cuda-samples simpleCUFFT (typedef float2 Complex, unnamed params, declaration then definition)",
        "typedef float2 Complex;\n\
         static __global__ void ComplexPointwiseMulAndScale(Complex *, const Complex *, int, float);\n\
         static __global__ void ComplexPointwiseMulAndScale(Complex *a, const Complex *b, int size, float scale) {}",
        &[("ComplexPointwiseMulAndScale", false, &["a: &mut Float2", "b: &Float2", "size: i32", "scale: f32"])],
    ),
    row(
        "cuda-samples simpleCUFFT_MGPU (cufftComplex)",
        "__global__ void ComplexPointwiseMulAndScale(cufftComplex *a, cufftComplex *b, int size, float scale) {}",
        &[("ComplexPointwiseMulAndScale", false, &["a: &mut Complex32", "b: &mut Complex32", "size: i32", "scale: f32"])],
    ),
    row(
        "cuda-samples bilateralFilter (uint*, texture)",
        "__global__ void d_bilateral_filter(uint *od, int w, int h, float e_d, int r, cudaTextureObject_t rgbaTex) {}",
        &[("d_bilateral_filter", false, &["od: &mut u32", "w: i32", "h: i32", "e_d: f32", "r: i32", "rgbaTex: TextureObject"])],
    ),
    row(
        "cuda-samples graphConditionalNodes (cudaGraphConditionalHandle, char*)",
        "__global__ void ifGraphKernelA(char *dPtr, cudaGraphConditionalHandle handle) {}",
        &[("ifGraphKernelA", false, &["dPtr: &mut i8", "handle: ConditionalHandle"])],
    ),
    row(
        "cuda-samples SobelFilter (uchar4*, unsigned short, short, float)",
        "__global__ void SobelCopyImage(uchar4 *pSobelOriginal, unsigned int Pitch, int w, int h, float fscale,\n\
                                        cudaTextureObject_t tex) {}\n\
         __global__ void SobelShared(uchar4 *pSobelOriginal, unsigned short SobelPitch, short BlockWidth,\n\
                                     short SharedPitch, short w, short h, float fScale, cudaTextureObject_t tex) {}",
        &[
            ("SobelCopyImage", false, &["pSobelOriginal: &mut UChar4", "Pitch: u32", "w: i32", "h: i32", "fscale: f32", "tex: TextureObject"]),
            (
                "SobelShared",
                false,
                &[
                    "pSobelOriginal: &mut UChar4", "SobelPitch: u16", "BlockWidth: i16", "SharedPitch: i16", "w: i16", "h: i16",
                    "fScale: f32", "tex: TextureObject",
                ],
            ),
        ],
    ),
    row(
        "cuda-samples simpleVoteIntrinsics (unsigned int*)",
        "__global__ void VoteAnyKernel1(unsigned int *input, unsigned int *result, int size) {}",
        &[("VoteAnyKernel1", false, &["input: &mut u32", "result: &mut u32", "size: i32"])],
    ),
    row(
        "cuda-samples particles (float4*, uint*, uint by value, volatile)",
        "__global__ void reorderDataAndFindCellStartD(uint *cellStart, uint *cellEnd, float4 *sortedPos, float4 *sortedVel,\n\
                                                     uint *gridParticleHash, uint *gridParticleIndex, float4 *oldPos,\n\
                                                     float4 *oldVel, uint numParticles, volatile int *flag) {}",
        &[(
            "reorderDataAndFindCellStartD",
            false,
            &[
                "cellStart: &mut u32", "cellEnd: &mut u32", "sortedPos: &mut Float4", "sortedVel: &mut Float4",
                "gridParticleHash: &mut u32", "gridParticleIndex: &mut u32", "oldPos: &mut Float4", "oldVel: &mut Float4",
                "numParticles: u32", "flag: &mut i32",
            ],
        )],
    ),
    row(
        "cuda-samples lineOfSight (unnamed by-value struct, typedef unsigned char Bool)",
        "typedef unsigned char Bool;\n\
         struct Ray { float3 origin; float2 dir; int length; };\n\
         __global__ void computeAngles_kernel(const Ray, float *, cudaTextureObject_t);\n\
         __global__ void computeVisibilities_kernel(const float *, const float *, int, Bool *);",
        &[
            ("computeAngles_kernel", false, &["arg0: user Ray", "arg1: &mut f32", "arg2: TextureObject"]),
            ("computeVisibilities_kernel", false, &["arg0: &f32", "arg1: &f32", "arg2: i32", "arg3: &mut u8"]),
        ],
    ),
    row(
        "cuda-samples cppIntegration (int2, dim3-free)",
        "__global__ void kernel2(int2 *g_data) {}",
        &[("kernel2", false, &["g_data: &mut Int2"])],
    ),
    row(
        "cuda-samples simpleCallback-style (void*, const void*)",
        "__global__ void copy_bytes(void *dst, const void *src, size_t n) {}",
        &[("copy_bytes", false, &["dst: &mut any", "src: &any", "n: usize"])],
    ),
    row(
        "cuda-samples cudaOpenMP-style (int* const, const int* const)",
        "__global__ void kernelAddConstant(int * const g_a, const int * const b, const int n) {}",
        &[("kernelAddConstant", false, &["g_a: &mut i32", "b: &i32", "n: i32"])],
    ),
    // ---------------------------------------------------------------- candle
    row(
        "candle unary.cu UNARY_OP(float, ucopy_f32, x), as the compiler sees it",
        "extern \"C\" __global__ void ucopy_f32( \n\
             const size_t numel, \n\
             const size_t num_dims, \n\
             const size_t *info, \n\
             const float *inp, \n\
             float *out \n\
         ) {}",
        &[("ucopy_f32", true, &["numel: usize", "num_dims: usize", "info: &usize", "inp: &f32", "out: &mut f32"])],
    ),
    row(
        "candle affine.cu (bf16 by value and by pointer)",
        "#include \"cuda_bf16.h\"\n\
         extern \"C\" __global__ void affine_bf16(const size_t numel, const size_t num_dims, const size_t *info,\n\
             const __nv_bfloat16 *inp, __nv_bfloat16 *out, const __nv_bfloat16 mul, const __nv_bfloat16 add) {}",
        &[(
            "affine_bf16",
            true,
            &["numel: usize", "num_dims: usize", "info: &usize", "inp: &bf16", "out: &mut bf16", "mul: bf16", "add: bf16"],
        )],
    ),
    row(
        "candle quantized.cu (const void * __restrict__, half*)",
        "extern \"C\" __global__ void dequantize_block_q4_0_f16(const void * __restrict__ vx, half * __restrict__ y, const int k) {}",
        &[("dequantize_block_q4_0_f16", true, &["vx: &any", "y: &mut f16", "k: i32"])],
    ),
    row(
        "candle quantized.cu (uint32_t, int64_t, size_t)",
        "extern \"C\" __global__ void get_rows_q4_0(\n\
                 const void * __restrict__ src0, const uint32_t * __restrict__ src1, float * __restrict__ dst,\n\
                 const int64_t ne00, const size_t nb01) {}",
        &[("get_rows_q4_0", true, &["src0: &any", "src1: &u32", "dst: &mut f32", "ne00: i64", "nb01: usize"])],
    ),
    row(
        "candle cast.cu (fp8 e4m3)",
        "#include <cuda_fp8.h>\n\
         extern \"C\" __global__ void cast_f8_e4m3_f32(const size_t numel, const size_t num_dims, const size_t *info,\n\
             const __nv_fp8_e4m3 *inp, float *out) {}",
        &[("cast_f8_e4m3_f32", true, &["numel: usize", "num_dims: usize", "info: &usize", "inp: &F8E4M3", "out: &mut f32"])],
    ),
    row(
        "candle fill.cu (uint8_t, int64_t by value, fp8 e5m2)",
        "extern \"C\" __global__ void fill_u8(uint8_t *buf, uint8_t value, const size_t numel) {}\n\
         extern \"C\" __global__ void fill_i64(int64_t *buf, int64_t value, const size_t numel) {}\n\
         extern \"C\" __global__ void fill_f8_e5m2(__nv_fp8_e5m2 *buf, __nv_fp8_e5m2 value, const size_t numel) {}",
        &[
            ("fill_u8", true, &["buf: &mut u8", "value: u8", "numel: usize"]),
            ("fill_i64", true, &["buf: &mut i64", "value: i64", "numel: usize"]),
            ("fill_f8_e5m2", true, &["buf: &mut F8E5M2", "value: F8E5M2", "numel: usize"]),
        ],
    ),
    row(
        "candle reduce.cu (layernorm with float4-free floats, uint16_t)",
        "extern \"C\" __global__ void where_u16_f32(const size_t numel, const size_t num_dims, const size_t *info,\n\
             const uint16_t *ids, const float *t, const float *f, float *out) {}",
        &[(
            "where_u16_f32",
            true,
            &["numel: usize", "num_dims: usize", "info: &usize", "ids: &u16", "t: &f32", "f: &f32", "out: &mut f32"],
        )],
    ),
    row(
        "candle custom-ops layernorm_kernels.cu (float *__restrict__, comments between params)",
        "extern \"C\" __global__ void rms_f32(\n\
             float *__restrict__ out,         // [num_tokens, hidden_size]\n\
             const float *__restrict__ input, // [num_tokens, hidden_size]\n\
             const float epsilon, const uint32_t num_tokens,\n\
             const uint32_t hidden_size) {}",
        &[("rms_f32", true, &["out: &mut f32", "input: &f32", "epsilon: f32", "num_tokens: u32", "hidden_size: u32"])],
    ),
    // ---------------------------------------------------------------- CuPy
    row(
        "CuPy test_raw.py (extern \"C\" block of kernels)",
        "extern \"C\" {\n\
         __global__ void test_sum(const float* x1, const float* x2, float* y, unsigned int N) {}\n\
         __global__ void test_multiply(const float* x1, const float* x2, float* y, unsigned int N) {}\n\
         }",
        &[
            ("test_sum", true, &["x1: &f32", "x2: &f32", "y: &mut f32", "N: u32"]),
            ("test_multiply", true, &["x1: &f32", "x2: &f32", "y: &mut f32", "N: u32"]),
        ],
    ),
    row(
        "CuPy test_raw.py (complex<float> from cupy/complex.cuh: opaque pointee)",
        "#include <cupy/complex.cuh>\n\
         extern \"C\" __global__ void test_sum(const complex<float>* x1, const complex<float>* x2, complex<float>* y, float a) {}",
        &[("test_sum", true, &["x1: &any", "x2: &any", "y: &mut any", "a: f32"])],
    ),
    row(
        "CuPy test_texture.py (3D texture, four outputs)",
        "__global__ void copyKernel3D_4ch(float* output_x, float* output_y, float* output_z, float* output_w,\n\
                                          cudaTextureObject_t texObj, int width, int height, int depth) {}",
        &[(
            "copyKernel3D_4ch",
            false,
            &[
                "output_x: &mut f32", "output_y: &mut f32", "output_z: &mut f32", "output_w: &mut f32", "texObj: TextureObject",
                "width: i32", "height: i32", "depth: i32",
            ],
        )],
    ),
    row(
        "CuPy examples/custom_struct/builtin_vectors.py (double3 by value and pointer)",
        "extern \"C\" __global__ void sum_kernel(const double3* lhs, double3 rhs, double3* out) {}",
        &[("sum_kernel", true, &["lhs: &Double3", "rhs: Double3", "out: &mut Double3"])],
    ),
    row(
        "CuPy examples/custom_struct/complex_struct.py (user struct by value)",
        "struct complex_struct { int4 a; char b; double c[2]; };\n\
         extern \"C\" __global__ void test_kernel(const complex_struct s, double* out) {}",
        &[("test_kernel", true, &["s: user complex_struct", "out: &mut f64"])],
    ),
    row(
        "CuPy get_struct_layout (unsigned long long *)",
        "extern \"C\" __global__ void get_struct_layout(unsigned long long *itemsize, unsigned long long *sizes,\n\
                                                        unsigned long long *offsets) {}",
        &[("get_struct_layout", true, &["itemsize: &mut u64", "sizes: &mut u64", "offsets: &mut u64"])],
    ),
    tmpl(
        "CuPy name_expressions (template + explicit instantiation)",
        "template<typename T>\n\
         __global__ void my_sqrt(T* input, int N) {}\n\
         template __global__ void my_sqrt<float>(float*, int);\n\
         extern \"C\" __global__ void my_func(double* input, int N) {}",
        &[("my_func", true, &["input: &mut f64", "N: i32"])],
        &["my_sqrt"],
    ),
    row(
        "CuPy performance docs (zero parameters)",
        "extern \"C\" __global__ void _test_ker_() { }\n\
         extern \"C\" __global__ void empty(void) { }",
        &[("_test_ker_", true, &[]), ("empty", true, &[])],
    ),
    // ---------------------------------------------------------------- flashinfer / TensorRT-LLM
    row(
        "flashinfer gdn_fused_decode_sm120.cu (using bf16 = __nv_bfloat16)",
        "using bf16 = __nv_bfloat16;\n\
         __global__ void gdn_fused_decode_kernel(\n\
             const bf16* __restrict__ hidden, const bf16* __restrict__ w_ba,\n\
             bf16* __restrict__ out, const int64_t* __restrict__ state_indices, float scale, int num_heads) {}",
        &[(
            "gdn_fused_decode_kernel",
            false,
            &["hidden: &bf16", "w_ba: &bf16", "out: &mut bf16", "state_indices: &i64", "scale: f32", "num_heads: i32"],
        )],
    ),
    row(
        "flashinfer fp8_moe_binding.cu (T const*, nested namespace)",
        "namespace flashinfer::sm90_push_fp8 {\n\
         __global__ void offsets_preflight_kernel(int64_t const* offsets, int num_problems,\n\
                                                  int64_t row_capacity, int64_t input_capacity) {}\n\
         }",
        &[(
            "flashinfer::sm90_push_fp8::offsets_preflight_kernel",
            false,
            &["offsets: &i64", "num_problems: i32", "row_capacity: i64", "input_capacity: i64"],
        )],
    ),
    row(
        "TensorRT-LLM cutlass_fused_moe_kernels.cuh (int const* const, int* const, nested namespace)",
        "namespace tensorrt_llm::kernels::cutlass_kernels {\n\
         __global__ void fusedBuildExpertMapsKernel(int const* const token_selected_experts,\n\
             int* const permuted_row_to_unpermuted_row, int64_t* const expert_first_token_offset,\n\
             int64_t const num_tokens, int const experts_per_token) {}\n\
         }",
        &[(
            "tensorrt_llm::kernels::cutlass_kernels::fusedBuildExpertMapsKernel",
            false,
            &[
                "token_selected_experts: &i32", "permuted_row_to_unpermuted_row: &mut i32", "expert_first_token_offset: &mut i64",
                "num_tokens: i64", "experts_per_token: i32",
            ],
        )],
    ),
    row(
        "flashinfer sm90_push_a2a_ops.cu (by-value struct, namespaces)",
        "namespace flashinfer {\nnamespace a2a {\n\
         struct PushLayout { int rank; void* base; };\n\
         __global__ void publish_abort_kernel(PushLayout L) {}\n\
         __global__ void count_kernel(PushLayout L, const int32_t* __restrict__ topk_ids, int num_experts_total,\n\
                                      int32_t* __restrict__ lc) {}\n\
         }  // namespace a2a\n}  // namespace flashinfer",
        &[
            ("flashinfer::a2a::publish_abort_kernel", false, &["L: user PushLayout"]),
            (
                "flashinfer::a2a::count_kernel",
                false,
                &["L: user PushLayout", "topk_ids: &i32", "num_experts_total: i32", "lc: &mut i32"],
            ),
        ],
    ),
    row(
        "flashinfer tinygemm-style (__launch_bounds__ before void, __grid_constant__ const P)",
        "struct TmaParams { unsigned long long desc[16]; };\n\
         extern \"C\" {\n\
         __global__ __launch_bounds__(384, 1) void\n\
         kernel_tinygemm(__nv_bfloat16* __restrict__ output, __nv_bfloat16* __restrict__ bias, int M, int N, int K,\n\
                         __grid_constant__ const TmaParams tma_params) {}\n\
         }",
        &[(
            "kernel_tinygemm",
            true,
            &["output: &mut bf16", "bias: &mut bf16", "M: i32", "N: i32", "K: i32", "tma_params: user TmaParams"],
        )],
    ),
    row(
        "flashinfer cake_router_gemm (const __grid_constant__ CUtensorMap, __cluster_dims__)",
        "extern \"C\" __global__ void __cluster_dims__(2, 1, 1)\n\
         kernel_router_gemm(const __grid_constant__ CUtensorMap tmap_a, __nv_bfloat16 const* __restrict__ mat_b,\n\
                            float* out, int num_experts) {}",
        &[("kernel_router_gemm", true, &["tmap_a: RawTensorMap", "mat_b: &bf16", "out: &mut f32", "num_experts: i32"])],
    ),
    tmpl(
        "flashinfer sampling.cuh (template kernel in namespace, then a plain one)",
        "namespace flashinfer { namespace sampling {\n\
         template <uint32_t BLOCK_THREADS, typename DType, typename IdType>\n\
         __global__ void TopKSamplingFromProbKernel(DType* probs, IdType* output, uint32_t d) {}\n\
         __global__ void SamplingSeedKernel(uint64_t* seed, uint64_t* offset) {}\n\
         } }",
        &[("flashinfer::sampling::SamplingSeedKernel", false, &["seed: &mut u64", "offset: &mut u64"])],
        &["TopKSamplingFromProbKernel"],
    ),
    row(
        "flashinfer mhc_post.cu (anonymous namespace inside a named one)",
        "namespace flashinfer::mhc {\nnamespace {\n\
         __global__ void mhc_post_kernel(float const* __restrict__ x, float* __restrict__ y, int n) {}\n\
         }  // namespace\n}",
        &[("flashinfer::mhc::mhc_post_kernel", false, &["x: &f32", "y: &mut f32", "n: i32"])],
    ),
    row(
        "flashinfer norm (half2 / __half2 / __nv_bfloat162 pointers)",
        "__global__ void rmsnorm_vec(const half2* __restrict__ in, __half2* out, const __nv_bfloat162* w, nv_bfloat16 eps) {}",
        &[("rmsnorm_vec", false, &["in: &Half2", "out: &mut Half2", "w: &Bf162", "eps: bf16"])],
    ),
    // ---------------------------------------------------------------- PyTorch / misc
    row(
        "PyTorch-style (std::int64_t, ::size_t, cuda::std::uint8_t)",
        "__global__ void index_kernel(std::int64_t n, ::size_t stride, const cuda::std::uint8_t* mask, std::uint32_t* out) {}",
        &[("index_kernel", false, &["n: i64", "stride: usize", "mask: &u8", "out: &mut u32"])],
    ),
    row(
        "PyTorch-style (at::Half* opaque pointee, namespaced struct by value)",
        "namespace at { struct Half { unsigned short x; }; }\n\
         namespace cuda_embed_test { struct Params { int n; }; }\n\
         __global__ void half_kernel(const at::Half* in, at::Half* out, cuda_embed_test::Params p) {}",
        &[("half_kernel", false, &["in: &any", "out: &mut any", "p: user Params"])],
    ),
    row(
        "every integer spelling",
        "__global__ void ints(char a, signed char b, unsigned char c, short d, short int e, unsigned short f,\n\
             unsigned short int g, int h, signed i, signed int j, unsigned k, unsigned int l, long m, long int n,\n\
             unsigned long o, long long p, long long int q, unsigned long long r, unsigned long long int s,\n\
             int8_t t, int16_t u, int32_t v, int64_t w, uint8_t x, uint16_t y, uint32_t z, uint64_t aa,\n\
             ptrdiff_t ab, intptr_t ac, uintptr_t ad, ssize_t ae, bool af, ushort ag, ulong ah) {}",
        &[(
            "ints",
            false,
            &[
                "a: i8", "b: i8", "c: u8", "d: i16", "e: i16", "f: u16", "g: u16", "h: i32", "i: i32", "j: i32", "k: u32", "l: u32",
                "m: i64", "n: i64", "o: u64", "p: i64", "q: i64", "r: u64", "s: u64", "t: i8", "u: i16", "v: i32", "w: i64",
                "x: u8", "y: u16", "z: u32", "aa: u64", "ab: isize", "ac: isize", "ad: usize", "ae: isize", "af: bool",
                "ag: u16", "ah: u64",
            ],
        )],
    ),
    row(
        "const values and qualifier order (int const, const unsigned, long const long)",
        "__global__ void quals(const int a, int const b, const unsigned c, unsigned const long long d, const double e) {}",
        &[("quals", false, &["a: i32", "b: i32", "c: u32", "d: u64", "e: f64"])],
    ),
    row(
        "vector types by value",
        "__global__ void vecs(float4 a, int2 b, uchar4 c, double2 d, longlong2 e, ulonglong2 f, short2 g, char4 h,\n\
                              uint3 i, float3 j, ushort4 k, long2 l, double4 m, dim3 n) {}",
        &[(
            "vecs",
            false,
            &[
                "a: Float4", "b: Int2", "c: UChar4", "d: Double2", "e: LongLong2", "f: ULongLong2", "g: Short2", "h: Char4",
                "i: UInt3", "j: Float3", "k: UShort4", "l: Long2", "m: Double4", "n: UInt3",
            ],
        )],
    ),
    row(
        "half, bfloat16, fp8, complex by value",
        "#include <cuComplex.h>\n\
         __global__ void scalars(__half a, half b, __nv_bfloat16 c, __half2 d, __nv_bfloat162 e, __nv_fp8_e4m3 f,\n\
                                 __nv_fp8_e5m2 g, cuComplex h, cuFloatComplex i, cuDoubleComplex j, CUtexObject k,\n\
                                 CUsurfObject l) {}",
        &[(
            "scalars",
            false,
            &[
                "a: f16", "b: f16", "c: bf16", "d: Half2", "e: Bf162", "f: F8E4M3", "g: F8E5M2", "h: Complex32", "i: Complex32",
                "j: Complex64", "k: TextureObject", "l: SurfaceObject",
            ],
        )],
    ),
    row(
        "pointer spellings (const T*, T const*, T* const, const T* const, __restrict, restrict)",
        "__global__ void ptrs(const float* a, float const* b, float* const c, const float* const d,\n\
                              float const* __restrict__ const e, double* __restrict f, int* restrict g,\n\
                              const double2* __restrict__ h, cuDoubleComplex* i, const cuComplex* j) {}",
        &[(
            "ptrs",
            false,
            &["a: &f32", "b: &f32", "c: &mut f32", "d: &f32", "e: &f32", "f: &mut f64", "g: &mut i32", "h: &Double2", "i: &mut Complex64", "j: &Complex32"],
        )],
    ),
    row(
        "pointer to pointer (T**, const T* const*, void**) and struct pointee",
        "struct Node { int v; };\n\
         __global__ void pp(float** a, const float* const* b, void** c, struct Node* d, const Node* e, char** argv) {}",
        &[("pp", false, &["a: raw", "b: raw", "c: raw", "d: &mut any", "e: &any", "argv: raw"])],
    ),
    row(
        "array parameters (float x[], const int y[16], [[maybe_unused]] attribute)",
        "__global__ void arrays(float x[], const int y[16], [[maybe_unused]] int n) {}",
        &[("arrays", false, &["x: &mut f32", "y: &i32", "n: i32"])],
    ),
    row(
        "#define'd types and #define KERNEL extern \"C\" __global__",
        "#define KERNEL extern \"C\" __global__\n\
         #define REAL double\n\
         #define INDEX unsigned long long\n\
         KERNEL void saxpy(REAL a, const REAL* x, REAL* y, INDEX n) {}",
        &[("saxpy", true, &["a: f64", "x: &f64", "y: &mut f64", "n: u64"])],
    ),
    row(
        "#define chains and a multi-line #define",
        "#define DTYPE \\\n    float\n\
         #define VEC_T DTYPE\n\
         #define GLOBAL __global__\n\
         GLOBAL void chained(const VEC_T* in, VEC_T* out) {}",
        &[("chained", false, &["in: &f32", "out: &mut f32"])],
    ),
    row(
        "typedef/using aliases, pointer typedefs, alias of alias",
        "typedef float real;\n\
         using index_t = long long;\n\
         typedef real* real_ptr;\n\
         typedef const real* creal_ptr;\n\
         typedef index_t idx;\n\
         typedef unsigned char uchar;\n\
         __global__ void aliased(real a, real_ptr b, creal_ptr c, idx n, const uchar* bytes) {}",
        &[("aliased", false, &["a: f32", "b: &mut f32", "c: &f32", "n: i64", "bytes: &u8"])],
    ),
    row(
        "user structs and enums: __align__, typedef struct, enum class, class",
        "struct __align__(16) Particle { float4 pos; float4 vel; };\n\
         typedef struct { int w, h; } Size;\n\
         enum class Mode : int { Add, Mul };\n\
         class Opts { public: int k; };\n\
         __global__ void users(Particle p, Size s, Mode m, Opts o, Particle* ps) {}",
        &[("users", false, &["p: user Particle", "s: user Size", "m: user Mode", "o: user Opts", "ps: &mut any"])],
    ),
    row(
        "comments everywhere (block, line, inside the list)",
        "/* a kernel */ extern \"C\" /* linkage */ __global__ // keyword\n\
         void /* ret */ commented( /* first */ const float* /* ptr */ x, // input\n\
             float* y /* output */, /* count: */ int n /* = 4 */) // done\n\
         {}",
        &[("commented", true, &["x: &f32", "y: &mut f32", "n: i32"])],
    ),
    row(
        "preprocessor lines around and inside the parameter list",
        "#include <cuda_fp16.h>\n\
         #pragma once\n\
         __global__ void with_pp(const __half* x,\n\
         #pragma unroll\n\
             __half* y,\n\
         #define N_DEFAULT 4\n\
             int n)\n\
         {}\n\
         #undef N_DEFAULT",
        &[("with_pp", false, &["x: &f16", "y: &mut f16", "n: i32"])],
    ),
    row(
        "backslash line splice inside the list (sources pasted from Python strings)",
        "extern \"C\" __global__ void test_sum(const float* x1, const float* x2, float* y, \\\n\
                                              unsigned int N) {}",
        &[("test_sum", true, &["x1: &f32", "x2: &f32", "y: &mut f32", "N: u32"])],
    ),
    row(
        "C++ linkage, namespaces, extern \"C++\" block inside extern \"C\"",
        "namespace outer { namespace inner {\n\
         __global__ void cxx_kernel(int* x) {}\n\
         } }\n\
         extern \"C\" {\n\
         __global__ void c_kernel(int* x) {}\n\
         extern \"C++\" { __global__ void back_to_cxx(int* x) {} }\n\
         }",
        &[
            ("outer::inner::cxx_kernel", false, &["x: &mut i32"]),
            ("c_kernel", true, &["x: &mut i32"]),
            ("back_to_cxx", false, &["x: &mut i32"]),
        ],
    ),
    row(
        "declaration then definition (unnamed, then named params) keeps one kernel with the names",
        "extern \"C\" __global__ void fwd(const float*, float*, size_t);\n\
         __device__ float helper(float v) { return v * 2.0f; }\n\
         extern \"C\" __global__ void fwd(const float* in, float* out, size_t n) {}",
        &[("fwd", true, &["in: &f32", "out: &mut f32", "n: usize"])],
    ),
    row(
        "things that only look like kernels: strings, __device__ functions, structs with methods",
        "const char* doc = \"__global__ void fake(int x)\";\n\
         struct Functor { __device__ float operator()(float x) const { return x; } };\n\
         __device__ __forceinline__ float relu(float x) { return x > 0.f ? x : 0.f; }\n\
         __global__ void real_kernel(Functor f, float* x) {}",
        &[("real_kernel", false, &["f: user Functor", "x: &mut f32"])],
    ),
    row(
        "default argument values and unnamed by-value builtins",
        "__global__ void defaults(float* x, float, unsigned long long, int n = 4, const int* flags = nullptr) {}",
        &[("defaults", false, &["x: &mut f32", "arg1: f32", "arg2: u64", "n: i32", "flags: &i32"])],
    ),
    tmpl(
        "template kernel followed by a plain kernel (prefix does not leak)",
        "template <typename T> __global__ void tk(T* x) {}\n\
         __global__ void plain(int* y) {}",
        &[("plain", false, &["y: &mut i32"])],
        &["tk"],
    ),
    tmpl(
        "explicit specialization and instantiation only",
        "template <typename T> __global__ void fill(T* x, T v);\n\
         template <> __global__ void fill<float>(float* x, float v) {}\n\
         template __global__ void fill<int>(int*, int);",
        &[],
        &["fill"],
    ),
    row(
        "issue 39: class-template instances by value, written out and through `using`",
        "template <typename T, int N> struct Tensor { T* data; long size[N]; };\n\
         using T1 = Tensor<float, 1>;\n\
         __global__ void k(Tensor<float, 1> t, ::lib::Pair<unsigned int, -2> p, T1 a, const Tensor<int, 2>* q) {}",
        &[("k", false, &["t: user Tensor_float_1", "p: user Pair_unsigned_int_neg2", "a: user T1", "q: &any"])],
    ),
];

fn check(row: &Row, parsed: &Parsed) {
    let from = row.from;
    let templates: Vec<String> = parsed.templates.iter().map(|k| k.name.clone()).collect();
    assert_eq!(templates, row.templates, "{from}: templates");
    let got: Vec<String> = parsed.kernels.iter().map(|k| k.qualified_name()).collect();
    let want: Vec<&str> = row.kernels.iter().map(|k| k.0).collect();
    assert_eq!(got, want, "{from}: kernel names");
    for (k, (name, extern_c, params)) in parsed.kernels.iter().zip(row.kernels) {
        assert_eq!(k.extern_c, *extern_c, "{from}: `{name}` extern \"C\"");
        assert_eq!(k.params.len(), params.len(), "{from}: `{name}` parameter count: {:?}", k.params);
        for (p, want) in k.params.iter().zip(params.iter()) {
            let (want_name, want_map) = want.split_once(": ").expect("row param is `name: mapping`");
            assert_eq!(p.name, want_name, "{from}: `{name}` parameter `{}`", p.text);
            let mapped = types::map(p, parsed, None)
                .unwrap_or_else(|e| panic!("{from}: `{name}` parameter `{}` did not map: {e}", p.text));
            assert_eq!(mapped.describe(), expect(want_map), "{from}: `{name}` parameter `{}`", p.text);
        }
    }
}

#[test]
fn real_world_signatures() {
    let mut n = 0;
    for row in ROWS {
        let parsed = signature::parse(row.src).unwrap_or_else(|e| panic!("{}: parse error {}", row.from, e.0));
        check(row, &parsed);
        n += row.kernels.len() + row.templates.len();
    }
    println!("{} rows, {n} kernel signatures", ROWS.len());
    assert!(n >= 60, "the table should hold at least 60 signatures, has {n}");
}

#[test]
fn launch_bounds_and_lines_are_recorded() {
    let parsed = signature::parse(
        "// line 1\n\
         extern \"C\" __global__ void __launch_bounds__(256, 2) k1(float* x) {}\n\
         __global__ __launch_bounds__(MAX_THREADS) void k2(float* x) {}\n\
         __global__ void k3(float* x) {}",
    )
    .unwrap();
    let lb: Vec<(&str, Vec<String>, usize)> =
        parsed.kernels.iter().map(|k| (k.name.as_str(), k.launch_bounds.clone(), k.line)).collect();
    assert_eq!(
        lb,
        [
            ("k1", vec!["256".to_string(), "2".to_string()], 2),
            ("k2", vec!["MAX_THREADS".to_string()], 3),
            ("k3", vec![], 4)
        ]
    );
}

#[test]
fn namespaces_are_split_for_mangling() {
    let parsed = signature::parse("namespace a::b { namespace c { __global__ void k(int n) {} } }").unwrap();
    assert_eq!(parsed.kernels[0].namespaces, ["a", "b", "c"]);
    assert_eq!(parsed.kernels[0].qualified_name(), "a::b::c::k");
}

#[test]
fn overloads_are_reported_not_generated() {
    let parsed = signature::parse(
        "__global__ void k(float* x) {}\n\
         __global__ void k(double* x) {}\n\
         __global__ void other(int n) {}",
    )
    .unwrap();
    assert_eq!(parsed.overloaded, ["k"]);
    assert_eq!(parsed.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), ["other"]);
}

/// The first parameter of the only kernel in `src`, mapped without a probe.
fn map_first(src: &str) -> Result<Mapped, String> {
    let parsed = signature::parse(src).map_err(|e| e.0)?;
    let k = parsed.kernels.first().expect("one kernel");
    types::map(&k.params[0], &parsed, None)
}

#[test]
fn errors_name_the_parameter() {
    let cases: &[(&str, &str, &str)] = &[
        ("__global__ void k(float& acc) {}", "acc", "reference"),
        ("struct P { int n; }; __global__ void k(const P& params) {}", "params", "reference"),
        ("struct P { int n; }; __global__ void k(P&& moved) {}", "moved", "reference"),
        ("__global__ void k(void v) {}", "v", "void"),
        ("__global__ void k(long double x) {}", "x", "unsupported type"),
        // A class-template instance maps (see the issue 39 row); a member type of one does not.
        (
            "template <typename T> struct Matrix {}; __global__ void k(Matrix<float>::type m) {}",
            "m",
            "unsupported type",
        ),
        // A function pointer is not device memory (the error quotes the declarator).
        ("__global__ void k(void (*callback)(int)) {}", "arg0", "(* callback)"),
    ];
    for (src, name, what) in cases {
        let err = map_first(src).expect_err(src);
        assert!(err.contains(&format!("`{name}`")), "{src}: error does not name `{name}`: {err}");
        assert!(err.contains(what), "{src}: error does not say {what}: {err}");
    }
}

#[test]
fn unbalanced_source_is_a_source_error() {
    let err = signature::parse("__global__ void k(float* x, int n {}").unwrap_err();
    assert!(err.0.contains('k'), "{}", err.0);
    assert!(signature::parse("__global__ ;").is_err());
}

#[test]
fn lexer_is_usable_on_its_own() {
    let l = lex::lex("#define T float\n#include <cuda_fp16.h>\nT* p; // c\n");
    let texts: Vec<&str> = l.tokens.iter().map(|t| t.text.as_str()).collect();
    assert_eq!(texts, ["float", "*", "p", ";"]);
    assert_eq!(l.includes, ["<cuda_fp16.h>"]);
    assert!(l.defines.contains_key("T"));
}

#[test]
fn globals_and_template_parameters_are_read() {
    use cuda_embed_macros_core::signature::{parse, TemplateKind};
    let src = r#"
        #define N 8
        namespace ns { __constant__ float coeffs[N][2]; }
        static __device__ int counter = 0, *where_;
        __device__ constexpr float PI = 3.14f;
        __device__ __forceinline__ float twice(float v) { return 2 * v; }
        extern __shared__ float smem[];
        template <typename T, unsigned int BLOCK = 256, bool FAST = false>
        __global__ void k(const T* x, T* y) {}
        template <> __global__ void k<float, 1, true>(const float* x, float* y) {}
        template <class... Ts> __global__ void pack(Ts... xs) {}
    "#;
    let p = parse(src).unwrap();
    let g: Vec<(String, Vec<String>, usize)> =
        p.globals.iter().map(|g| (g.qualified_name(), g.dims.clone(), g.elem.pointer_depth)).collect();
    assert_eq!(
        g,
        [
            ("ns::coeffs".to_string(), vec!["8".to_string(), "2".to_string()], 0),
            ("counter".to_string(), vec![], 0),
            ("where_".to_string(), vec![], 1),
        ]
    );
    assert_eq!(p.globals[0].literal_len(), Some(16));
    assert_eq!(p.globals[0].space, "__constant__");
    let names: Vec<&str> = p.templates.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["k", "pack"], "the explicit specialisation adds no template");
    let tp = p.templates[0].template.as_ref().unwrap();
    assert_eq!(tp[0].kind, TemplateKind::Type);
    assert_eq!(tp[1].kind, TemplateKind::Value("unsigned int".into()));
    assert_eq!(tp[1].default.as_deref(), Some("256"));
    assert_eq!(tp[2].kind, TemplateKind::Value("bool".into()));
    assert!(matches!(p.templates[1].template.as_ref().unwrap()[0].kind, TemplateKind::Unsupported(_)));
}
