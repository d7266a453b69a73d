#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// a ∘ b, each operand scaled by its coefficient and read through strides: 0 along a side of 1
// broadcasts it, and a crop read in place (`VulkanPrepared.cropViews`) is its source's
// strides from the window's first value.
// p: kind ca cb OC OH OW | a: first, channel, row and column strides | b: the same
layout(std430, binding = 0) readonly buffer A { DATA a[]; };
layout(std430, binding = 1) readonly buffer Bv { DATA b[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
float apply(int k, float u, float v) {
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
    int OC = p[3], OH = p[4], OW = p[5];
    int i = index();
    if (i >= OC * OH * OW) return;
    int xx = i % OW, yy = (i / OW) % OH, c = i / (OW * OH);
    float u = float(a[p[6] + c * p[7] + yy * p[8] + xx * p[9]]) * pf(1);
    float v = float(b[p[10] + c * p[11] + yy * p[12] + xx * p[13]]) * pf(2);
    y[i] = DATA(apply(p[0], u, v));
}
