#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Winograd F(2×2, 3×3), step 1 of 3: each invocation takes one 4×4 input window of one
// channel (the one under a 2×2 output tile, zero outside the picture) to its 16 transformed
// values Bᵀ d B, stored [16][C][TP] in fp32 (TP: the tile count rounded up to 4, the extra
// tiles zero, so the multiply reads whole vec4s). Parameters as convolution.comp's, then
// p[20] = tiles, p[21] = TP, p[22] = tiles per row.
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) writeonly buffer V { float v[]; };
void main() {
    int C = p[0], H = p[1], W = p[2], PT = p[12], PL = p[13];
    int T = p[20], TP = p[21], TW = p[22];
    int i = index();
    if (i >= C * TP) return;
    int ic = i / TP, t = i % TP;
    bool live = t < T;
    int iy0 = (live ? t / TW : 0) * 2 - PT, ix0 = (live ? t % TW : 0) * 2 - PL;
    float d[16];
    for (int r = 0; r < 4; r++) {
        int iy = iy0 + r;
        bool rowIn = live && iy >= 0 && iy < H;
        for (int c = 0; c < 4; c++) {
            int ix = ix0 + c;
            d[r * 4 + c] = (rowIn && ix >= 0 && ix < W) ? float(x[(ic * H + iy) * W + ix]) : 0.0;
        }
    }
    // Bᵀ d (rows), then (Bᵀ d) B (columns); Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1].
    float e[16];
    for (int c = 0; c < 4; c++) {
        e[c] = d[c] - d[8 + c];
        e[4 + c] = d[4 + c] + d[8 + c];
        e[8 + c] = d[8 + c] - d[4 + c];
        e[12 + c] = d[4 + c] - d[12 + c];
    }
    int stride = C * TP, base = ic * TP + t;
    for (int r = 0; r < 4; r++) {
        v[base + (r * 4) * stride] = e[r * 4] - e[r * 4 + 2];
        v[base + (r * 4 + 1) * stride] = e[r * 4 + 1] + e[r * 4 + 2];
        v[base + (r * 4 + 2) * stride] = e[r * 4 + 2] - e[r * 4 + 1];
        v[base + (r * 4 + 3) * stride] = e[r * 4 + 1] - e[r * 4 + 3];
    }
}
