#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// An activation on every value. p: count plane act a b slopeCount
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
void main() {
    int i = index();
    if (i >= p[0]) return;
    float slope = p[5] > 0 ? float(slopes[p[5] == 1 ? 0 : i / p[1]]) : 0.0;
    y[i] = DATA(activate(float(x[i]), p[2], pf(3), pf(4), slope));
}
