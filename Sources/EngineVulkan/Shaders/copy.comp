#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// A strided box copied from one buffer into another: y[yo + i·ya + j·yb + k·yc] =
// x[xo + i·xa + j·xb + k·xc] over the box D0×D1×D2 (reshape, transpose, each side of a
// concatenation along rows or columns). p: D0 D1 D2 xo xa xb xc yo ya yb yc
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) buffer Y { DATA y[]; };
void main() {
    int D1 = p[1], D2 = p[2];
    int n = index();
    if (n >= p[0] * D1 * D2) return;
    int k = n % D2, j = (n / D2) % D1, i = n / (D2 * D1);
    y[p[7] + i * p[8] + j * p[9] + k * p[10]] = x[p[3] + i * p[4] + j * p[5] + k * p[6]];
}
