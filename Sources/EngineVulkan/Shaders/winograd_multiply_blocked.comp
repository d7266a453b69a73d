#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// Winograd F(2×2, 3×3), step 2 of 3, for CPU devices (lavapipe): winograd_multiply.comp with
// each invocation computing 32 output channels × 16 neighbouring tiles (4 tile quads) instead
// of 16 × 4. On lavapipe every buffer load is a loop over the SIMD lanes (one per component),
// the uniform weight loads included, while the multiply-adds are whole-vector: per input
// channel this takes 4 vec4 loads of transformed input and 8 of weights for 512 multiply-adds
// (12 loads per 512, against 5 per 64), and the accumulators that spill stay whole vectors.
// The fastest on lavapipe of 16 channels × 1, 4, 8, 12, 16, 24 or 32 tiles and 32 × 1, 4, 8
// or 16 (the loops unrolled: without that 16 × 16 ran at 16 × 4's speed). Far too many
// registers per invocation for a GPU, which keeps winograd_multiply.comp. U is
// [16][OC'/16][C][16] with OC' a multiple of 32 (zero past the last channel), V [16][C][TP],
// M [16][OC][TP], fp32. Parameters as winograd_multiply.comp's (p[22] = OC'/16).
layout(std430, binding = 0) readonly buffer V { vec4 v[]; };
layout(std430, binding = 1) readonly buffer U { DATA4 u[]; };
layout(std430, binding = 2) writeonly buffer M { vec4 m[]; };
void main() {
    int C = p[0], OC = p[3], TQ = p[20] / 4, blocks = p[22];
    int q0 = int(gl_GlobalInvocationID.x) * 4;
    int block0 = int(gl_WorkGroupID.y) * 2, k = int(gl_WorkGroupID.z);
    // Quads past the last one read the last (in range, never stored).
    int vi[4];
    [[unroll]] for (int r = 0; r < 4; r++) vi[r] = k * C * TQ + min(q0 + r, TQ - 1);
    int ui = (k * blocks + block0) * C * 4;
    // a[(channel in the 32) * 4 + quad]: each a vec4 of 4 tiles.
    vec4 a[128];
    [[unroll]] for (int j = 0; j < 128; j++) a[j] = vec4(0.0);
    for (int ic = 0; ic < C; ic++) {
        vec4 t[4];
        [[unroll]] for (int r = 0; r < 4; r++) t[r] = v[vi[r] + ic * TQ];
        [[unroll]] for (int b = 0; b < 2; b++) {
            [[unroll]] for (int j = 0; j < 4; j++) {
                vec4 w = vec4(u[ui + (b * C + ic) * 4 + j]);
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
