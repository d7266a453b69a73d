// Shared by every Vivify compute shader: the element type of the value and weight buffers,
// the push constants (32 ints; floats travel as their bit patterns) and the fused
// activations, numbered as VulkanActivation in Swift.
//
// DATA is what values, weights, biases and slopes are stored as: float, or float16_t in the
// `_fp16` build of each shader (scripts/build-shaders compiles each twice, the second with
// -DFP16). Shaders load with float(...) and store with DATA(...), so the arithmetic is fp32
// in both: fp16 storage needs only the 16-bit storage feature, not shaderFloat16. Tap tables
// (indices) stay float.
#ifdef FP16
#extension GL_EXT_shader_16bit_storage : require
#define DATA float16_t
#define DATA4 f16vec4
#else
#define DATA float
#define DATA4 vec4
#endif
layout(local_size_x = 64) in;
layout(push_constant) uniform Parameters { int p[32]; };
float pf(int i) { return intBitsToFloat(p[i]); }
// Dispatches are two-dimensional past 65,535 groups: the flat index of this invocation.
int index() { return int(gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u + gl_GlobalInvocationID.x); }

float activate(float x, int kind, float a, float b, float slope) {
    switch (kind) {
    case 0: return x;
    case 1: return max(x, 0.0);
    case 2: return x > 0.0 ? x : x * a;
    case 3: return x > 0.0 ? x : x * slope;
    case 4: return x / (1.0 + exp(-x));
    case 5: return 1.0 / (1.0 + exp(-x));
    case 6: { float e = exp(-2.0 * abs(x)); float t = (1.0 - e) / (1.0 + e); return x < 0.0 ? -t : t; }
    case 7: return min(max(x, a), b);
    case 8: return x > 0.0 ? x : a * (exp(x) - 1.0);
    case 9: return sqrt(x);
    case 10: return pow(x, a);
    }
    return x;
}
