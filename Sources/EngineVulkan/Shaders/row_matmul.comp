#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// A fully connected layer along each row: y[row][j] = bias[j] + Σk x[row][k] · w[k][j].
// p: rows K N hasBias
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
void main() {
    int K = p[1], N = p[2];
    int i = index();
    if (i >= p[0] * N) return;
    int row = i / N, j = i % N;
    float sum = p[3] != 0 ? float(bias[j]) : 0.0;
    for (int k = 0; k < K; k++) sum += float(x[row * K + k]) * float(w[k * N + j]);
    y[i] = DATA(sum);
}
