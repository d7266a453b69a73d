// Dense convolution (groups 1) of any kernel, stride, dilation and padding as an implicit
// matrix product, Y[OC][P] = W[OC][K] · X'[K][P] over the P = OH·OW output pixels and the
// K = C·KH·KW taps, where X' (im2col) is never stored: each slice of 16 taps × 64 pixels is
// gathered from X into shared memory as it is needed (convolution_gemm_gather.glsl), beside the same 16 taps of the tile's
// TILE_OC output channels' weights. A workgroup (64 lanes, 8 × 8) computes TILE_OC output
// channels × 64 pixels, each lane OCL channels × 8 neighbouring pixels (fp32 sums in
// registers): each shared weight read serves 8 multiply-adds, each shared vec4 of inputs
// 4·OCL, and each value loaded from memory serves the whole tile. What makes a matrix product
// fast on GPUs (as ncnn does for the kernels Winograd does not take).
//
// The including shader defines OCL, the output channels per lane: 8 (TILE_OC 64,
// convolution_gemm.comp) or 2 (TILE_OC 16, convolution_gemm16.comp, for layers of few output
// channels).
//
// Weights: [OC/TILE_OC][KP][TILE_OC] (KP: K rounded up to 16), zero past the last channel
// and tap, so every weight load is whole and in range. A lane gathers the 16 taps of one
// pixel (lane = pixel in the tile; consecutive lanes, consecutive pixels: coalesced at
// stride 1); taps past K read zero (the memory there may hold anything, NaN included).
// Parameters as convolution.comp's (p[0]–p[13] shapes, kernel, strides, dilations, pads,
// p[15]–p[19] bias and activation), and p[20] KP, p[21] whether P is a multiple of 4.
#define TILE_OC (OCL * 8)
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA4 w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { DATA4 y4[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
#include "convolution_gemm_gather.glsl"
// One column more than a row needs: lanes reading a column do not share a bank.
shared float ws[16][TILE_OC + 1];
shared vec4 xs[16][17];
void main() {
    int OC = p[3], P = p[4] * p[5], KP = p[20];
    bool quads = p[21] != 0;
    int lane = int(gl_LocalInvocationID.x);
    int tile = int(gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x);
    int block = int(gl_WorkGroupID.y);
    // What this lane gathers: the taps of the tile's pixel `lane`.
    Gather g = gatherStart(tile * 64 + lane);
    // What this lane computes: channels ty·OCL …, pixels tx·8 … of the tile.
    int tx = lane & 7, ty = lane >> 3;
    vec4 acc[OCL * 2];
    for (int i = 0; i < OCL * 2; i++) acc[i] = vec4(0.0);
    int wbase = block * KP * (TILE_OC / 4);
    for (int k0 = 0; k0 < KP; k0 += 16) {
        // The slice's weights: 16 × TILE_OC values, TILE_OC / 16 vec4s per lane.
        for (int i = 0; i < TILE_OC / 16; i++) {
            int v = lane + 64 * i, row = v / (TILE_OC / 4), col = (v % (TILE_OC / 4)) * 4;
            vec4 wv = vec4(w[wbase + k0 * (TILE_OC / 4) + v]);
            ws[row][col] = wv.x;
            ws[row][col + 1] = wv.y;
            ws[row][col + 2] = wv.z;
            ws[row][col + 3] = wv.w;
        }
        // The slice's inputs: this lane's pixel at 16 taps.
        for (int k = 0; k < 16; k++) xs[k][lane >> 2][lane & 3] = gatherNext(g);
        barrier();
        for (int k = 0; k < 16; k++) {
            vec4 lo = xs[k][tx * 2], hi = xs[k][tx * 2 + 1];
            for (int j = 0; j < OCL; j++) {
                float a = ws[k][ty * OCL + j];
                acc[j * 2] += a * lo;
                acc[j * 2 + 1] += a * hi;
            }
        }
        barrier();
    }
    // Only after the loop: every lane takes part in every barrier.
    int px = tile * 64 + tx * 8;
    if (px >= P) return;
    for (int j = 0; j < OCL; j++) {
        int oc = block * TILE_OC + ty * OCL + j;
        if (oc >= OC) return;
        float b = p[15] != 0 ? float(bias[oc]) : 0.0;
        float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
        for (int h = 0; h < 2; h++) {
            int q = px + h * 4;
            vec4 r;
            for (int e = 0; e < 4; e++) r[e] = activate(acc[j * 2 + h][e] + b, p[16], pf(17), pf(18), slope);
            if (quads && q < P) {
                y4[(oc * P + q) / 4] = DATA4(r);
            } else {
                for (int e = 0; e < 4; e++) {
                    if (q + e < P) y[oc * P + q + e] = DATA(r[e]);
                }
            }
        }
    }
}
