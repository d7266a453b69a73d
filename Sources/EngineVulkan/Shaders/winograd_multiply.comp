#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Winograd F(2×2, 3×3), step 2 of 3: the 16 matrix products M[k] = U[k] · V[k] (k, the
// position in the 4×4 transformed tile, is the workgroup's z). Each invocation computes 16
// output channels × 4 neighbouring tiles (16 vec4 accumulators): per input channel one vec4
// of transformed input and four vec4s of transformed weights, 64 multiply-adds. The 64 lanes
// of a workgroup take neighbouring tile quads and the same 16 channels (workgroup y), so the
// weights they read are the same for all (broadcast). U is [16][OC/16][C][16] (zero past
// the last channel), V [16][C][TP], M [16][OC][TP], fp32. Parameters as winograd_input.comp's,
// then p[22] = output-channel blocks of 16.
layout(std430, binding = 0) readonly buffer V { vec4 v[]; };
layout(std430, binding = 1) readonly buffer U { DATA4 u[]; };
layout(std430, binding = 2) writeonly buffer M { vec4 m[]; };
void main() {
    int C = p[0], OC = p[3], TQ = p[20] / 4, blocks = p[22];
    int q = int(gl_GlobalInvocationID.x);
    int block = int(gl_WorkGroupID.y), k = int(gl_WorkGroupID.z);
    bool live = q < TQ;
    int vi = k * C * TQ + (live ? q : 0), ui = (k * blocks + block) * C * 4;
    vec4 a[16];
    for (int j = 0; j < 16; j++) a[j] = vec4(0.0);
    for (int ic = 0; ic < C; ic++) {
        vec4 t = v[vi + ic * TQ];
        for (int j = 0; j < 4; j++) {
            vec4 w = vec4(u[ui + ic * 4 + j]);
            a[j * 4] += w.x * t;
            a[j * 4 + 1] += w.y * t;
            a[j * 4 + 2] += w.z * t;
            a[j * 4 + 3] += w.w * t;
        }
    }
    if (!live) return;
    for (int j = 0; j < 16; j++) {
        int oc = block * 16 + j;
        if (oc >= OC) break;
        m[(k * OC + oc) * TQ + q] = a[j];
    }
}
