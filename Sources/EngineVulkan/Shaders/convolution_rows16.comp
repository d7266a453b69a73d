#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// 16 output channels × 4 pixels of a row per invocation (convolution_rows.glsl): a weight
// vec4 load serves 4 pixels.
#define CH 16
#define PX 4
#include "convolution_rows.glsl"
