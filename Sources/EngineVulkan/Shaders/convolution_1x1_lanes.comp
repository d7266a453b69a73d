#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Dense 1×1 convolution, lanes across pixels, 16 output channels per lane (convolution_1x1_lanes.glsl).
#include "convolution_1x1_lanes.glsl"
