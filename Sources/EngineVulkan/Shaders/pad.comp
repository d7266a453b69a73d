#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Padding of each side. p: C H W OH OW top left mode (0 constant, 1 replicate, 2 reflect) fill
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
// The source index of i along an axis of n, or -1 for the constant.
int source(int i, int n, int mode) {
    if (i >= 0 && i < n) return i;
    if (mode == 0) return -1;
    if (mode == 1) return clamp(i, 0, n - 1);
    return clamp(i < 0 ? -i : 2 * (n - 1) - i, 0, n - 1);
}
void main() {
    int C = p[0], H = p[1], W = p[2], OH = p[3], OW = p[4];
    int i = index();
    if (i >= C * OH * OW) return;
    int ox = i % OW, oy = (i / OW) % OH, c = i / (OW * OH);
    int sy = source(oy - p[5], H, p[7]), sx = source(ox - p[6], W, p[7]);
    y[i] = DATA(sy >= 0 && sx >= 0 ? float(x[(c * H + sy) * W + sx]) : pf(8));
}
