#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Fully connected over the flattened input, one invocation per output: bias, the weighted
// sum in input order, the fused activation. Weights [OUT][N]. p: N OUT hasBias act a b slopeCount
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
void main() {
    int N = p[0], o = index();
    if (o >= p[1]) return;
    float sum = p[2] != 0 ? float(bias[o]) : 0.0;
    for (int k = 0; k < N; k++) sum += float(w[o * N + k]) * float(x[k]);
    float slope = p[6] > 0 ? float(slopes[p[6] == 1 ? 0 : o]) : 0.0;
    y[o] = DATA(activate(sum, p[3], pf(4), pf(5), slope));
}
