#ifndef VIVIFY_CFFMPEG_SHIM_H
#define VIVIFY_CFFMPEG_SHIM_H

#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
#include <libavutil/error.h>
#include <libswscale/swscale.h>

// Swift cannot import function-like macros; these wrap the ones we need.

static inline int vivify_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int vivify_averror_eof(void) { return AVERROR_EOF; }
static inline int vivify_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int vivify_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int vivify_averror_encoder_not_found(void) { return AVERROR_ENCODER_NOT_FOUND; }
static inline int vivify_averror_enomem(void) { return AVERROR(ENOMEM); }
static inline int vivify_averror_einval(void) { return AVERROR(EINVAL); }
static inline int64_t vivify_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int vivify_ff_qp2lambda(void) { return FF_QP2LAMBDA; }
static inline AVRational vivify_av_time_base_q(void) { return AV_TIME_BASE_Q; }

/// Writes the message for an FFmpeg error code into `buffer` (av_err2str is a macro).
static inline const char *vivify_av_err2str(int code, char *buffer, size_t size) {
    av_strerror(code, buffer, size);
    return buffer;
}

#endif
