#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// Transposed convolution per output phase, 2 × 2 taps a phase (deconvolution_phases.glsl).
#define T 2
#include "deconvolution_phases.glsl"
