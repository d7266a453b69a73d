// Depthwise 3×3 convolution (groups = input channels, any channel multiplier; dilation 1) with
// each invocation computing PX = 8 neighbouring output pixels of one row of one channel, the
// 64 lanes of a workgroup across those runs, one output channel per workgroup row: per kernel
// row it loads the (PX − 1)·SX + 3 input values its 8 pixels need once and the 9 weights once
// per invocation, where convolution.comp loads a value and a weight per multiply-add. On the
// CPU (lavapipe) every load is a loop over the SIMD lanes, so loads are what counts. Included
// by convolution_depthwise_s1.comp and convolution_depthwise_s2.comp, which define the
// horizontal stride SX (the vertical one is p[8]). Weights as the layer's, [OC][3][3];
// parameters as convolution.comp's, and p[20] the runs of PX pixels per output row.
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
#define PX 8
#define SPAN ((PX - 1) * SX + 3)
void main() {
    int H = p[1], W = p[2], OC = p[3], OH = p[4], OW = p[5], SH = p[8], PT = p[12], PL = p[13], G = p[14], runs = p[20];
    int item = int((gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * 64u + gl_LocalInvocationID.x);
    if (item >= OH * runs) return;
    int oc = int(gl_WorkGroupID.y), cin = oc / (OC / G);
    int oy = item / runs, ox0 = (item % runs) * PX, ix0 = ox0 * SX - PL;
    float k[9];
    [[unroll]] for (int i = 0; i < 9; i++) k[i] = float(w[oc * 9 + i]);
    float acc[PX];
    [[unroll]] for (int j = 0; j < PX; j++) acc[j] = 0.0;
    [[unroll]] for (int ky = 0; ky < 3; ky++) {
        int iy = oy * SH - PT + ky;
        if (iy < 0 || iy >= H) continue;
        int row = (cin * H + iy) * W;
        float v[SPAN];
        [[unroll]] for (int j = 0; j < SPAN; j++) {
            int ix = ix0 + j;
            v[j] = (ix >= 0 && ix < W) ? float(x[row + ix]) : 0.0;
        }
        [[unroll]] for (int j = 0; j < PX; j++) {
            [[unroll]] for (int kx = 0; kx < 3; kx++) acc[j] += v[j * SX + kx] * k[ky * 3 + kx];
        }
    }
    float b = p[15] != 0 ? float(bias[oc]) : 0.0;
    float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
    int out0 = (oc * OH + oy) * OW + ox0;
    [[unroll]] for (int j = 0; j < PX; j++) {
        if (ox0 + j >= OW) break;
        y[out0 + j] = DATA(activate(acc[j] + b, p[16], pf(17), pf(18), slope));
    }
}
