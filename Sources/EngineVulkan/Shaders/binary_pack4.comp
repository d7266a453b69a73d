#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// a ∘ b of two operands of the output's own shape, four channels of one pixel per
// invocation, each operand and the output in either layout (pack4.glsl); each operand scaled
// by its coefficient. Lanes past the last channel are stored as zero (0 / 0 would be NaN).
// p: kind ca cb C plane aPacked bPacked yPacked
layout(std430, binding = 0) readonly buffer A { DATA a[]; };
layout(std430, binding = 0) readonly buffer A4 { DATA4 a4[]; };
layout(std430, binding = 1) readonly buffer Bv { DATA b[]; };
layout(std430, binding = 1) readonly buffer Bv4 { DATA4 b4[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { DATA4 y4[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
#include "pack4.glsl"
vec4 apply(int k, vec4 u, vec4 v) {
    switch (k) {
    case 0: return u + v;
    case 1: return u - v;
    case 2: return u * v;
    case 3: return u / v;
    case 4: return max(u, v);
    case 5: return min(u, v);
    case 6: return pow(u, v);
    }
    return u;
}
void main() {
    int C = p[3], plane = p[4];
    int i = index();
    if (i >= (C + 3) / 4 * plane) return;
    int c4 = i / plane, pixel = i % plane;
    vec4 u = LOAD4(a, a4, p[5] != 0, c4, pixel, C, plane), v = LOAD4(b, b4, p[6] != 0, c4, pixel, C, plane);
    store4(p[7] != 0, c4, pixel, C, plane, apply(p[0], u * pf(1), v * pf(2)));
}
