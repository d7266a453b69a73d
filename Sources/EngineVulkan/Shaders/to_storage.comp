#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The run's input, written by the host as floats into a staging buffer, stored as the graph's
// values are (float16 in the _fp16 build): the device converts, not the host, whose
// conversion one value at a time took most of an fp16 frame on a GPU. p: count
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
void main() {
    int i = index();
    if (i >= p[0]) return;
    y[i] = DATA(x[i]);
}
