// Dense convolution (groups 1) with each invocation computing CH output channels (a multiple
// of 4) of PX neighbouring output pixels in one row, the 64 lanes of a workgroup across those
// runs of pixels: a weight vec4 serves PX pixels and an input value CH channels, so a kernel
// tap costs CH/4 + PX loads for CH × PX multiply-adds (convolution_pixels.comp: 5 loads for
// 16, whatever the layer's output channels). On the CPU (lavapipe) loads count: each becomes
// a loop over the SIMD lanes while the multiply-adds are whole vectors. The loops over the
// accumulators are unrolled, so they stay in registers (rolled, lavapipe kept them in
// memory and 16 × 4 ran slower than convolution_pixels.comp). Included by
// convolution_rows4.comp (4 × 8, for layers of at most 4 output channels) and
// convolution_rows16.comp (16 × 4), which define CH and PX. Weights as
// [OC/CH][C][KH][KW][CH] (zero past the last channel); parameters as convolution.comp's, and
// p[20] the runs of PX pixels per output row. A 1×1 stride-1 unpadded convolution runs as
// one row of H·W pixels.
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA4 w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
#define Q (CH / 4)
void main() {
    int C = p[0], H = p[1], W = p[2], OC = p[3], OH = p[4], OW = p[5], KH = p[6], KW = p[7];
    int SH = p[8], SW = p[9], DH = p[10], DW = p[11], PT = p[12], PL = p[13], runs = p[20];
    int item = int((gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * 64u + gl_LocalInvocationID.x);
    int block = int(gl_WorkGroupID.y), oc0 = block * CH;
    bool live = item < OH * runs;
    int oy = live ? item / runs : 0, ox0 = live ? (item % runs) * PX : 0;
    vec4 acc[PX * Q];
    [[unroll]] for (int i = 0; i < PX * Q; i++) acc[i] = vec4(0.0);
    int k = block * C * KH * KW * Q;
    for (int ic = 0; ic < C; ic++) {
        for (int ky = 0; ky < KH; ky++) {
            int iy = oy * SH - PT + ky * DH;
            bool rowIn = iy >= 0 && iy < H;
            int row = (ic * H + iy) * W;
            for (int kx = 0; kx < KW; kx++, k += Q) {
                vec4 wq[Q];
                [[unroll]] for (int q = 0; q < Q; q++) wq[q] = vec4(w[k + q]);
                [[unroll]] for (int j = 0; j < PX; j++) {
                    int ix = (ox0 + j) * SW - PL + kx * DW;
                    float v = (rowIn && ix >= 0 && ix < W) ? float(x[row + ix]) : 0.0;
                    [[unroll]] for (int q = 0; q < Q; q++) acc[j * Q + q] += v * wq[q];
                }
            }
        }
    }
    if (!live) return;
    int plane = OH * OW;
    [[unroll]] for (int j = 0; j < PX; j++) {
        int ox = ox0 + j;
        if (ox >= OW) break;
        [[unroll]] for (int c = 0; c < CH; c++) {
            int oc = oc0 + c;
            if (oc >= OC) break;
            float s = acc[j * Q + c / 4][c % 4] + (p[15] != 0 ? float(bias[oc]) : 0.0);
            float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
            y[oc * plane + oy * OW + ox] = DATA(activate(s, p[16], pf(17), pf(18), slope));
        }
    }
}
