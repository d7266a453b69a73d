#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Dense convolution (groups 1) with the 64 lanes of a workgroup across output channels and
// four neighbouring pixels of one row per workgroup: every input value a workgroup reads is
// the same for all its lanes (one load, broadcast), every weight row is contiguous across the
// lanes (weights transposed to [C][KH][KW][OC]), and the border tests do not diverge.
// Parameters as convolution.comp's, and p[20]: pixel blocks per row.
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(std430, binding = 3) readonly buffer B { float bias[]; };
layout(std430, binding = 4) readonly buffer S { float slopes[]; };
void main() {
    int C = p[0], H = p[1], W = p[2], OC = p[3], OH = p[4], OW = p[5], KH = p[6], KW = p[7];
    int SH = p[8], SW = p[9], DH = p[10], DW = p[11], PT = p[12], PL = p[13];
    int block = int(gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x);
    int oy = block / p[20], ox0 = (block % p[20]) * 4;
    if (oy >= OH) return;
    int oc = int(gl_WorkGroupID.y) * 64 + int(gl_LocalInvocationID.x);
    bool live = oc < OC;
    int o = live ? oc : 0;
    vec4 sum = vec4(p[15] != 0 ? bias[o] : 0.0);
    for (int ic = 0; ic < C; ic++) {
        for (int ky = 0; ky < KH; ky++) {
            int iy = oy * SH - PT + ky * DH;
            if (iy < 0 || iy >= H) continue;
            int row = (ic * H + iy) * W;
            for (int kx = 0; kx < KW; kx++) {
                float wv = w[((ic * KH + ky) * KW + kx) * OC + o];
                int ix = ox0 * SW - PL + kx * DW;
                vec4 v;
                for (int j = 0; j < 4; j++) {
                    int xx = ix + j * SW;
                    v[j] = (xx >= 0 && xx < W) ? x[row + xx] : 0.0;
                }
                sum += wv * v;
            }
        }
    }
    if (!live) return;
    float slope = p[19] > 0 ? slopes[p[19] == 1 ? 0 : oc] : 0.0;
    for (int j = 0; j < 4; j++) {
        if (ox0 + j < OW) y[(oc * OH + oy) * OW + ox0 + j] = activate(sum[j], p[16], pf(17), pf(18), slope);
    }
}
