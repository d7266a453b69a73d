#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// winograd_multiply_coop.glsl with its products lane by lane: what tests run on devices without cooperative matrices.
#include "winograd_multiply_coop.glsl"
