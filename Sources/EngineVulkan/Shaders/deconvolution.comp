#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Transposed convolution (the reference's scatter-add, no kernel flip) gathered: one
// invocation per output value sums every input pixel and kernel tap that lands on it after the
// bias, then the fused activation. Weights [C][OC/G][KH][KW]. Parameters as convolution.comp's.
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
void main() {
    int C = p[0], H = p[1], W = p[2], OC = p[3], OH = p[4], OW = p[5], KH = p[6], KW = p[7];
    int SH = p[8], SW = p[9], DH = p[10], DW = p[11], PT = p[12], PL = p[13], G = p[14];
    int i = index();
    if (i >= OC * OH * OW) return;
    int ox = i % OW, oy = (i / OW) % OH, oc = i / (OW * OH);
    int icg = C / G, ocg = OC / G, g = oc / ocg, ocl = oc % ocg;
    float sum = p[15] != 0 ? float(bias[oc]) : 0.0;
    for (int ic = g * icg; ic < (g + 1) * icg; ic++) {
        for (int ky = 0; ky < KH; ky++) {
            int ty = oy + PT - ky * DH;
            if (ty < 0 || ty % SH != 0 || ty / SH >= H) continue;
            int iy = ty / SH;
            for (int kx = 0; kx < KW; kx++) {
                int tx = ox + PL - kx * DW;
                if (tx < 0 || tx % SW != 0 || tx / SW >= W) continue;
                sum += float(x[(ic * H + iy) * W + tx / SW]) * float(w[((ic * ocg + ocl) * KH + ky) * KW + kx]);
            }
        }
    }
    float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
    y[i] = DATA(activate(sum, p[16], pf(17), pf(18), slope));
}
