#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Softmax along lines of n values `step` apart (channels at a pixel, a row, or a column of a
// channel), one invocation per line, as the reference: the maximum, the exponentials and
// their sum, then the division. Line l starts at (l / q) · r + (l % q) · t.
// p: lines n step q r t
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) buffer Y { DATA y[]; };
void main() {
    int lines = p[0], n = p[1], step = p[2];
    int l = index();
    if (l >= lines) return;
    int start = (l / p[3]) * p[4] + (l % p[3]) * p[5];
    float m = uintBitsToFloat(0xff800000u);
    for (int k = 0; k < n; k++) m = max(m, float(x[start + k * step]));
    float sum = 0.0;
    for (int k = 0; k < n; k++) sum += exp(float(x[start + k * step]) - m);
    // The exponentials again rather than read back from y, which may hold them in fp16.
    for (int k = 0; k < n; k++) y[start + k * step] = DATA(exp(float(x[start + k * step]) - m) / sum);
}
