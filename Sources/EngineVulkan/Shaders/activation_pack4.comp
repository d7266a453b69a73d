#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// An activation on every value, four channels of one pixel per invocation, the input and the
// output each in either layout (pack4.glsl; p[6], p[7]: 1 packed, 0 plain).
// p: C plane act a b slopeCount inPacked outPacked
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 0) readonly buffer X4 { DATA4 x4[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { DATA4 y4[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
#include "pack4.glsl"
void main() {
    int C = p[0], plane = p[1];
    int i = index();
    if (i >= (C + 3) / 4 * plane) return;
    int c4 = i / plane, pixel = i % plane;
    store4(p[7] != 0, c4, pixel, C, plane, activate4(LOAD4(x, x4, p[6] != 0, c4, pixel, C, plane), c4, C, 2));
}
