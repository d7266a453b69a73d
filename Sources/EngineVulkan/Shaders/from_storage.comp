#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The run's output, stored as the graph's values are (float16 in the _fp16 build), written as
// floats into the staging buffer the host reads (to_storage.comp's counterpart). p: count
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
void main() {
    int i = index();
    if (i >= p[0]) return;
    y[i] = float(x[i]);
}
