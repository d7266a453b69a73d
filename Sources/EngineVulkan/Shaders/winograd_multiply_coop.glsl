// Winograd F(2×2, 3×3), step 2 of 3, on cooperative matrices (GL_NV_cooperative_matrix): the 16
// products M[k] = U[k] · V[k] (k, the workgroup's z) as matrix products of 64 output channels ×
// 64 tiles a workgroup (workgroup y, x), in slices of 16 input channels staged in shared
// memory as fp16 and multiplied on 16 × 8 × 16 fragments with fp32 sums, the fragments and
// subgroups as convolution_gemm_coop.glsl's. Chosen only with fp16 storage: the weights are
// fp16 already; the transformed inputs, fp32 in V, are rounded to fp16 for the fragments (sums
// of at most four inputs, ±: the range holds).
//
// The including shader defines COOP for the cooperative-matrix build; without it (the
// `_emulated` build) the same staging and output run with the products computed lane by lane
// from the same shared tiles, so the CPU device the tests run on checks everything but the
// fragment loads, product and store.
//
// U is [16][OC/16][C][16] (winograd_multiply.comp's; zero past the last channel), V
// [16][C][TP], M [16][OC][TP], fp32. Parameters as winograd_input.comp's, then p[22] =
// output-channel blocks of 16 in U.
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
layout(std430, binding = 0) readonly buffer V { float v[]; };
layout(std430, binding = 1) readonly buffer U { DATA u[]; };
layout(std430, binding = 2) writeonly buffer M { float m[]; };
shared HALF as_[64 * 16];
shared HALF bs[16 * 64];
shared float cs[64 * 64];
void main() {
    int C = p[0], OC = p[3], TP = p[20], blocks = p[22];
    int lane = int(gl_LocalInvocationID.x);
    int t0 = int(gl_WorkGroupID.x) * 64, block = int(gl_WorkGroupID.y), k = int(gl_WorkGroupID.z);
#ifdef COOP
    int sg = int(gl_SubgroupID);
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> sums[16];
    [[unroll]] for (int f = 0; f < 16; f++) sums[f] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
#else
    int tx = lane & 7, ty = lane >> 3;
    vec4 sums[16];
    for (int f = 0; f < 16; f++) sums[f] = vec4(0.0);
#endif
    // This lane stages output channel `oc`'s weights and tile `t`'s inputs.
    int oc = block * 64 + lane, t = t0 + lane;
    bool weighted = oc < blocks * 16, live = t < TP;
    for (int c0 = 0; c0 < C; c0 += 16) {
        for (int c = 0; c < 16; c++) {
            int ic = c0 + c;
            as_[lane * 16 + c] = HALF(weighted && ic < C ? float(u[((k * blocks + oc / 16) * C + ic) * 16 + oc % 16]) : 0.0);
            bs[c * 64 + lane] = HALF(live && ic < C ? v[(k * C + ic) * TP + t] : 0.0);
        }
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
        for (int c = 0; c < 16; c++) {
            vec4 lo = vec4(bs[c * 64 + tx * 8], bs[c * 64 + tx * 8 + 1], bs[c * 64 + tx * 8 + 2], bs[c * 64 + tx * 8 + 3]);
            vec4 hi = vec4(bs[c * 64 + tx * 8 + 4], bs[c * 64 + tx * 8 + 5], bs[c * 64 + tx * 8 + 6], bs[c * 64 + tx * 8 + 7]);
            for (int j = 0; j < 8; j++) {
                float a = float(as_[(ty * 8 + j) * 16 + c]);
                sums[j * 2] += a * lo;
                sums[j * 2 + 1] += a * hi;
            }
        }
#endif
        barrier();
    }
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
    if (!live) return;
    for (int j = 0; j < 64; j++) {
        int o = block * 64 + j;
        if (o >= OC) return;
        m[(k * OC + o) * TP + t] = cs[j * 64 + lane];
    }
}
