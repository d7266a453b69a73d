#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Dense convolution (groups 1) with the 64 lanes of a workgroup across neighbouring output
// pixels and 16 output channels per invocation: the weights a workgroup reads are the same
// for all its lanes (one load, broadcast; transposed to [OC/16][C][KH][KW][16]), each input
// value serves 16 multiply-adds. Parameters as convolution.comp's.
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA4 w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
void main() {
    int C = p[0], H = p[1], W = p[2], OC = p[3], OH = p[4], OW = p[5], KH = p[6], KW = p[7];
    int SH = p[8], SW = p[9], DH = p[10], DW = p[11], PT = p[12], PL = p[13];
    int plane = OH * OW;
    int pixel = int((gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * 64u + gl_LocalInvocationID.x);
    int block = int(gl_WorkGroupID.y), oc0 = block * 16;
    bool live = pixel < plane;
    int ox = live ? pixel % OW : 0, oy = live ? pixel / OW : 0;
    vec4 a0 = vec4(0.0), a1 = vec4(0.0), a2 = vec4(0.0), a3 = vec4(0.0);
    int base = block * C * KH * KW * 4;
    for (int ic = 0; ic < C; ic++) {
        for (int ky = 0; ky < KH; ky++) {
            int iy = oy * SH - PT + ky * DH;
            bool rowIn = iy >= 0 && iy < H;
            for (int kx = 0; kx < KW; kx++) {
                int ix = ox * SW - PL + kx * DW;
                float v = (rowIn && ix >= 0 && ix < W) ? float(x[(ic * H + iy) * W + ix]) : 0.0;
                int k = base + ((ic * KH + ky) * KW + kx) * 4;
                a0 += v * vec4(w[k]);
                a1 += v * vec4(w[k + 1]);
                a2 += v * vec4(w[k + 2]);
                a3 += v * vec4(w[k + 3]);
            }
        }
    }
    if (!live) return;
    vec4 acc[4] = vec4[4](a0, a1, a2, a3);
    for (int j = 0; j < 16; j++) {
        int oc = oc0 + j;
        if (oc >= OC) break;
        float s = acc[j / 4][j % 4] + (p[15] != 0 ? float(bias[oc]) : 0.0);
        float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
        y[oc * plane + pixel] = DATA(activate(s, p[16], pf(17), pf(18), slope));
    }
}
