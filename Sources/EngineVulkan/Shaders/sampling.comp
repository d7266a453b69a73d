#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Separable resampling from tap tables made on the host (resize in every mode, ONNX Resize in
// every coordinate mapping): each output row and column has up to 4 input taps, 9 floats
// each [count, 4 indices, 4 weights]; a count of 0 (outside a crop-and-resize region) gives
// the extrapolation value. Columns are summed within each row tap, then the rows, as the
// reference does. With detail on, the upscaler tail's pixel-shuffled detail (×r) is added.
// p: C H W OH OW extrapolation detail (0 none, 1 CRD, 2 DCR) perPhase DH DW r
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) readonly buffer D { DATA detail[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer R { float rows[]; };
layout(std430, binding = 4) readonly buffer Co { float cols[]; };
void main() {
    int C = p[0], H = p[1], W = p[2], OH = p[3], OW = p[4];
    int i = index();
    if (i >= C * OH * OW) return;
    int ox = i % OW, oy = (i / OW) % OH, c = i / (OW * OH);
    int rb = oy * 9, cb = ox * 9;
    int rn = int(rows[rb]), cn = int(cols[cb]);
    float v = pf(5);
    if (rn > 0 && cn > 0) {
        v = 0.0;
        for (int a = 0; a < rn; a++) {
            int line = (c * H + int(rows[rb + 1 + a])) * W;
            float m = 0.0;
            for (int b = 0; b < cn; b++) m += cols[cb + 5 + b] * float(x[line + int(cols[cb + 1 + b])]);
            v += rows[rb + 5 + a] * m;
        }
    }
    if (p[6] != 0) {
        int perPhase = p[7], DH = p[8], DW = p[9], r = p[10];
        int dc = perPhase == 1 ? 0 : c, phase = (oy % r) * r + ox % r;
        int ic = p[6] == 1 ? dc * r * r + phase : phase * perPhase + dc;
        v += float(detail[(ic * DH + oy / r) * DW + ox / r]);
    }
    y[i] = DATA(v);
}
