#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Dense 1×1 convolution, stride 1, no padding, as the matrix product Y[OC][P] = W[OC][C] · X[C][P]
// over the P = H·W pixels, bias and activation fused. A workgroup computes a 16 × 16 tile of Y
// (16 output channels × 16 pixels) through slices of 16 input channels staged in shared
// memory: each of the 64 lanes loads 4 weights (one vec4: the weights are packed [OC'][C'],
// zero-padded to multiples of 16, so every load is whole and in range) and 4 input values (one
// vec4 where P is a multiple of 4, p[21]), then adds 16 products into its 4 outputs: one output
// channel at 4 neighbouring pixels, stored as one vec4 where P allows.
// Parameters as convolution.comp's (p[0] C, p[3] OC, p[4]·p[5] P, p[15]–p[19] bias and
// activation), and p[20] C' (C padded to 16), p[21] whether P is a multiple of 4.
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 0) readonly buffer X4 { DATA4 x4[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA4 w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { DATA4 y4[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
// One column more than 16: lanes of a quad read a row each without sharing a bank.
shared float ws[16][17];
shared vec4 xs[16][4];
void main() {
    int C = p[0], OC = p[3], P = p[4] * p[5], CP = p[20];
    bool quads = p[21] != 0;
    int lane = int(gl_LocalInvocationID.x);
    // This lane's output channel in the tile, and its quad of pixels (also what it loads).
    int row = lane >> 2, quad = lane & 3;
    int tile = int(gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x);
    int oc = int(gl_WorkGroupID.y) * 16 + row;
    int px = tile * 16 + quad * 4;
    vec4 acc = vec4(0.0);
    for (int k0 = 0; k0 < C; k0 += 16) {
        vec4 wv = vec4(w[(oc * CP + k0) / 4 + quad]);
        ws[row][quad * 4] = wv.x;
        ws[row][quad * 4 + 1] = wv.y;
        ws[row][quad * 4 + 2] = wv.z;
        ws[row][quad * 4 + 3] = wv.w;
        // Channels past C are zero (their padded weights are too, but memory there may hold
        // anything, NaN included).
        int c = k0 + row;
        vec4 xv = vec4(0.0);
        if (c < C) {
            if (quads) {
                if (px < P) xv = vec4(x4[(c * P + px) / 4]);
            } else {
                for (int j = 0; j < 4; j++) {
                    if (px + j < P) xv[j] = float(x[c * P + px + j]);
                }
            }
        }
        xs[row][quad] = xv;
        barrier();
        for (int k = 0; k < 16; k++) acc += ws[row][k] * xs[k][quad];
        barrier();
    }
    // Only after the loop: every lane takes part in every barrier.
    if (oc >= OC || px >= P) return;
    float b = p[15] != 0 ? float(bias[oc]) : 0.0;
    float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
    vec4 r;
    for (int j = 0; j < 4; j++) r[j] = activate(acc[j] + b, p[16], pf(17), pf(18), slope);
    if (quads) {
        y4[(oc * P + px) / 4] = DATA4(r);
    } else {
        for (int j = 0; j < 4; j++) {
            if (px + j < P) y[oc * P + px + j] = DATA(r[j]);
        }
    }
}
