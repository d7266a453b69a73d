#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Dense 1×1 convolution, stride 1, no padding, for CPU devices (lavapipe) in fp32:
// convolution_1x1_lanes.comp (lanes across neighbouring pixels, 16 output channels per lane)
// with the weights in a uniform buffer at binding 5, where lavapipe loads them by an unrolled
// gather rather than a loop over the SIMD lanes (as winograd_multiply_uniform.comp). One
// binding holds at most 64 KiB, so a dispatch takes the blocks of 16 output channels
// p[20] … p[20] + (workgroups in y) − 1, and U holds those blocks' weights only:
// [blocks][C][16]. Parameters as convolution.comp's, then p[20].
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std140, binding = 5) uniform U { vec4 u[4096]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(std430, binding = 3) readonly buffer B { float bias[]; };
layout(std430, binding = 4) readonly buffer S { float slopes[]; };
void main() {
    int C = p[0], OC = p[3], plane = p[4] * p[5];
    int pixel = int((gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * 64u + gl_LocalInvocationID.x);
    int local = int(gl_WorkGroupID.y), oc0 = (p[20] + local) * 16;
    bool live = pixel < plane;
    int at = live ? pixel : 0;
    vec4 a0 = vec4(0.0), a1 = vec4(0.0), a2 = vec4(0.0), a3 = vec4(0.0);
    int k = local * C * 4;
    for (int ic = 0; ic < C; ic++, k += 4) {
        float v = x[ic * plane + at];
        a0 += v * u[k];
        a1 += v * u[k + 1];
        a2 += v * u[k + 2];
        a3 += v * u[k + 3];
    }
    if (!live) return;
    vec4 acc[4] = vec4[4](a0, a1, a2, a3);
    for (int j = 0; j < 16; j++) {
        int oc = oc0 + j;
        if (oc >= OC) break;
        float s = acc[j / 4][j % 4] + (p[15] != 0 ? bias[oc] : 0.0);
        float slope = p[19] > 0 ? slopes[p[19] == 1 ? 0 : oc] : 0.0;
        y[oc * plane + pixel] = activate(s, p[16], pf(17), pf(18), slope);
    }
}
