#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Each r×r block of pixels into r² channels (channel (dy·r + dx)·C + c). p: r C H W OH OW
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
void main() {
    int r = p[0], C = p[1], H = p[2], W = p[3], OH = p[4], OW = p[5];
    int i = index();
    if (i >= C * r * r * OH * OW) return;
    int ox = i % OW, oy = (i / OW) % OH, oc = i / (OW * OH);
    int c = oc % C, phase = oc / C, dy = phase / r, dx = phase % r;
    y[i] = x[(c * H + oy * r + dy) * W + ox * r + dx];
}
