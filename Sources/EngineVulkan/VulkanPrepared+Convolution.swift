import Engine

/// Convolutions and transposed convolutions (winograd_*.comp, convolution_1x1.comp,
/// convolution_1x1_lanes.comp, convolution_pixels.comp, convolution4.comp, convolution.comp,
/// deconvolution.comp, deconvolution_phases.comp), bias and activation fused.
extension VulkanPrepared {
    /// The push constants convolution and deconvolution shaders share.
    private func parameters(_ p: ConvolutionParameters, _ s: Shape, _ o: Shape) -> [Int32] {
        let act = VulkanActivation.encode(p.activation)
        return [
            Int32(s.c), Int32(s.h), Int32(s.w), Int32(o.c), Int32(o.h), Int32(o.w), Int32(p.kernelH), Int32(p.kernelW),
            Int32(p.strideH), Int32(p.strideW), Int32(p.dilationH), Int32(p.dilationW), Int32(p.padTop), Int32(p.padLeft),
            Int32(p.groups), p.bias.isEmpty ? 0 : 1, act.code, Self.bits(act.a), Self.bits(act.b), Int32(act.slopes.count),
        ]
    }

    /// Bias and PReLU slopes as buffers (nil where absent).
    private func biasAndSlopes(_ p: ConvolutionParameters) throws -> (VulkanSlice?, VulkanSlice?) {
        let slopes = VulkanActivation.encode(p.activation).slopes
        return (p.bias.isEmpty ? nil : try constant(p.bias), slopes.isEmpty ? nil : try constant(slopes))
    }

    func convolution(_ p: ConvolutionParameters, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        let (bias, slopes) = try biasAndSlopes(p)
        let packedIn = layoutFlag(node.inputs[0]), packedOut = layoutFlag(node.output)
        if usesPacked(node) {
            if takesWinograd(p, o), try winogradConvolution(p, x, s, y, o, bias, slopes, packedIn: packedIn, packedOut: packedOut) { return }
            try packedConvolution(p, x, s, y, o, bias, slopes, packedIn: packedIn, packedOut: packedOut)
        } else if takesWinograd(p, o), try winogradConvolution(p, x, s, y, o, bias, slopes) {
            return
        } else if cooperativeGEMM && storage == .fp16 && p.groups == 1 && p.outChannels > 16 {
            try gemmConvolution(p, x, s, y, o, bias, slopes, cooperative: true)
        } else if pointwiseGEMM, Self.isPointwise(p) {
            // A matrix product: the weights [OC][C] zero-padded to multiples of 16 both ways
            // (whole vec4 loads, no bounds checks on them).
            let cp = (p.inChannels + 15) / 16 * 16, blocks = (p.outChannels + 15) / 16
            var t = [Float](repeating: 0, count: blocks * 16 * cp)
            for oc in 0..<p.outChannels {
                for ic in 0..<p.inChannels { t[oc * cp + ic] = p.weights[oc * p.inChannels + ic] }
            }
            let plane = o.h * o.w
            let tiles = (plane + 15) / 16, gx = min(tiles, Int(context.maxGroupsX))
            try dispatch("convolution_1x1", groups: (gx, blocks, (tiles + gx - 1) / gx), [x, try constant(t), y, bias, slopes],
                         parameters(p, s, o) + [Int32(cp), plane % 4 == 0 ? 1 : 0])
        } else if p.groups == 1 && denseRows && (p.outChannels <= 4 || !Self.isPointwise(p)) {
            try rowsConvolution(p, x, s, y, o, bias, slopes)
        } else if convolutionRows && Self.isDepthwise3x3(p) {
            // 8 pixels of a row of one channel per invocation, one channel per workgroup row
            // (convolution_depthwise.glsl; the weights as they are, [OC][3][3]).
            let runs = (o.w + 7) / 8, groups = (o.h * runs + 63) / 64, gx = min(groups, Int(context.maxGroupsX))
            try dispatch("convolution_depthwise_s\(p.strideW)", groups: (gx, p.outChannels, (groups + gx - 1) / gx),
                         [x, try constant(p.weights), y, bias, slopes], parameters(p, s, o) + [Int32(runs)])
        } else if p.groups == 1 && implicitGEMM && !Self.isPointwise(p) {
            try gemmConvolution(p, x, s, y, o, bias, slopes)
        } else if p.groups == 1 {
            // Lanes across pixels, 16 output channels per invocation (the weights in blocks
            // of 16 channels: [OC/16][C][KH][KW][16], zero past the last channel); 1×1 ones
            // without the window's loops and bounds checks (6–10% faster for the colorizer on
            // lavapipe).
            let blocks = (p.outChannels + 15) / 16
            let t = Self.channelBlocks(p, 16)
            let groups = (o.h * o.w + 63) / 64, gx = min(groups, Int(context.maxGroupsX))
            if convolutionRows, Self.isPointwise(p),
               try uniformChunks("convolution_1x1_uniform", t, chunks: blocks, groups: { (gx, $0, (groups + gx - 1) / gx) },
                                 [x, nil, y, bias, slopes], parameters(p, s, o)) {
                return
            }
            try dispatch(Self.isPointwise(p) ? "convolution_1x1_lanes" : "convolution_pixels", groups: (gx, blocks, (groups + gx - 1) / gx), [x, try constant(t), y, bias, slopes], parameters(p, s, o))
        } else {
            // Four output channels per invocation where the groups allow.
            let four = (p.outChannels / p.groups) % 4 == 0
            try dispatch(four ? "convolution4" : "convolution", count: four ? o.count / 4 : o.count, [x, try constant(p.weights), y, bias, slopes],
                         parameters(p, s, o))
        }
    }

    /// Whether Winograd's method is tried first for `p` with output `o` (it may still decline:
    /// `winogradConvolution`).
    func takesWinograd(_ p: ConvolutionParameters, _ o: Shape) -> Bool {
        Self.isWinograd(p, winograd) && (winograd == .always || !winogradBlocked || o.h * o.w >= Self.blockedWinogradMinimumPlane)
    }

    /// Whether, with `pack4`, `p` reads and writes either layout: a dense convolution, by
    /// Winograd's method where it takes it (its input and output transforms read and write
    /// the packed layout a value at a time), else by convolution_pack4.comp; or a depthwise
    /// one, one output channel per input channel (convolution_depthwise_pack4.comp). Any
    /// kernel, stride, dilation, padding.
    func runsPacked(_ p: ConvolutionParameters) -> Bool {
        pack4 && (p.groups == 1 || (p.groups == p.inChannels && p.groups == p.outChannels))
    }

    /// A convolution by a pack4 shader (`runsPacked`), its input and output each in the layout
    /// the flags say (1 packed, 0 plain): 4 pixels of a row × 4 output channels an invocation,
    /// the quads of output channels in workgroups y. Weights rearranged once: dense
    /// [OC/4][C/4][KH][KW][4 input channels] vec4s of 4 output channels, depthwise [C/4][KH][KW]
    /// vec4s; zero past the last channel.
    private func packedConvolution(_ p: ConvolutionParameters, _ x: VulkanSlice, _ s: Shape, _ y: VulkanSlice, _ o: Shape,
                                   _ bias: VulkanSlice?, _ slopes: VulkanSlice?, packedIn: Int32, packedOut: Int32) throws {
        let k = p.kernelH * p.kernelW, oc4 = (p.outChannels + 3) / 4, c4 = (p.inChannels + 3) / 4
        let depthwise = p.groups > 1
        var t: [Float]
        if depthwise {
            t = [Float](repeating: 0, count: oc4 * k * 4)
            for c in 0..<p.outChannels { for i in 0..<k { t[((c / 4) * k + i) * 4 + c % 4] = p.weights[c * k + i] } }
        } else {
            t = [Float](repeating: 0, count: oc4 * c4 * k * 16)
            for oc in 0..<p.outChannels {
                for ic in 0..<p.inChannels {
                    for i in 0..<k { t[(((oc / 4 * c4 + ic / 4) * k + i) * 4 + ic % 4) * 4 + oc % 4] = p.weights[(oc * p.inChannels + ic) * k + i] }
                }
            }
        }
        let runs = (o.w + 3) / 4, groups = (o.h * runs + 63) / 64, gx = min(groups, Int(context.maxGroupsX))
        try dispatch(depthwise ? "convolution_depthwise_pack4" : "convolution_pack4", groups: (gx, oc4, (groups + gx - 1) / gx),
                     [x, try constant(t), y, bias, slopes], parameters(p, s, o) + [packedIn, packedOut, Int32(runs)])
    }

    /// A layer's fp32 weights, `chunks` equal chunks (blocks of output channels, or Winograd's
    /// positions), through a uniform buffer (binding 5): `shader` dispatched once per run of
    /// chunks that 64 KiB (and the device's uniform range) holds, `groups(n)` workgroups for a
    /// run of n (the shader finds its chunk by the workgroup index the run spans), the run's
    /// first chunk appended to `parameters`. lavapipe loads a uniform buffer by an unrolled
    /// gather where it loops over the SIMD lanes for a storage buffer, whose loads are what
    /// its kernels' time goes to. False, nothing recorded, in fp16 storage or where one chunk
    /// passes what a binding holds. Used for 1×1 layers (convolution_1x1_uniform.comp, blocks
    /// of 16 output channels in workgroups y: the colorizer's 42 took 263–290 ms against
    /// 486–490 ms on lavapipe, LP_NUM_THREADS=1, whole 224×224 runs, two alternating rounds)
    /// and Winograd's blocked products (winograd_multiply_uniform.comp, positions in
    /// workgroups z: realesr-animevideov3-x2 at 160×90 12% faster); the row shaders, whose
    /// weight vec4s serve 4 or 8 pixels each, did not gain from it (realcugan-2x's 450–505
    /// against 445–567 ms a tile).
    private func uniformChunks(_ shader: String, _ weights: [Float], chunks: Int, groups: (Int) -> (x: Int, y: Int, z: Int),
                               _ bound: [VulkanSlice?], _ parameters: [Int32]) throws -> Bool {
        let perChunk = weights.count / chunks * 4
        var nb = min(min(context.maxUniformRange, 65536) / perChunk, chunks)
        // A dispatch but the last starts its successor at an offset the device must allow.
        while nb > 0 && nb < chunks && (nb * perChunk) % context.arenaAlignment != 0 { nb -= 1 }
        guard storage == .fp32, nb > 0, bound.count == VulkanContext.uniformBinding else { return false }
        let whole = try constant(weights)
        var c0 = 0
        while c0 < chunks {
            let n = min(nb, chunks - c0)
            let chunk = VulkanSlice(block: whole.block, offset: whole.offset + c0 * perChunk, count: n * perChunk / 4)
            try dispatch(shader, groups: groups(n), bound + [chunk], parameters + [Int32(c0)])
            c0 += n
        }
        return true
    }

    /// Runs of a row per invocation (convolution_rows.glsl): a layer of at most 4 output
    /// channels (an upscaler's last, 64 → 3) as 8 pixels × 4 channels (convolution_rows4.comp),
    /// where the pixel-lane shader computes 16 channels per pixel, most of them for nothing;
    /// any other dense layer but a 1×1 one as 4 pixels × 16 channels
    /// (convolution_rows16.comp): each weight load serves 4 pixels. On lavapipe (release,
    /// LP_NUM_THREADS=1, realcugan-2x on a 196×128 tile, `--profile`): its last layer 83 ms
    /// against 663 ms, its 2×2 stride-2 and first layers 743–953 ms against 2,027–2,315 ms in
    /// all (two alternating rounds on a loaded machine), with 8 × 4 between (812–1,082 ms);
    /// 4 × 4 and 4 × 16 slower than 4 × 8 on the last layer (152, 121 ms). 1×1 layers keep
    /// convolution_1x1_lanes.comp: the colorizer's small ones (14×14 to 56×56) ran whole
    /// 1,144–1,534 ms in runs of 16 × 4 against 939–1,201 ms. The weights in blocks of CH
    /// channels, [OC/CH][C][KH][KW][CH]; a 1×1 stride-1 unpadded layer runs as one row of all
    /// its pixels.
    private func rowsConvolution(_ p: ConvolutionParameters, _ x: VulkanSlice, _ s: Shape, _ y: VulkanSlice, _ o: Shape,
                                 _ bias: VulkanSlice?, _ slopes: VulkanSlice?) throws {
        let ch = p.outChannels <= 4 ? 4 : 16, px = ch == 4 ? 8 : 4
        let blocks = (p.outChannels + ch - 1) / ch
        let t = Self.channelBlocks(p, ch)
        var parameters = parameters(p, s, o)
        if Self.isPointwise(p) {
            parameters[1] = 1; parameters[2] = Int32(s.h * s.w); parameters[4] = 1; parameters[5] = Int32(o.h * o.w)
        }
        let runs = (Int(parameters[5]) + px - 1) / px, items = Int(parameters[4]) * runs
        let groups = (items + 63) / 64, gx = min(groups, Int(context.maxGroupsX))
        try dispatch(ch == 4 ? "convolution_rows4" : "convolution_rows16", groups: (gx, blocks, (groups + gx - 1) / gx),
                     [x, try constant(t), y, bias, slopes], parameters + [Int32(runs)])
    }

    /// A dense convolution as an implicit matrix product (convolution_gemm.glsl): 64 output
    /// channels × 64 pixels a workgroup, or 16 × 64 where the layer has at most 16 output
    /// channels (convolution_gemm16.comp: a 64-channel tile would compute 4 to 64 times the
    /// channels there are). The weights as `[OC/T][KP][T]` (T the tile's channels, KP the
    /// C·KH·KW taps rounded up to 16), zero past the last channel and tap. `cooperative`: on
    /// cooperative matrices (convolution_gemm_coop.glsl, 64 × 64; its `_emulated` build where
    /// the device has none, as in the tests).
    private func gemmConvolution(_ p: ConvolutionParameters, _ x: VulkanSlice, _ s: Shape, _ y: VulkanSlice, _ o: Shape,
                                 _ bias: VulkanSlice?, _ slopes: VulkanSlice?, cooperative: Bool = false) throws {
        let tileChannels = p.outChannels <= 16 && !cooperative ? 16 : 64
        let taps = p.inChannels * p.kernelH * p.kernelW, kp = (taps + 15) / 16 * 16
        let blocks = (p.outChannels + tileChannels - 1) / tileChannels
        var t = [Float](repeating: 0, count: blocks * kp * tileChannels)
        for oc in 0..<p.outChannels {
            let base = (oc / tileChannels) * kp * tileChannels + oc % tileChannels
            for i in 0..<taps { t[base + i * tileChannels] = p.weights[oc * taps + i] }
        }
        let plane = o.h * o.w
        let tiles = (plane + 63) / 64, gx = min(tiles, Int(context.maxGroupsX))
        let shader = cooperative ? (context.hasCooperativeMatrix ? "convolution_gemm_coop" : "convolution_gemm_coop_emulated")
            : tileChannels == 16 ? "convolution_gemm16" : "convolution_gemm"
        try dispatch(shader, groups: (gx, blocks, (tiles + gx - 1) / gx),
                     [x, try constant(t), y, bias, slopes], parameters(p, s, o) + [Int32(kp), plane % 4 == 0 ? 1 : 0])
    }

    /// A dense layer's weights in blocks of `ch` output channels, [OC/ch][C][KH][KW][ch], zero
    /// past the last channel (the pixel-lane and row shaders' layout).
    static func channelBlocks(_ p: ConvolutionParameters, _ ch: Int) -> [Float] {
        let taps = p.inChannels * p.kernelH * p.kernelW, blocks = (p.outChannels + ch - 1) / ch
        var t = [Float](repeating: 0, count: blocks * taps * ch)
        for oc in 0..<p.outChannels {
            for i in 0..<taps { t[((oc / ch) * taps + i) * ch + oc % ch] = p.weights[oc * taps + i] }
        }
        return t
    }

    /// A depthwise 3×3 convolution (one input channel per group, any channel multiplier),
    /// dilation 1, horizontal stride 1 or 2: convolution_depthwise_s1/_s2.comp, with the row
    /// shaders (`convolutionRows`, the CPU's choice). On lavapipe (release, LP_NUM_THREADS=1,
    /// the colorizer at 224×224, `vivify-gpucheck --profile`, two alternating rounds beside a
    /// training run) its 17 depthwise layers took 59–63 ms against 259–275 ms by
    /// convolution.comp, the whole colorizer 742–808 ms against 1,039–1,054 ms.
    static func isDepthwise3x3(_ p: ConvolutionParameters) -> Bool {
        p.groups > 1 && p.groups == p.inChannels && p.kernelH == 3 && p.kernelW == 3 && p.dilationH == 1 && p.dilationW == 1
            && (p.strideW == 1 || p.strideW == 2)
    }

    /// The fewest output pixels (height × width) for which the blocked Winograd products (the
    /// CPU's) run a layer `.wide` takes; smaller pictures run direct. The blocked multiply
    /// takes 256 quads of tiles per workgroup, and a 14×14 picture has 14: on lavapipe
    /// (LP_NUM_THREADS=1, the colorizer at 224×224, `--profile`) its decoder's 128-channel
    /// layers took 22–24 ms by Winograd against 13 ms by convolution_rows16.comp at 7×7 and
    /// 14×14, where at 28×28 and 56×56 Winograd was the faster (under 15.6 against 27.9 ms,
    /// 15.6 against 44.8 ms).
    static let blockedWinogradMinimumPlane = 400

    /// Whether `choice` runs `p` by Winograd's F(2×2, 3×3): a dense 3×3 convolution with stride
    /// 1 and dilation 1 (any padding); `.wide` only with at least 16 channels in and out (fewer
    /// stay with the pixel-lane shader, where the transforms cost more than the 2.25× fewer
    /// multiplications save).
    static func isWinograd(_ p: ConvolutionParameters, _ choice: VulkanWinograd) -> Bool {
        guard p.groups == 1, p.kernelH == 3, p.kernelW == 3, p.strideH == 1, p.strideW == 1, p.dilationH == 1, p.dilationW == 1 else { return false }
        switch choice {
        case .never: return false
        case .wide: return p.inChannels >= 16 && p.outChannels >= 16
        case .always: return true
        }
    }

    /// Winograd's F(2×2, 3×3) (Lavin & Gray 2016): the weights transformed once here,
    /// U = G g Gᵀ, stored [16][OC/16][C][16]; each run transforms every 4×4 input window under
    /// a 2×2 output tile (Bᵀ d B; four neighbouring tiles per invocation), multiplies the 16
    /// positions' matrices U[k] · V[k] (by winograd_multiply_blocked.comp where
    /// `winogradBlocked`, U then padded to 32 output channels) and transforms the products back
    /// (Aᵀ M A) with bias and activation. (The products on cooperative matrices, 64 channels ×
    /// 64 tiles a workgroup staged through shared memory, ran 3.7× slower than
    /// winograd_multiply.comp on an H200 and were removed; commit aae3a70 has them.) False
    /// (nothing recorded) where a scratch buffer would
    /// pass the most one descriptor binds.
    private func winogradConvolution(_ p: ConvolutionParameters, _ x: VulkanSlice, _ s: Shape, _ y: VulkanSlice, _ o: Shape,
                                     _ bias: VulkanSlice?, _ slopes: VulkanSlice?, packedIn: Int32 = 0, packedOut: Int32 = 0) throws -> Bool {
        // Tiles along rows padded to a multiple of 4: the transforms take them four at a time,
        // never across a row's end.
        let th = (o.h + 1) / 2, tw = ((o.w + 1) / 2 + 3) / 4 * 4, tiles = th * tw
        // The blocked multiply takes 32 output channels at a time: its weights padded to that.
        let blocks = winogradBlocked ? (p.outChannels + 31) / 32 * 2 : (p.outChannels + 15) / 16
        let inputCount = 16 * p.inChannels * tiles, productCount = 16 * p.outChannels * tiles
        guard max(inputCount, productCount) * 4 <= context.arenaBlockLimit else { return false }
        let ic = p.inChannels
        var u = [Float](repeating: 0, count: 16 * blocks * 16 * ic)
        for oc in 0..<p.outChannels {
            for c in 0..<ic {
                let g = Array(p.weights[(oc * ic + c) * 9..<(oc * ic + c) * 9 + 9])
                // G g (4×3), then (G g) Gᵀ (4×4); G = [1 0 0; ½ ½ ½; ½ −½ ½; 0 0 1].
                var gg = [Float](repeating: 0, count: 12)
                for col in 0..<3 {
                    let a = g[col], b = g[3 + col], d = g[6 + col]
                    gg[col] = a
                    gg[3 + col] = (a + b + d) / 2
                    gg[6 + col] = (a - b + d) / 2
                    gg[9 + col] = d
                }
                for row in 0..<4 {
                    let a = gg[row * 3], b = gg[row * 3 + 1], d = gg[row * 3 + 2]
                    let transformed = [a, (a + b + d) / 2, (a - b + d) / 2, d]
                    for col in 0..<4 {
                        u[(((row * 4 + col) * blocks + oc / 16) * ic + c) * 16 + oc % 16] = transformed[col]
                    }
                }
            }
        }
        let v = try scratch(0, count: inputCount), m = try scratch(1, count: productCount)
        let constants = parameters(p, s, o) + [Int32(tiles), Int32(tw), Int32(blocks)]
        try dispatch("winograd_input", count: ic * tiles / 4, [x, v], constants + [packedIn])
        // The blocked multiply's fp32 weights through a uniform buffer where one binding takes
        // the weights of a position at least (`uniformChunks`; 64 KiB at most:
        // winograd_multiply_uniform.comp's block).
        if winogradBlocked,
           try uniformChunks("winograd_multiply_uniform", u, chunks: 16, groups: { ((tiles / 4 + 255) / 256, blocks / 2, $0) },
                             [v, nil, m, nil, nil], constants) {
            // Done.
        } else if winogradBlocked {
            try dispatch("winograd_multiply_blocked", groups: ((tiles / 4 + 255) / 256, blocks / 2, 16), [v, try constant(u), m], constants)
        } else {
            try dispatch("winograd_multiply", groups: ((tiles / 4 + 63) / 64, blocks, 16), [v, try constant(u), m], constants)
        }
        // A packed output's pad channels (to a multiple of 4) are stored as zeros.
        let outChannels = packedOut != 0 ? (p.outChannels + 3) / 4 * 4 : p.outChannels
        try dispatch("winograd_output", count: outChannels * tiles / 4, [m, nil, y, bias, slopes], constants + [packedIn, packedOut])
        return true
    }

    /// A dense 1×1 convolution with stride 1 and no padding: each output pixel is a matrix
    /// product of its input pixel's channels.
    static func isPointwise(_ p: ConvolutionParameters) -> Bool {
        p.groups == 1 && p.kernelH == 1 && p.kernelW == 1 && p.strideH == 1 && p.strideW == 1
            && p.padTop == 0 && p.padLeft == 0 && p.padBottom == 0 && p.padRight == 0
    }

    /// Transposed convolution, any kernel, stride, dilation, cropping and groups: each output
    /// value gathers the input pixels whose scatter reaches it; on the CPU
    /// (`deconvolutionPhases`) those `isPhased` takes run as one small convolution per output
    /// phase instead (`phasedDeconvolution`).
    func deconvolution(_ p: ConvolutionParameters, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        let (bias, slopes) = try biasAndSlopes(p)
        if deconvolutionPhases, Self.isPhased(p) {
            try phasedDeconvolution(p, x, s, y, o, bias, slopes)
            return
        }
        try dispatch("deconvolution", count: o.count, [x, try constant(p.weights), y, bias, slopes], parameters(p, s, o))
    }

    /// Whether deconvolution_phases.comp runs `p`: groups 1, dilation 1, and at most two taps
    /// per output phase each way (kernel ≤ 2 × stride), which covers the usual k = 2s upsamplers
    /// (waifu2x's 4×4 stride 2).
    static func isPhased(_ p: ConvolutionParameters) -> Bool {
        p.groups == 1 && p.dilationH == 1 && p.dilationW == 1 && p.kernelH <= 2 * p.strideH && p.kernelW <= 2 * p.strideW
    }

    /// The transposed convolution as stride² ordinary 2×2 convolutions, one per output phase
    /// (deconvolution_phases.comp): each output does only the taps that land on it, and each
    /// invocation takes 4 output channels × 4 × 8 outputs of one phase, so an input value loaded
    /// serves many multiply-adds (on lavapipe the gather shader's two loads per multiply-add
    /// took about 80% of waifu2x-upconv7's time). The weights [C][OC][KH][KW] rearranged once to
    /// [OC/4][SH][SW][C][T][T][4], zero past the kernel and the last channel: T = 2 taps a phase
    /// each way, or 1 where the kernel is no larger than the stride (deconvolution_phases1.comp,
    /// 4 × 2 × 8 outputs an invocation; realcugan's 2×2 stride-2 layers took 189–283 ms against
    /// 290–482 ms with the three zero taps of T = 2, on lavapipe, one 196×128 tile).
    private func phasedDeconvolution(_ p: ConvolutionParameters, _ x: VulkanSlice, _ s: Shape, _ y: VulkanSlice, _ o: Shape,
                                     _ bias: VulkanSlice?, _ slopes: VulkanSlice?) throws {
        let sh = p.strideH, sw = p.strideW, c = p.inChannels, oc = p.outChannels
        let blocks = (oc + 3) / 4, phases = sh * sw
        // Taps a phase each way: one where the kernel is no larger than the stride.
        let taps = p.kernelH <= sh && p.kernelW <= sw ? 1 : 2
        var t = [Float](repeating: 0, count: blocks * phases * c * taps * taps * 4)
        for ic in 0..<c {
            for o in 0..<oc {
                for ky in 0..<p.kernelH {
                    for kx in 0..<p.kernelW {
                        let phase = (ky % sh) * sw + kx % sw, tap = (ky / sh) * taps + kx / sw
                        t[(((o / 4 * phases + phase) * c + ic) * taps * taps + tap) * 4 + o % 4] = p.weights[((ic * oc + o) * p.kernelH + ky) * p.kernelW + kx]
                    }
                }
            }
        }
        // Blocks of 4 × 8 outputs over the largest phase's grid (ceil(OH / SH) × ceil(OW / SW)).
        let my = taps == 1 ? 2 : 4
        let count = ((o.h + sh - 1) / sh + my - 1) / my * (((o.w + sw - 1) / sw + 7) / 8)
        let groups = (count + 63) / 64, gx = min(groups, Int(context.maxGroupsX))
        try dispatch(taps == 1 ? "deconvolution_phases1" : "deconvolution_phases", groups: (gx, phases * blocks, (groups + gx - 1) / gx), [x, try constant(t), y, bias, slopes],
                     parameters(p, s, o))
    }
}
