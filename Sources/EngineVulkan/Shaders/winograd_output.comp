#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Winograd F(2×2, 3×3), step 3 of 3: each invocation takes one output channel's 16 products
// of one tile to its 2×2 outputs Aᵀ M A (Aᵀ = [1 1 1 0; 0 1 −1 −1]), adds the bias, applies
// the activation and stores the outputs inside the picture. Parameters as
// winograd_multiply.comp's.
layout(std430, binding = 0) readonly buffer M { float m[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
void main() {
    int OC = p[3], OH = p[4], OW = p[5], T = p[20], TP = p[21], TW = p[22];
    int i = index();
    if (i >= OC * T) return;
    int oc = i / T, t = i % T;
    float s[16];
    for (int k = 0; k < 16; k++) s[k] = m[(k * OC + oc) * TP + t];
    float g0[4], g1[4];
    for (int c = 0; c < 4; c++) {
        g0[c] = s[c] + s[4 + c] + s[8 + c];
        g1[c] = s[4 + c] - s[8 + c] - s[12 + c];
    }
    float out4[4] = float[4](g0[0] + g0[1] + g0[2], g0[1] - g0[2] - g0[3], g1[0] + g1[1] + g1[2], g1[1] - g1[2] - g1[3]);
    float b = p[15] != 0 ? float(bias[oc]) : 0.0;
    float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
    int oy0 = (t / TW) * 2, ox0 = (t % TW) * 2, plane = OH * OW;
    for (int r = 0; r < 2; r++) {
        int oy = oy0 + r;
        if (oy >= OH) break;
        for (int c = 0; c < 2; c++) {
            int ox = ox0 + c;
            if (ox >= OW) break;
            y[oc * plane + oy * OW + ox] = DATA(activate(out4[r * 2 + c] + b, p[16], pf(17), pf(18), slope));
        }
    }
}
