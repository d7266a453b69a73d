#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// Winograd F(2×2, 3×3), step 2 of 3, for CPU devices (lavapipe) in fp32: the blocked
// multiply (winograd_multiply_blocked.comp, which see) with the weights in a uniform buffer
// at binding 5, where lavapipe loads them by an unrolled gather rather than a loop over the
// SIMD lanes. One binding holds at most 64 KiB, so a dispatch takes the positions
// k = p[23] … p[23] + (workgroups in z) − 1, and U holds those positions' weights only.
layout(std430, binding = 0) readonly buffer V { vec4 v[]; };
layout(std140, binding = 5) uniform U { vec4 u[4096]; };
layout(std430, binding = 2) writeonly buffer M { vec4 m[]; };
void main() {
    int C = p[0], OC = p[3], TQ = p[20] / 4, blocks = p[22];
    int q0 = int(gl_GlobalInvocationID.x) * 4;
    int block0 = int(gl_WorkGroupID.y) * 2, kk = int(gl_WorkGroupID.z), k = p[23] + kk;
    // Quads past the last one read the last (in range, never stored).
    int vi[4];
    [[unroll]] for (int r = 0; r < 4; r++) vi[r] = k * C * TQ + min(q0 + r, TQ - 1);
    int ui = (kk * blocks + block0) * C * 4;
    // a[(channel in the 32) * 4 + quad]: each a vec4 of 4 tiles.
    vec4 a[128];
    [[unroll]] for (int j = 0; j < 128; j++) a[j] = vec4(0.0);
    for (int ic = 0; ic < C; ic++) {
        vec4 t[4];
        [[unroll]] for (int r = 0; r < 4; r++) t[r] = v[vi[r] + ic * TQ];
        [[unroll]] for (int b = 0; b < 2; b++) {
            [[unroll]] for (int j = 0; j < 4; j++) {
                vec4 w = u[ui + (b * C + ic) * 4 + j];
                int c = (b * 4 + j) * 4;
                [[unroll]] for (int r = 0; r < 4; r++) {
                    a[c * 4 + r] += w.x * t[r];
                    a[(c + 1) * 4 + r] += w.y * t[r];
                    a[(c + 2) * 4 + r] += w.z * t[r];
                    a[(c + 3) * 4 + r] += w.w * t[r];
                }
            }
        }
    }
    [[unroll]] for (int r = 0; r < 4; r++) {
        if (q0 + r >= TQ) return;
        [[unroll]] for (int j = 0; j < 32; j++) {
            int oc = block0 * 16 + j;
            if (oc >= OC) break;
            m[(k * OC + oc) * TQ + q0 + r] = a[j * 4 + r];
        }
    }
}
