#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// a ∘ b with broadcasting of sides of 1, each operand scaled by its coefficient.
// p: kind ca cb OC OH OW AC AH AW BC BH BW
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
    int AC = p[6], AH = p[7], AW = p[8], BC = p[9], BH = p[10], BW = p[11];
    float u = float(a[((AC == 1 ? 0 : c) * AH + (AH == 1 ? 0 : yy)) * AW + (AW == 1 ? 0 : xx)]) * pf(1);
    float v = float(b[((BC == 1 ? 0 : c) * BH + (BH == 1 ? 0 : yy)) * BW + (BW == 1 ? 0 : xx)]) * pf(2);
    y[i] = DATA(apply(p[0], u, v));
}
