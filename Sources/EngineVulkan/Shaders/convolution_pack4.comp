#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// A dense convolution (groups 1; any kernel, stride, dilation and padding) in the packed
// 4-channel layout (pack4.glsl): one invocation computes 4 neighbouring pixels of a row × the
// 4 output channels of one quad (the workgroup's y), each input quad loaded as one vec4 and
// each weight as a 4 × 4 block loaded once for the 4 pixels: 64 multiply-adds for 8 vec4
// loads. The input and the output in either layout (p[20], p[21]: 1 packed, 0 plain).
// Weights [OC/4][C/4][KH][KW][4 input lanes] vec4s of 4 output channels, zero past the last
// channel either way. p: convolution.comp's 0–19, then input packed, output packed, runs of
// 4 pixels per output row.
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 0) readonly buffer X4 { DATA4 x4[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA4 w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { DATA4 y4[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
#include "pack4.glsl"
void main() {
    int C = p[0], H = p[1], W = p[2], OC = p[3], OH = p[4], OW = p[5], KH = p[6], KW = p[7];
    int SH = p[8], SW = p[9], DH = p[10], DW = p[11], PT = p[12], PL = p[13], runs = p[22];
    int item = int((gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * 64u + gl_LocalInvocationID.x);
    if (item >= OH * runs) return;
    int oc4 = int(gl_WorkGroupID.y), oy = item / runs, ox0 = (item % runs) * 4;
    int C4 = (C + 3) / 4, K = KH * KW, plane = H * W;
    bool packedIn = p[20] != 0;
    vec4 s[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
    for (int c4 = 0; c4 < C4; c4++) {
        for (int ky = 0; ky < KH; ky++) {
            int iy = oy * SH - PT + ky * DH;
            if (iy < 0 || iy >= H) continue;
            for (int kx = 0; kx < KW; kx++) {
                int k = ((oc4 * C4 + c4) * K + ky * KW + kx) * 4;
                vec4 w0 = vec4(w[k]), w1 = vec4(w[k + 1]), w2 = vec4(w[k + 2]), w3 = vec4(w[k + 3]);
                int ix = ox0 * SW - PL + kx * DW;
                for (int q = 0; q < 4; q++, ix += SW) {
                    if (ix < 0 || ix >= W) continue;
                    vec4 v = LOAD4(x, x4, packedIn, c4, iy * W + ix, C, plane);
                    s[q] += v.x * w0 + v.y * w1 + v.z * w2 + v.w * w3;
                }
            }
        }
    }
    vec4 b = vec4(0.0);
    if (p[15] != 0) {
        for (int j = 0; j < 4; j++) b[j] = oc4 * 4 + j < OC ? float(bias[oc4 * 4 + j]) : 0.0;
    }
    for (int q = 0; q < 4; q++) {
        if (ox0 + q < OW) store4(p[21] != 0, oc4, oy * OW + ox0 + q, OC, OH * OW, activate4(s[q] + b, oc4, OC, 16));
    }
}
