#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// Winograd F(2×2, 3×3), step 3 of 3: each invocation takes one output channel's 16 products
// of a quad of neighbouring tiles (as winograd_input.comp numbers them; one vec4 load per
// product) to their 2×2 outputs Aᵀ M A (Aᵀ = [1 1 1 0; 0 1 −1 −1]), adds the bias, applies
// the activation and stores the 2×8 outputs inside the picture: as vec4s where the row width
// is a multiple of 4 (then a vec4 is all inside or all outside), else one by one. Where p[24]
// is 1 the output is in the packed 4-channel layout (pack4.glsl): stored a value at a time at
// its packed index, and the invocations of the pad channels past the last (to a multiple of
// 4) store zeros there. Parameters as winograd_multiply.comp's, then p[23] (the input's
// layout, winograd_input.comp's) and p[24].
layout(std430, binding = 0) readonly buffer M { vec4 m[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { DATA4 y4[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
void main() {
    int OC = p[3], OH = p[4], OW = p[5], TQ = p[20] / 4, TW = p[21];
    bool packedOut = p[24] != 0;
    int i = index();
    if (i >= (packedOut ? (OC + 3) / 4 * 4 : OC) * TQ) return;
    int oc = i / TQ, q = i % TQ;
    bool pad = oc >= OC;
    // Component j of each: tile j of the quad.
    vec4 s[16];
    [[unroll]] for (int k = 0; k < 16; k++) s[k] = pad ? vec4(0.0) : m[(k * OC + oc) * TQ + q];
    vec4 g0[4], g1[4];
    [[unroll]] for (int c = 0; c < 4; c++) {
        g0[c] = s[c] + s[4 + c] + s[8 + c];
        g1[c] = s[4 + c] - s[8 + c] - s[12 + c];
    }
    vec4 o[4] = vec4[4](g0[0] + g0[1] + g0[2], g0[1] - g0[2] - g0[3], g1[0] + g1[1] + g1[2], g1[1] - g1[2] - g1[3]);
    float b = p[15] != 0 && !pad ? float(bias[oc]) : 0.0;
    float slope = p[19] > 0 && !pad ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
    int oy0 = ((q * 4) / TW) * 2, ox0 = ((q * 4) % TW) * 2, plane = OH * OW;
    [[unroll]] for (int r = 0; r < 2; r++) {
        int oy = oy0 + r;
        if (oy >= OH) break;
        // The row's 8 outputs: tile j's two at 2j and 2j + 1.
        float row[8];
        [[unroll]] for (int j = 0; j < 4; j++) {
            row[j * 2] = pad ? 0.0 : activate(o[r * 2][j] + b, p[16], pf(17), pf(18), slope);
            row[j * 2 + 1] = pad ? 0.0 : activate(o[r * 2 + 1][j] + b, p[16], pf(17), pf(18), slope);
        }
        if (packedOut) {
            int at = (((oc >> 2) * OH + oy) * OW + ox0) * 4 + (oc & 3);
            [[unroll]] for (int c = 0; c < 8; c++) {
                if (ox0 + c >= OW) break;
                y[at + c * 4] = DATA(row[c]);
            }
            continue;
        }
        int at = oc * plane + oy * OW + ox0;
        if (OW % 4 == 0) {
            if (ox0 < OW) y4[at / 4] = DATA4(vec4(row[0], row[1], row[2], row[3]));
            if (ox0 + 4 < OW) y4[at / 4 + 1] = DATA4(vec4(row[4], row[5], row[6], row[7]));
        } else {
            [[unroll]] for (int c = 0; c < 8; c++) {
                if (ox0 + c >= OW) break;
                y[at + c] = DATA(row[c]);
            }
        }
    }
}
