#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// A depthwise convolution (one input and one output channel per group; any kernel, stride,
// dilation and padding) in the packed 4-channel layout (pack4.glsl): 4 neighbouring pixels of
// a row × one quad of channels (the workgroup's y) per invocation, each input and weight a
// vec4. The input and the output in either layout (p[20], p[21]). Weights [C/4][KH][KW] vec4s,
// zero past the last channel. p as convolution_pack4.comp's.
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 0) readonly buffer X4 { DATA4 x4[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA4 w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { DATA4 y4[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
#include "pack4.glsl"
void main() {
    int C = p[0], H = p[1], W = p[2], OH = p[4], OW = p[5], KH = p[6], KW = p[7];
    int SH = p[8], SW = p[9], DH = p[10], DW = p[11], PT = p[12], PL = p[13], runs = p[22];
    int item = int((gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * 64u + gl_LocalInvocationID.x);
    if (item >= OH * runs) return;
    int c4 = int(gl_WorkGroupID.y), oy = item / runs, ox0 = (item % runs) * 4;
    int plane = H * W;
    bool packedIn = p[20] != 0;
    vec4 s[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
    for (int ky = 0; ky < KH; ky++) {
        int iy = oy * SH - PT + ky * DH;
        if (iy < 0 || iy >= H) continue;
        for (int kx = 0; kx < KW; kx++) {
            vec4 wk = vec4(w[c4 * KH * KW + ky * KW + kx]);
            int ix = ox0 * SW - PL + kx * DW;
            for (int q = 0; q < 4; q++, ix += SW) {
                if (ix < 0 || ix >= W) continue;
                s[q] += LOAD4(x, x4, packedIn, c4, iy * W + ix, C, plane) * wk;
            }
        }
    }
    vec4 b = vec4(0.0);
    if (p[15] != 0) {
        for (int j = 0; j < 4; j++) b[j] = c4 * 4 + j < C ? float(bias[c4 * 4 + j]) : 0.0;
    }
    for (int q = 0; q < 4; q++) {
        if (ox0 + q < OW) store4(p[21] != 0, c4, oy * OW + ox0 + q, C, OH * OW, activate4(s[q] + b, c4, C, 16));
    }
}
