#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// x ∘ v or v ∘ x for a constant v. p: count kind v scalarFirst
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
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
    int i = index();
    if (i >= p[0]) return;
    float u = float(x[i]);
    y[i] = DATA(p[3] != 0 ? apply(p[1], pf(2), u) : apply(p[1], u, pf(2)));
}
