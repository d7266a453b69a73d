#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// winograd_multiply_coop.glsl on cooperative matrices (NVIDIA, fp16 storage).
#define COOP
#include "winograd_multiply_coop.glsl"
