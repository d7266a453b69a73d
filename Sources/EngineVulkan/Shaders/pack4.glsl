// The packed 4-channel layout (ncnn's "pack4"): a value of C channels stored as
// [ceil(C/4)][H][W][4], four channels of one pixel side by side, so one vec4 load reads them;
// the lanes past the last channel are zero (every shader that writes a packed value writes
// them so: a convolution reading one multiplies them by zero weights, and garbage there could
// be NaN). `VulkanPrepared.packed` says which values are stored so. The shaders that include
// this read and write either layout, each operand's as a push constant says.
//
// LOAD4(buf, buf4, isPacked, c4, i, C, plane): channels 4·c4 … 4·c4 + 3 of pixel i (a flat
// index into the picture) of a value stored in `buf` (plain: [C][H][W]) or `buf4` (packed),
// the two views of one binding; channels past C read as zero.
#define LOAD4(buf, buf4, isPacked, c4, i, C, plane) \
    ((isPacked) ? vec4(buf4[(c4) * (plane) + (i)]) \
                : vec4(float(buf[(c4) * 4 * (plane) + (i)]), \
                       (c4) * 4 + 1 < (C) ? float(buf[((c4) * 4 + 1) * (plane) + (i)]) : 0.0, \
                       (c4) * 4 + 2 < (C) ? float(buf[((c4) * 4 + 2) * (plane) + (i)]) : 0.0, \
                       (c4) * 4 + 3 < (C) ? float(buf[((c4) * 4 + 3) * (plane) + (i)]) : 0.0))

// Stores v, channels 4·c4 … 4·c4 + 3 of pixel i, in `y` (plain) or `y4` (packed), the output's
// two views at binding 2; lanes past C stored as zero (packed) or not at all (plain).
void store4(bool isPacked, int c4, int i, int C, int plane, vec4 v) {
    if (isPacked) {
        y4[c4 * plane + i] = DATA4(vec4(v.x, c4 * 4 + 1 < C ? v.y : 0.0, c4 * 4 + 2 < C ? v.z : 0.0, c4 * 4 + 3 < C ? v.w : 0.0));
        return;
    }
    for (int j = 0; j < 4; j++) {
        if (c4 * 4 + j < C) y[(c4 * 4 + j) * plane + i] = DATA(v[j]);
    }
}

// The fused activation of channels 4·c4 … 4·c4 + 3 (act, a, b, slope count at p[base] …
// p[base + 3], as common.glsl's activate; slopes at binding 4).
vec4 activate4(vec4 s, int c4, int C, int base) {
    vec4 r;
    for (int j = 0; j < 4; j++) {
        int c = min(c4 * 4 + j, C - 1);
        float slope = p[base + 3] > 0 ? float(slopes[p[base + 3] == 1 ? 0 : c]) : 0.0;
        r[j] = activate(s[j], p[base], pf(base + 1), pf(base + 2), slope);
    }
    return r;
}
