#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Instance normalisation: one workgroup per channel; the mean, then the spread around it
// (two passes, as the reference), each a strided share per lane and a tree over the 64
// partial sums; then every value · k + b. p: C plane epsilon
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
layout(std430, binding = 3) readonly buffer Sc { DATA scale[]; };
layout(std430, binding = 4) readonly buffer Bi { DATA bias[]; };
shared float partial[64];
float total(int lane, float s) {
    partial[lane] = s;
    barrier();
    for (int step = 32; step > 0; step >>= 1) {
        if (lane < step) partial[lane] += partial[lane + step];
        barrier();
    }
    float t = partial[0];
    // Every lane has read the total before the next pass overwrites the partial sums.
    barrier();
    return t;
}
void main() {
    int C = p[0], plane = p[1];
    int c = int(gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x);
    if (c >= C) return;
    int lane = int(gl_LocalInvocationID.x), base = c * plane;
    float s = 0.0;
    for (int k = lane; k < plane; k += 64) s += float(x[base + k]);
    float mean = total(lane, s) / float(plane);
    s = 0.0;
    for (int k = lane; k < plane; k += 64) { float d = float(x[base + k]) - mean; s += d * d; }
    float variance = total(lane, s) / float(plane);
    float kk = float(scale[c]) / sqrt(variance + pf(2));
    float b = float(bias[c]) - mean * kk;
    for (int k = lane; k < plane; k += 64) y[base + k] = DATA(float(x[base + k]) * kk + b);
}
