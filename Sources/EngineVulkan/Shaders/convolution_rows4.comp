#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// 4 output channels × 8 pixels of a row per invocation (convolution_rows.glsl): for layers of
// few output channels (an upscaler's last, 64 → 3), where 16 per invocation would mostly be waste.
#define CH 4
#define PX 8
#include "convolution_rows.glsl"
