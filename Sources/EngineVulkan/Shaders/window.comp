#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// A window of the input copied into channels of the output (crop, channel slice, each side
// of a concatenation). p: C H W (of the window) IC IH IW c0 y0 x0 outChannelOffset
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) buffer Y { DATA y[]; };
void main() {
    int C = p[0], H = p[1], W = p[2], IH = p[4], IW = p[5];
    int i = index();
    if (i >= C * H * W) return;
    int xx = i % W, yy = (i / W) % H, c = i / (W * H);
    y[((c + p[9]) * H + yy) * W + xx] = x[((c + p[6]) * IH + yy + p[7]) * IW + xx + p[8]];
}
