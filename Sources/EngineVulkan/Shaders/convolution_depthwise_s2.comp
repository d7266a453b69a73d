#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// Depthwise 3×3, horizontal stride 2, 8 pixels of a row per invocation (convolution_depthwise.glsl).
#define SX 2
#include "convolution_depthwise.glsl"
