// Transposed convolution (groups 1, dilation 1, kernel at most twice the stride each way) as
// stride² ordinary convolutions, one per output phase, for CPU devices (lavapipe). The outputs
// with (oy + PT) % SH == ry are Σ x[q − j] · w[ry + SH·j] over j < T with q = (oy + PT − ry) / SH
// (likewise across), so each output does only the taps that land on it: T = 2 taps each way
// (deconvolution_phases.comp) for kernels up to twice the stride, T = 1
// (deconvolution_phases1.comp) for a kernel equal to the stride (realcugan's 2×2 stride-2
// upsamplers), where every output has exactly one tap. Each invocation takes
// 4 output channels × an MY × MX block of one phase's outputs: per input channel it loads the
// (MY + T − 1) × (MX + T − 1) input values under the block once and the phase's T × T weight
// vec4s, for MY·MX·4·T² multiply-adds. On lavapipe every buffer load is a loop over the SIMD
// lanes, uniform weights included, so loads per multiply-add are what counts: deconvolution.comp
// takes two per multiply-add. Weights [OC/4][SH][SW][C][T][T] vec4 (zero past the kernel and
// past the last channel). Parameters as convolution.comp's; invocations flat over the phase
// grid's blocks (x and z as convolution_pixels.comp), y = phase + SH·SW · channel block.
// Included with T defined.
#ifndef MY
#define MY 4
#endif
#define MX 8
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 1) readonly buffer Wt { DATA4 w[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
void main() {
    int C = p[0], H = p[1], W = p[2], OC = p[3], OH = p[4], OW = p[5];
    int SH = p[8], SW = p[9], PT = p[12], PL = p[13];
    int phases = SH * SW, phase = int(gl_WorkGroupID.y) % phases, ocb = int(gl_WorkGroupID.y) / phases;
    int ry = phase / SW, rx = phase % SW;
    // This phase's outputs: rows oy0 + SH·m for m ≥ 0 (columns likewise).
    int oy0 = ((ry - PT) % SH + SH) % SH, ox0 = ((rx - PL) % SW + SW) % SW;
    // Blocks across: from the largest phase's width (ceil(OW / SW)), the same for every phase.
    int bw = ((OW + SW - 1) / SW + MX - 1) / MX;
    int block = int((gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * 64u + gl_LocalInvocationID.x);
    int by = block / bw, bx = block % bw;
    // Input rows and columns under the block: q − T + 1 … q + MY − 1 (the taps j = T − 1 … 0).
    int qy = (oy0 + PT - ry) / SH + by * MY - (T - 1), qx = (ox0 + PL - rx) / SW + bx * MX - (T - 1);
    int rowAt[MY + T - 1];
    bool rowIn[MY + T - 1];
    [[unroll]] for (int r = 0; r < MY + T - 1; r++) {
        int iy = qy + r;
        rowIn[r] = iy >= 0 && iy < H;
        rowAt[r] = clamp(iy, 0, H - 1) * W;
    }
    int colAt[MX + T - 1];
    bool colIn[MX + T - 1];
    [[unroll]] for (int c = 0; c < MX + T - 1; c++) {
        int ix = qx + c;
        colIn[c] = ix >= 0 && ix < W;
        colAt[c] = clamp(ix, 0, W - 1);
    }
    vec4 a[MY * MX];
    [[unroll]] for (int k = 0; k < MY * MX; k++) a[k] = vec4(0.0);
    int wi = (ocb * phases + phase) * C * T * T;
    for (int ic = 0; ic < C; ic++) {
        int plane = ic * H * W;
        float v[MY + T - 1][MX + T - 1];
        [[unroll]] for (int r = 0; r < MY + T - 1; r++) {
            [[unroll]] for (int c = 0; c < MX + T - 1; c++) {
                float value = float(x[plane + rowAt[r] + colAt[c]]);
                v[r][c] = rowIn[r] && colIn[c] ? value : 0.0;
            }
        }
        // Taps (j, i): kernel row ry + SH·j, column rx + SW·i, input q − j, q − i.
#if T == 2
        vec4 w00 = vec4(w[wi + ic * 4]), w01 = vec4(w[wi + ic * 4 + 1]);
        vec4 w10 = vec4(w[wi + ic * 4 + 2]), w11 = vec4(w[wi + ic * 4 + 3]);
        [[unroll]] for (int m = 0; m < MY; m++) {
            [[unroll]] for (int n = 0; n < MX; n++) {
                a[m * MX + n] += v[m + 1][n + 1] * w00 + v[m + 1][n] * w01 + v[m][n + 1] * w10 + v[m][n] * w11;
            }
        }
#else
        vec4 w00 = vec4(w[wi + ic]);
        [[unroll]] for (int m = 0; m < MY; m++) {
            [[unroll]] for (int n = 0; n < MX; n++) a[m * MX + n] += v[m][n] * w00;
        }
#endif
    }
    int plane = OH * OW;
    [[unroll]] for (int j = 0; j < 4; j++) {
        int oc = ocb * 4 + j;
        if (oc >= OC) break;
        float b = p[15] != 0 ? float(bias[oc]) : 0.0;
        float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
        [[unroll]] for (int m = 0; m < MY; m++) {
            int oy = oy0 + SH * (by * MY + m);
            if (oy >= OH) break;
            [[unroll]] for (int n = 0; n < MX; n++) {
                int ox = ox0 + SW * (bx * MX + n);
                if (ox >= OW) break;
                y[oc * plane + oy * OW + ox] = DATA(activate(a[m * MX + n][j] + b, p[16], pf(17), pf(18), slope));
            }
        }
    }
}
