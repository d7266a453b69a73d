#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// convolution_gemm_coop.glsl on cooperative matrices (NVIDIA, fp16 storage).
#define COOP
#include "convolution_gemm_coop.glsl"
