#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Pixel shuffle by r (order 0: CRD, 1: DCR). p: r order OC OH OW H W
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
void main() {
    int r = p[0], OC = p[2], OH = p[3], OW = p[4], H = p[5], W = p[6];
    int i = index();
    if (i >= OC * OH * OW) return;
    int ox = i % OW, oy = (i / OW) % OH, c = i / (OW * OH);
    int dy = oy % r, dx = ox % r, iy = oy / r, ix = ox / r;
    int ic = p[1] == 0 ? c * r * r + dy * r + dx : (dy * r + dx) * OC + c;
    y[i] = x[(ic * H + iy) * W + ix];
}
