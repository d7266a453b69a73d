#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// convolution_1x1_lanes.comp with its fp32 weights in a uniform buffer: the CPU's choice (convolution_1x1_lanes.glsl).
#define UNIFORM
#include "convolution_1x1_lanes.glsl"
