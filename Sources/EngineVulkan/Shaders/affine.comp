#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// x · scale[c] + bias[c]. p: count plane
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer Sc { DATA scale[]; };
layout(std430, binding = 4) readonly buffer Bi { DATA bias[]; };
void main() {
    int i = index();
    if (i >= p[0]) return;
    int c = i / p[1];
    y[i] = DATA(float(x[i]) * float(scale[c]) + float(bias[c]));
}
