#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// Winograd F(2×2, 3×3), step 1 of 3: each invocation takes four neighbouring 2×2 output tiles
// of one channel (a quad: tiles are numbered along rows padded to a multiple of 4, so a quad
// never wraps to the next row; the tiles past the row's end see only zeros) and transforms
// the 4×4 input window under each (zero outside the picture) to its 16 values Bᵀ d B. The
// four windows overlap: one 4×10 read serves them (40 loads, not 64), and each of the 16
// values is stored for the four tiles as one vec4 (on lavapipe every load and store is a loop
// over the SIMD lanes, so their number is what counts). V is [16][C][TP] in fp32 (TP: the
// tile count, a multiple of 4 as the rows are). Parameters as convolution.comp's, then
// p[20] = TP, p[21] = tiles per padded row, p[22] the multiply's, p[23] = 1 where the input is
// in the packed 4-channel layout (pack4.glsl; read a value at a time at its packed index).
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) writeonly buffer V { vec4 v[]; };
void main() {
    int C = p[0], H = p[1], W = p[2], PT = p[12], PL = p[13];
    int TQ = p[20] / 4, TW = p[21];
    int i = index();
    if (i >= C * TQ) return;
    int ic = i / TQ, q = i % TQ;
    int iy0 = ((q * 4) / TW) * 2 - PT, ix0 = ((q * 4) % TW) * 2 - PL;
    // Bᵀ d down each of the 10 columns: e[r * 10 + c]; Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1].
    float e[40];
    [[unroll]] for (int c = 0; c < 10; c++) {
        int ix = ix0 + c;
        bool colIn = ix >= 0 && ix < W;
        float d[4];
        [[unroll]] for (int r = 0; r < 4; r++) {
            int iy = iy0 + r;
            int at = p[23] != 0 ? (((ic >> 2) * H + iy) * W + ix) * 4 + (ic & 3) : (ic * H + iy) * W + ix;
            d[r] = (colIn && iy >= 0 && iy < H) ? float(x[at]) : 0.0;
        }
        e[c] = d[0] - d[2];
        e[10 + c] = d[1] + d[2];
        e[20 + c] = d[2] - d[1];
        e[30 + c] = d[1] - d[3];
    }
    // Then (Bᵀ d) B along each row, tile j's window starting at column 2j.
    int stride = C * TQ, base = ic * TQ + q;
    [[unroll]] for (int r = 0; r < 4; r++) {
        vec4 o0, o1, o2, o3;
        [[unroll]] for (int j = 0; j < 4; j++) {
            int c = r * 10 + j * 2;
            o0[j] = e[c] - e[c + 2];
            o1[j] = e[c + 1] + e[c + 2];
            o2[j] = e[c + 2] - e[c + 1];
            o3[j] = e[c + 1] - e[c + 3];
        }
        v[base + (r * 4) * stride] = o0;
        v[base + (r * 4 + 1) * stride] = o1;
        v[base + (r * 4 + 2) * stride] = o2;
        v[base + (r * 4 + 3) * stride] = o3;
    }
}
