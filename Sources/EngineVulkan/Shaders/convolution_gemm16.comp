#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Implicit-GEMM convolution, 16 output channels × 64 pixels a workgroup (convolution_gemm.glsl).
#define OCL 2
#include "convolution_gemm.glsl"
