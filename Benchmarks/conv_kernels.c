// One 3x3 convolution layer (640x360, the issue-16 frame size) in each of oneDNN's algorithms and
// number formats this CPU runs: fp32 Winograd (what vivify's fp32 path uses), fp32 direct, bf16
// direct, int8 direct and int8 Winograd. Prints the best of five runs and the effective rate
// (2*C*OC*9*H*W operations over the time), so the reduced-precision speed-ups that are possible
// at all can be read off against vivify's fp32.
//   cc -O2 Benchmarks/conv_kernels.c -ldnnl -o /tmp/conv_kernels && OMP_NUM_THREADS=2 /tmp/conv_kernels
#include <dnnl.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void check(dnnl_status_t s, const char *what) {
    if (s != dnnl_success) { fprintf(stderr, "%s failed (%d)\n", what, (int)s); }
}

// Times one layer; prints "unavailable" when oneDNN has no kernel for the combination.
static void layer(dnnl_engine_t engine, dnnl_stream_t stream, dnnl_alg_kind_t alg, dnnl_data_type_t type,
                  int ic, int oc, int h, int w) {
    dnnl_data_type_t wtype = type == dnnl_u8 ? dnnl_s8 : type;
    dnnl_memory_desc_t src, wei, bias, dst;
    dnnl_dims_t sd = {1, ic, h, w}, wd = {oc, ic, 3, 3}, bd = {oc}, dd = {1, oc, h, w};
    dnnl_memory_desc_init_by_tag(&src, 4, sd, type, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wei, 4, wd, wtype, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a);
    dnnl_memory_desc_init_by_tag(&dst, 4, dd, type, dnnl_format_tag_any);
    dnnl_dims_t strides = {1, 1}, dilation = {0, 0}, pad = {1, 1};
    dnnl_convolution_desc_t desc;
    check(dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, alg, &src, &wei, &bias, &dst,
                                                     strides, dilation, pad, pad), "describe");
    dnnl_primitive_attr_t attr;
    dnnl_primitive_attr_create(&attr);
    if (type == dnnl_u8) {
        float scales[1024];
        for (int i = 0; i < oc; i++) scales[i] = 1e-3f;
        dnnl_primitive_attr_set_output_scales(attr, oc, 1 << 1, scales);
    }
    dnnl_post_ops_t ops;
    dnnl_post_ops_create(&ops);
    dnnl_post_ops_append_eltwise(ops, 1, dnnl_eltwise_relu, 0, 0);
    dnnl_primitive_attr_set_post_ops(attr, ops);
    const char *names[] = {"fp32", "bf16", "int8"};
    const char *name = type == dnnl_f32 ? names[0] : type == dnnl_bf16 ? names[1] : names[2];
    const char *algName = alg == dnnl_convolution_winograd ? "winograd" : "direct";
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL) != dnnl_success) {
        printf("%-5s %-9s %3d->%3d  unavailable\n", name, algName, ic, oc);
        return;
    }
    const char *impl = "";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    dnnl_primitive_t prim;
    check(dnnl_primitive_create(&prim, pd), "create");
    dnnl_memory_t mem[4];
    dnnl_query_t queries[4] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_weights_md, dnnl_query_dst_md};
    int indices[4] = {0, 0, 1, 0};
    for (int i = 0; i < 4; i++) {
        check(dnnl_memory_create(&mem[i], dnnl_primitive_desc_query_md(pd, queries[i], indices[i]), engine, DNNL_MEMORY_ALLOCATE), "memory");
    }
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_BIAS, mem[2]}, {DNNL_ARG_DST, mem[3]}};
    double best = 1e9;
    for (int run = 0; run < 6; run++) {
        double t = now();
        check(dnnl_primitive_execute(prim, stream, 4, args), "execute");
        dnnl_stream_wait(stream);
        t = now() - t;
        if (run > 0 && t < best) best = t;  // the first run pays for first touch
    }
    printf("%-5s %-9s %3d->%3d  %7.1f ms  %5.0f GOP/s  (%s)\n", name, algName, ic, oc, best * 1e3,
           2.0 * ic * oc * 9 * h * w / best / 1e9, impl);
    for (int i = 0; i < 4; i++) dnnl_memory_destroy(mem[i]);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_post_ops_destroy(ops);
    dnnl_primitive_attr_destroy(attr);
}

int main(void) {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    check(dnnl_engine_create(&engine, dnnl_cpu, 0), "engine");
    check(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags), "stream");
    // waifu2x upconv_7's widest layers and Real-ESRGAN animevideov3's 64-channel body.
    int layers[][2] = {{64, 64}, {64, 128}, {128, 128}, {128, 256}};
    for (int i = 0; i < 4; i++) {
        layer(engine, stream, dnnl_convolution_winograd, dnnl_f32, layers[i][0], layers[i][1], 360, 640);
        layer(engine, stream, dnnl_convolution_direct, dnnl_f32, layers[i][0], layers[i][1], 360, 640);
        layer(engine, stream, dnnl_convolution_direct, dnnl_bf16, layers[i][0], layers[i][1], 360, 640);
        layer(engine, stream, dnnl_convolution_direct, dnnl_u8, layers[i][0], layers[i][1], 360, 640);
        layer(engine, stream, dnnl_convolution_winograd, dnnl_u8, layers[i][0], layers[i][1], 360, 640);
    }
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(engine);
    return 0;
}
