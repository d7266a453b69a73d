// convolution_gemm.glsl's implicit matrix product (64 output channels × 64 pixels a
// workgroup, slices of 16 taps) with its products on cooperative matrices
// (GL_NV_cooperative_matrix): fp16 A (weights, 16 × 16) and B (inputs, 16 × 8) fragments, fp32
// sums. Chosen only with fp16 storage, whose values and weights are fp16 already, so the
// products are what the fp16 build of convolution_gemm.comp computes (fp32 sums), in another
// order; on NVIDIA devices that list the 16 × 8 × 16 fp16 → fp32 shape at subgroup scope
// with 32-lane subgroups (two per workgroup, each taking 32 of the tile's channels: 2 × 8
// fragments of 16 × 8 sums).
//
// The including shader defines COOP for the cooperative-matrix build; without it (the
// `_emulated` build) the same staging, slices and output run with the products computed
// lane by lane from the same shared tiles (each lane 8 channels × 8 pixels), so the
// CPU device the tests run on checks everything but the fragment loads, product and store.
//
// Shared memory: the slice's weights as A, [64 channels][16 taps] (row-major, stride 16),
// its inputs as B, [16 taps][64 pixels] (stride 64), both fp16 for the fragments; the sums,
// [64 channels][64 pixels] fp32, written once at the end for the bias, activation and the
// store, one channel's 64 pixels per step, a pixel per lane.
// Weights as convolution_gemm.glsl's ([OC/64][KP][64]); parameters as its.
#ifdef COOP
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#define HALF float16_t
#else
#define HALF float
#endif
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA4 w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
#include "convolution_gemm_gather.glsl"
shared HALF as_[64 * 16];
shared HALF bs[16 * 64];
shared float cs[64 * 64];
void main() {
    int OC = p[3], P = p[4] * p[5], KP = p[20];
    int lane = int(gl_LocalInvocationID.x);
    int tile = int(gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x);
    int block = int(gl_WorkGroupID.y);
    // This lane gathers the taps of the tile's pixel `lane`, and writes that pixel at the end.
    int gp = tile * 64 + lane;
    Gather g = gatherStart(gp);
#ifdef COOP
    // This subgroup's 32 channels: two fragments of 16 rows, each beside the 8 of 8 pixels.
    int sg = int(gl_SubgroupID);
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> sums[16];
    // Unrolled, so that every fragment index is a constant (fragments stay in registers).
    [[unroll]] for (int f = 0; f < 16; f++) sums[f] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
#else
    // This lane's 8 channels (ty) × 8 pixels (tx), as convolution_gemm.glsl's lanes.
    int tx = lane & 7, ty = lane >> 3;
    vec4 sums[16];
    for (int f = 0; f < 16; f++) sums[f] = vec4(0.0);
#endif
    int wbase = block * KP * 16;
    for (int k0 = 0; k0 < KP; k0 += 16) {
        // The weights: 16 taps × 64 channels, 4 vec4s per lane, into A transposed.
        for (int i = 0; i < 4; i++) {
            int v = lane + 64 * i, row = v >> 4, col = (v & 15) * 4;
            vec4 wv = vec4(w[wbase + k0 * 16 + v]);
            for (int e = 0; e < 4; e++) as_[(col + e) * 16 + row] = HALF(wv[e]);
        }
        // The inputs: this lane's pixel at 16 taps.
        for (int k = 0; k < 16; k++) bs[k * 64 + lane] = HALF(gatherNext(g));
        barrier();
#ifdef COOP
        [[unroll]] for (int i = 0; i < 2; i++) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a;
            coopMatLoadNV(a, as_, uint((sg * 32 + i * 16) * 16), 16u, false);
            [[unroll]] for (int j = 0; j < 8; j++) {
                fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b;
                coopMatLoadNV(b, bs, uint(j * 8), 64u, false);
                sums[i * 8 + j] = coopMatMulAddNV(a, b, sums[i * 8 + j]);
            }
        }
#else
        for (int k = 0; k < 16; k++) {
            vec4 lo = vec4(bs[k * 64 + tx * 8], bs[k * 64 + tx * 8 + 1], bs[k * 64 + tx * 8 + 2], bs[k * 64 + tx * 8 + 3]);
            vec4 hi = vec4(bs[k * 64 + tx * 8 + 4], bs[k * 64 + tx * 8 + 5], bs[k * 64 + tx * 8 + 6], bs[k * 64 + tx * 8 + 7]);
            for (int j = 0; j < 8; j++) {
                float a = float(as_[(ty * 8 + j) * 16 + k]);
                sums[j * 2] += a * lo;
                sums[j * 2 + 1] += a * hi;
            }
        }
#endif
        barrier();
    }
    // The sums into shared memory: row = channel, column = pixel.
#ifdef COOP
    [[unroll]] for (int i = 0; i < 2; i++) {
        [[unroll]] for (int j = 0; j < 8; j++) coopMatStoreNV(sums[i * 8 + j], cs, uint((sg * 32 + i * 16) * 64 + j * 8), 64u, false);
    }
#else
    for (int j = 0; j < 8; j++) {
        for (int e = 0; e < 4; e++) {
            cs[(ty * 8 + j) * 64 + tx * 8 + e] = sums[j * 2][e];
            cs[(ty * 8 + j) * 64 + tx * 8 + 4 + e] = sums[j * 2 + 1][e];
        }
    }
#endif
    barrier();
    if (!g.live) return;
    for (int j = 0; j < 64; j++) {
        int oc = block * 64 + j;
        if (oc >= OC) return;
        float b = p[15] != 0 ? float(bias[oc]) : 0.0;
        float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
        y[oc * P + gp] = DATA(activate(cs[j * 64 + lane] + b, p[16], pf(17), pf(18), slope));
    }
}
