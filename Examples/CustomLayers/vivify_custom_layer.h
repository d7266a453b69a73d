/*
 * vivify_custom_layer.h: the C ABI of a Vivify compiled custom layer library, version 2.
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
 *
 * Version 2 adds one optional function, vivify_custom_layer_geometry: how a layer treats
 * positions, so that Vivify can place values through it and run the model in tiles (with
 * statistics passes where it has instance normalisation), as it does a declared layer. A
 * layer without a geometry (a version-1 library, a library without the function, or a layer
 * it calls not local) may look anywhere: a model holding it runs on whole frames, and the
 * log says so. Version-1 libraries still load.
 */
#ifndef VIVIFY_CUSTOM_LAYER_H
#define VIVIFY_CUSTOM_LAYER_H

#include <stddef.h>
#include <stdint.h>

#define VIVIFY_CUSTOM_LAYER_ABI_VERSION 2

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

/* Version 2: how a layer treats positions, the same along rows and columns. With local 1 the
 * layer treats every position alike (away from its input's edges, it gives the same values
 * wherever a pattern lies), spreads each input position over `scale` outputs per axis (an
 * integer upscaling, centred as a half-pixel resize or a pixel shuffle is), then removes top,
 * left, bottom, right positions of that from each side (negative: adds them, padding), and
 * each output reads no input farther than `radius` input positions from its own centre:
 *
 *   (x + 1) * 127.5          local 1, scale 1, sides 0, radius 0   (pointwise)
 *   x[:, 2:-2, 2:-2]         local 1, scale 1, sides 2, radius 0   (a crop)
 *   3x3 "same" blur          local 1, scale 1, sides 0, radius 1
 *   3x3 "valid" convolution  local 1, scale 1, sides 1, radius 1
 *   pixel shuffle 2x         local 1, scale 2, sides 0, radius 0
 *
 * A crop crops whatever it is given: in a tile, the tile's outer positions (its border,
 * which Vivify never keeps); in the whole frame, the picture's edges, where a tile's window
 * stops too, so tiles and the whole frame agree. With local 0 the rest is ignored: the layer
 * may look anywhere (a statistic of the whole picture) and its model runs on whole frames.
 *
 * Vivify checks the answer: amounts within its limits (scale 1-16, sides -1024-1024, radius
 * 0-1024), every output_shape against the size the geometry gives, and the layer's values:
 * with one input position raised, only the outputs the geometry says can see it may change.
 * A contradiction is an error naming the library and the class. Called once per layer, after
 * create and set_weights. */
typedef struct vivify_layer_geometry {
    int32_t local;   /* 1: the fields below describe the layer; 0: it may look anywhere */
    int32_t scale;   /* outputs per input position along each axis, 1-16 */
    int32_t top, left, bottom, right;  /* positions removed after scaling (negative: added) */
    int32_t radius;  /* how far an output reads from its centre, in input positions */
} vivify_layer_geometry;

int32_t vivify_custom_layer_geometry(void *layer, vivify_layer_geometry *geometry, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif
