// Dense 1×1 convolution, stride 1, no padding, with the 64 lanes of a workgroup across
// neighbouring pixels and 16 output channels per lane: convolution_pixels.comp without the
// kernel window (no window loops, no bounds check per input value). The weights, the same for
// every lane, in blocks of 16 channels: [OC/16][C][16]. Parameters as convolution.comp's.
// With UNIFORM defined (fp32 only: convolution_1x1_uniform.comp, the CPU's choice) the weights
// come from a uniform buffer at binding 5, which lavapipe loads by an unrolled gather rather
// than a loop over the SIMD lanes; one binding holds at most 64 KiB, so it holds the blocks
// p[20] … p[20] + (workgroups in y) − 1 only. Included by convolution_1x1_lanes.comp and
// convolution_1x1_uniform.comp.
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
#ifdef UNIFORM
layout(std140, binding = 5) uniform U { vec4 w[4096]; };
#else
layout(std430, binding = 1) readonly buffer Wt { DATA4 w[]; };
#endif
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer B { DATA bias[]; };
layout(std430, binding = 4) readonly buffer S { DATA slopes[]; };
void main() {
    int C = p[0], OC = p[3], plane = p[4] * p[5];
    int pixel = int((gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * 64u + gl_LocalInvocationID.x);
#ifdef UNIFORM
    int block = int(gl_WorkGroupID.y), oc0 = (p[20] + block) * 16;
#else
    int block = int(gl_WorkGroupID.y), oc0 = block * 16;
#endif
    bool live = pixel < plane;
    int at = live ? pixel : 0;
    vec4 a0 = vec4(0.0), a1 = vec4(0.0), a2 = vec4(0.0), a3 = vec4(0.0);
    int k = block * C * 4;
    for (int ic = 0; ic < C; ic++, k += 4) {
        float v = float(x[ic * plane + at]);
        a0 += v * vec4(w[k]);
        a1 += v * vec4(w[k + 1]);
        a2 += v * vec4(w[k + 2]);
        a3 += v * vec4(w[k + 3]);
    }
    if (!live) return;
    vec4 acc[4] = vec4[4](a0, a1, a2, a3);
    for (int j = 0; j < 16; j++) {
        int oc = oc0 + j;
        if (oc >= OC) break;
        float s = acc[j / 4][j % 4] + (p[15] != 0 ? float(bias[oc]) : 0.0);
        float slope = p[19] > 0 ? float(slopes[p[19] == 1 ? 0 : oc]) : 0.0;
        y[oc * plane + pixel] = DATA(activate(s, p[16], pf(17), pf(18), slope));
    }
}
