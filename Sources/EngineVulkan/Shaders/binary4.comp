#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// a ∘ b of two operands of the output's own shape, four values per invocation (vec4 loads and
// store; no broadcasting, so no index arithmetic: binary.comp's per-value divisions and
// gathered loads took most of its time on lavapipe). Each operand scaled by its coefficient.
// p: kind ca cb count/4
layout(std430, binding = 0) readonly buffer A { DATA4 a[]; };
layout(std430, binding = 1) readonly buffer Bv { DATA4 b[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA4 y[]; };
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
    int i = index();
    if (i >= p[3]) return;
    y[i] = DATA4(apply(p[0], vec4(a[i]) * pf(1), vec4(b[i]) * pf(2)));
}
