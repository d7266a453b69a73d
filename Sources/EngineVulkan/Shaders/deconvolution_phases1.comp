#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// Transposed convolution per output phase, one tap a phase: kernel = stride (deconvolution_phases.glsl).
#define T 1
#define MY 2
#include "deconvolution_phases.glsl"
