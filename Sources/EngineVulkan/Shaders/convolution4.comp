#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Direct convolution computing four output channels of one pixel per invocation (each input
// value loaded once for the four), for layers whose channels per group are a multiple of 4.
// Parameters as convolution.comp's.
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
void main() {
    int C = p[0], H = p[1], W = p[2], OC = p[3], OH = p[4], OW = p[5], KH = p[6], KW = p[7];
    int SH = p[8], SW = p[9], DH = p[10], DW = p[11], PT = p[12], PL = p[13], G = p[14];
    int i = index();
    int plane = OH * OW;
    if (i >= (OC / 4) * plane) return;
    int ox = i % OW, oy = (i / OW) % OH, oc = (i / plane) * 4;
    int icg = C / G, ocg = OC / G, g = oc / ocg;
    vec4 sum = p[15] != 0 ? vec4(float(bias[oc]), float(bias[oc + 1]), float(bias[oc + 2]), float(bias[oc + 3])) : vec4(0.0);
    int kernel = KH * KW, stride = icg * kernel;
    for (int ic = 0; ic < icg; ic++) {
        int cin = g * icg + ic;
        for (int ky = 0; ky < KH; ky++) {
            int iy = oy * SH - PT + ky * DH;
            if (iy < 0 || iy >= H) continue;
            for (int kx = 0; kx < KW; kx++) {
                int ix = ox * SW - PL + kx * DW;
                if (ix < 0 || ix >= W) continue;
                float v = float(x[(cin * H + iy) * W + ix]);
                int k = (oc * icg + ic) * kernel + ky * KW + kx;
                sum += v * vec4(float(w[k]), float(w[k + stride]), float(w[k + 2 * stride]), float(w[k + 3 * stride]));
            }
        }
    }
    for (int j = 0; j < 4; j++) {
        float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc + j]) : 0.0;
        y[(oc + j) * plane + oy * OW + ox] = DATA(activate(sum[j], p[16], pf(17), pf(18), slope));
    }
}
