/*
 * A custom layer library for the tests (built by them with cc): the style network's two
 * layers, right, or wrong in the way the environment variable VIVIFY_TEST_FAULT names:
 *   shape      ResCropBlockLambda answers its input shape (no crop): the next layer does not fit
 *   zero       ResCropBlockLambda answers a height of 0
 *   nan        RescaleOutputLambda writes NaN at channel 1, row 2, column 3
 *   unwritten  RescaleOutputLambda leaves its last value unwritten
 *   fail       RescaleOutputLambda returns an error
 * and its geometry (ABI version 2: the crop 2 from each side, the rescale pointwise):
 *   geometry-shape     ResCropBlockLambda's geometry says a crop of 1 (its shapes say 2)
 *   geometry-reach     RescaleOutputLambda also adds the value 12 columns to its right (the
 *                      row's last past the edge) while its geometry says pointwise
 *   geometry-range     ResCropBlockLambda's geometry says scale 0
 *   geometry-anywhere  both layers say they may look anywhere (local 0)
 * Compiled with -DABI_VERSION=1 it speaks the first version (its geometry function, still
 * exported, is then not Vivify's to call); with -DABI_VERSION=3 one Vivify does not speak.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#ifndef ABI_VERSION
#define ABI_VERSION 2
#endif

static int fault(const char *name) {
    const char *f = getenv("VIVIFY_TEST_FAULT");
    return f && strcmp(f, name) == 0;
}

int32_t vivify_custom_layer_abi_version(void) { return ABI_VERSION; }

int32_t vivify_custom_layer_supports(const char *c) {
    return strcmp(c, "ResCropBlockLambda") == 0 || strcmp(c, "RescaleOutputLambda") == 0;
}

void *vivify_custom_layer_create(const char *c, const char *const *names, const double *values, int32_t count, char *error, size_t size) {
    (void)names; (void)values; (void)count; (void)error; (void)size;
    int *kind = malloc(sizeof *kind);
    *kind = strcmp(c, "ResCropBlockLambda") == 0;
    return kind;
}

int32_t vivify_custom_layer_set_weights(void *l, int32_t i, const float *v, int64_t n, char *error, size_t size) {
    (void)l; (void)v; (void)n;
    snprintf(error, size, "no weights expected, got weights[%d]", i);
    return 1;
}

int32_t vivify_custom_layer_output_shape(void *l, const int64_t in[3], int64_t out[3], char *error, size_t size) {
    (void)error; (void)size;
    int crop = *(int *)l;
    out[0] = in[0];
    out[1] = crop && !fault("shape") ? in[1] - 4 : in[1];
    out[2] = crop && !fault("shape") ? in[2] - 4 : in[2];
    if (crop && fault("zero")) out[1] = 0;
    return 0;
}

int32_t vivify_custom_layer_evaluate(void *l, const float *x, const int64_t s[3], float *y, const int64_t o[3], char *error, size_t size) {
    if (*(int *)l) {
        for (int64_t c = 0; c < o[0]; c++)
            for (int64_t r = 0; r < o[1]; r++)
                for (int64_t k = 0; k < o[2]; k++) y[(c * o[1] + r) * o[2] + k] = x[(c * s[1] + r + 2) * s[2] + k + 2];
        return 0;
    }
    if (fault("fail")) {
        snprintf(error, size, "the test library was told to fail");
        return 7;
    }
    int64_t n = s[0] * s[1] * s[2] - (fault("unwritten") ? 1 : 0);
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] + 1.0f) * 127.5f;
    if (fault("geometry-reach"))
        for (int64_t i = 0; i < n; i++) {
            int64_t k = i % s[2], far = k + 12 < s[2] ? k + 12 : s[2] - 1;
            y[i] += 100.0f * x[i - k + far];
        }
    if (fault("nan")) y[(1 * o[1] + 2) * o[2] + 3] = NAN;
    return 0;
}

/* vivify_layer_geometry: local, scale, top, left, bottom, right, radius. */
int32_t vivify_custom_layer_geometry(void *l, int32_t g[7], char *error, size_t size) {
    (void)error; (void)size;
    int k = *(int *)l ? 2 : 0;
    int32_t answer[7] = {1, 1, k, k, k, k, 0};
    if (*(int *)l && fault("geometry-shape")) answer[2] = answer[3] = answer[4] = answer[5] = 1;
    if (*(int *)l && fault("geometry-range")) answer[1] = 0;
    if (fault("geometry-anywhere")) answer[0] = 0;
    memcpy(g, answer, sizeof answer);
    return 0;
}

void vivify_custom_layer_destroy(void *l) { free(l); }
