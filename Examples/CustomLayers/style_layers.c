/*
 * The two custom layers of the fast style transfer network in "Creating Art with Style
 * Transfer" (Machine Learning with Core ML, chapter 6), compiled for Vivify:
 *   ResCropBlockLambda   x[:, 2:-2, 2:-2]  (the crop of a residual block's skip; the amount
 *                                            may be given as the layer parameter "crop")
 *   RescaleOutputLambda  (x + 1) * 127.5
 * Both give their geometry (ABI version 2), so the network runs in tiles as well as whole.
 * Build: scripts/build-custom-layer-examples OUTDIR (cc -shared -fPIC -O2).
 */
#include "vivify_custom_layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { RES_CROP, RESCALE };

struct layer {
    enum kind kind;
    int64_t crop;
};

int32_t vivify_custom_layer_abi_version(void) { return VIVIFY_CUSTOM_LAYER_ABI_VERSION; }

int32_t vivify_custom_layer_supports(const char *class_name) {
    return strcmp(class_name, "ResCropBlockLambda") == 0 || strcmp(class_name, "RescaleOutputLambda") == 0;
}

void *vivify_custom_layer_create(const char *class_name, const char *const *names, const double *values, int32_t count,
                                 char *error, size_t error_size) {
    struct layer *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    l->kind = strcmp(class_name, "ResCropBlockLambda") == 0 ? RES_CROP : RESCALE;
    l->crop = 2;
    for (int32_t i = 0; i < count; i++) {
        if (strcmp(names[i], "crop") == 0) l->crop = (int64_t)values[i];
    }
    if (l->crop < 0) {
        snprintf(error, error_size, "crop %lld is negative", (long long)l->crop);
        free(l);
        return NULL;
    }
    return l;
}

int32_t vivify_custom_layer_set_weights(void *layer, int32_t index, const float *values, int64_t count,
                                        char *error, size_t error_size) {
    (void)layer; (void)values; (void)count;
    snprintf(error, error_size, "these layers take no weights (weights[%d] given)", index);
    return 1;
}

int32_t vivify_custom_layer_output_shape(void *layer, const int64_t in[3], int64_t out[3], char *error, size_t error_size) {
    const struct layer *l = layer;
    int64_t k = l->kind == RES_CROP ? l->crop : 0;
    if (in[1] <= 2 * k || in[2] <= 2 * k) {
        snprintf(error, error_size, "a %lldx%lld picture is too small to crop %lld from each side", (long long)in[2], (long long)in[1], (long long)k);
        return 1;
    }
    out[0] = in[0];
    out[1] = in[1] - 2 * k;
    out[2] = in[2] - 2 * k;
    return 0;
}

int32_t vivify_custom_layer_evaluate(void *layer, const float *x, const int64_t s[3], float *y, const int64_t o[3],
                                     char *error, size_t error_size) {
    (void)error; (void)error_size;
    const struct layer *l = layer;
    if (l->kind == RESCALE) {
        for (int64_t i = 0; i < s[0] * s[1] * s[2]; i++) y[i] = (x[i] + 1.0f) * 127.5f;
        return 0;
    }
    for (int64_t c = 0; c < o[0]; c++)
        for (int64_t r = 0; r < o[1]; r++)
            memcpy(y + (c * o[1] + r) * o[2], x + (c * s[1] + r + l->crop) * s[2] + l->crop, (size_t)o[2] * sizeof(float));
    return 0;
}

int32_t vivify_custom_layer_geometry(void *layer, vivify_layer_geometry *g, char *error, size_t error_size) {
    (void)error; (void)error_size;
    const struct layer *l = layer;
    /* The crop removes l->crop from every side and reads only the position it copies; the
     * rescale is pointwise. */
    int32_t k = l->kind == RES_CROP ? (int32_t)l->crop : 0;
    *g = (vivify_layer_geometry){.local = 1, .scale = 1, .top = k, .left = k, .bottom = k, .right = k, .radius = 0};
    return 0;
}

void vivify_custom_layer_destroy(void *layer) { free(layer); }
