#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The mean of each channel: one workgroup per channel, each lane summing a strided share of
// the plane, then a tree over the 64 partial sums. p: C plane
layout(std430, binding = 0) readonly buffer X { DATA x[]; };
layout(std430, binding = 2) writeonly buffer Y { DATA y[]; };
shared float partial[64];
void main() {
    int C = p[0], plane = p[1];
    int c = int(gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x);
    // The same for every lane of the workgroup, so no lane skips a barrier another waits at.
    if (c >= C) return;
    int lane = int(gl_LocalInvocationID.x);
    float s = 0.0;
    for (int k = lane; k < plane; k += 64) s += float(x[c * plane + k]);
    partial[lane] = s;
    barrier();
    for (int step = 32; step > 0; step >>= 1) {
        if (lane < step) partial[lane] += partial[lane + step];
        barrier();
    }
    if (lane == 0) y[c] = DATA(partial[0] / float(plane));
}
