/*
 * vivify_custom_layer.h: the C ABI of a Vivify compiled custom layer library, version 1.
 *
 * A Core ML model may hold custom layers (CustomLayerParams: a className, weights and
 * parameters) that an app implements on Apple's systems as an MLCustomLayer class. On Linux,
 * `vivify ... --custom-layers LIB.so` runs the classes that no declaration (`customLayers`)
 * covers through a shared library exporting these functions. Vivify checks every answer:
 * shapes within its limits and fitting the next layer, the output filled with NaN before
 * evaluate and scanned after it (a value left unwritten, NaN or infinity is an error).
 *
 * Shapes are three int64_t: channels, height, width (batch 1, CHW, float32). Every function
 * but destroy returns 0 on success; on failure it writes a NUL-terminated message of at most
 * error_size bytes into error and returns non-zero. One input per layer in this version. Calls
 * on one layer never overlap; calls on different layers may.
 */
#ifndef VIVIFY_CUSTOM_LAYER_H
#define VIVIFY_CUSTOM_LAYER_H

#include <stddef.h>
#include <stdint.h>

#define VIVIFY_CUSTOM_LAYER_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* VIVIFY_CUSTOM_LAYER_ABI_VERSION. */
int32_t vivify_custom_layer_abi_version(void);

/* 1 when the library implements class_name, else 0. */
int32_t vivify_custom_layer_supports(const char *class_name);

/* A layer of class_name with the model's numeric parameters (CustomLayerParams.parameters:
 * double, int, long and bool values as doubles), sorted by name; NULL on failure. */
void *vivify_custom_layer_create(const char *class_name, const char *const *parameter_names,
                                 const double *parameter_values, int32_t parameter_count,
                                 char *error, size_t error_size);

/* The layer's weight array number index (CustomLayerParams.weights, decoded to float32), once
 * per array, in order, after create. */
int32_t vivify_custom_layer_set_weights(void *layer, int32_t index, const float *values, int64_t count,
                                        char *error, size_t error_size);

/* The output shape for an input shape. */
int32_t vivify_custom_layer_output_shape(void *layer, const int64_t input[3], int64_t output[3],
                                         char *error, size_t error_size);

/* Computes output (output_shape, as output_shape answered) from input (input_shape). */
int32_t vivify_custom_layer_evaluate(void *layer, const float *input, const int64_t input_shape[3],
                                     float *output, const int64_t output_shape[3],
                                     char *error, size_t error_size);

/* Frees a layer made by create. */
void vivify_custom_layer_destroy(void *layer);

#ifdef __cplusplus
}
#endif

#endif
