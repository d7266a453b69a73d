#ifndef VIVIFY_CDNNL_SHIM_H
#define VIVIFY_CDNNL_SHIM_H
#include <oneapi/dnnl/dnnl.h>
// DNNL_ARG_* are macros built from other macros; the engine uses these helpers.
static inline int vivify_dnnl_arg_src(void) { return DNNL_ARG_SRC; }
static inline int vivify_dnnl_arg_dst(void) { return DNNL_ARG_DST; }
static inline int vivify_dnnl_arg_weights(void) { return DNNL_ARG_WEIGHTS; }
static inline int vivify_dnnl_arg_bias(void) { return DNNL_ARG_BIAS; }
static inline int vivify_dnnl_arg_src1(void) { return DNNL_ARG_SRC_1; }
/// DNNL_MEMORY_ALLOCATE is a pointer-valued macro.
static inline void *vivify_dnnl_memory_allocate(void) { return DNNL_MEMORY_ALLOCATE; }
#endif
