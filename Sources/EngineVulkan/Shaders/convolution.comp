#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Direct convolution, any kernel, stride, dilation, padding and groups, with bias and a fused
// activation: one invocation per output value. p: C H W OC OH OW KH KW SH SW DH DW PT PL
// groups hasBias act a b slopeCount
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
    int icg = C / G, ocg = OC / G, g = oc / ocg;
    float sum = p[15] != 0 ? float(bias[oc]) : 0.0;
    for (int ic = 0; ic < icg; ic++) {
        int cin = g * icg + ic;
        for (int ky = 0; ky < KH; ky++) {
            int iy = oy * SH - PT + ky * DH;
            if (iy < 0 || iy >= H) continue;
            for (int kx = 0; kx < KW; kx++) {
                int ix = ox * SW - PL + kx * DW;
                if (ix < 0 || ix >= W) continue;
                sum += float(x[(cin * H + iy) * W + ix]) * float(w[((oc * icg + ic) * KH + ky) * KW + kx]);
            }
        }
    }
    float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
    y[i] = DATA(activate(sum, p[16], pf(17), pf(18), slope));
}
