#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Max or average pooling, one invocation per output value. Taps past the bottom or right
// padding (ceil mode's last window) count for nothing; padded taps never win a maximum and
// count in an average only when asked. p: C H W OH OW KH KW SH SW DH DW PT PL PB PR
// kind (0 max, 1 average of the taps inside, 2 average counting padding)
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
void main() {
    int C = p[0], H = p[1], W = p[2], OH = p[3], OW = p[4], KH = p[5], KW = p[6], SH = p[7], SW = p[8];
    int DH = p[9], DW = p[10], PT = p[11], PL = p[12], PB = p[13], PR = p[14], kind = p[15];
    int i = index();
    if (i >= C * OH * OW) return;
    int ox = i % OW, oy = (i / OW) % OH, c = i / (OW * OH);
    float best = uintBitsToFloat(0xff800000u), sum = 0.0;
    int inside = 0, padded = 0;
    for (int ky = 0; ky < KH; ky++) {
        int iy = oy * SH - PT + ky * DH;
        if (iy >= H + PB) continue;
        for (int kx = 0; kx < KW; kx++) {
            int ix = ox * SW - PL + kx * DW;
            if (ix >= W + PR) continue;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) { padded++; continue; }
            float v = float(x[(c * H + iy) * W + ix]);
            best = max(best, v);
            sum += v;
            inside++;
        }
    }
    y[i] = DATA(kind == 0 ? best : sum / float(max(kind == 2 ? inside + padded : inside, 1)));
}
