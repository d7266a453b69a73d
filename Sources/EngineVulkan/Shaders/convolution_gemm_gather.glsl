// How the implicit matrix products (convolution_gemm.glsl, convolution_gemm_coop.glsl) gather
// their inputs, X' (im2col) never stored: a lane takes one output pixel and reads its taps one
// after the other, channel by channel, kernel row by row, column by column, stepping the tap on
// without a division; taps outside the picture, past the last channel or of a pixel past the
// last read zero. Needs the X buffer and the convolution parameters (p[0]–p[13]).
struct Gather {
    bool live;
    int iy0, ix0;
    // The next tap: channel c, kernel row ky, column kx.
    int c, ky, kx;
};

Gather gatherStart(int pixel) {
    int OH = p[4], OW = p[5];
    Gather g;
    g.live = pixel < OH * OW;
    int gy = g.live ? pixel / OW : 0, gx = g.live ? pixel % OW : 0;
    g.iy0 = gy * p[8] - p[12];
    g.ix0 = gx * p[9] - p[13];
    g.c = 0;
    g.ky = 0;
    g.kx = 0;
    return g;
}

float gatherNext(inout Gather g) {
    int C = p[0], H = p[1], W = p[2];
    int iy = g.iy0 + g.ky * p[10], ix = g.ix0 + g.kx * p[11];
    float v = (g.live && g.c < C && iy >= 0 && iy < H && ix >= 0 && ix < W) ? float(x[(g.c * H + iy) * W + ix]) : 0.0;
    if (++g.kx == p[7]) {
        g.kx = 0;
        if (++g.ky == p[6]) { g.ky = 0; g.c++; }
    }
    return v;
}
