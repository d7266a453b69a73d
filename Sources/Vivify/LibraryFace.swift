public import MediaIO
public import Models
public import SafeFiles

// The lower modules' values a `RunConfiguration` holds, under the library's own names, so that
// a user of the library (and the `vivify` command) builds a configuration importing `Vivify`
// alone. They are the same types: nothing is converted.

/// A frame rate or time base as a fraction (`InputSettings.rawRate`).
public typealias Rational = MediaIO.Rational

/// The encoder of a media output: codec, quality, preset, pixel format (`OutputSettings.encoder`).
public typealias EncoderSettings = MediaIO.EncoderSettings

/// What to do with an output that already exists: refuse, replace (`-y`) or skip (`-n`)
/// (`OutputSettings.existing`).
public typealias ExistingOutput = SafeFiles.ExistingOutput

/// The backend running the models (`RunSettings.backend`).
public typealias BackendChoice = Models.BackendChoice

/// The number format of the models' convolutions (`RunLimits.precision`).
public typealias PrecisionChoice = Models.PrecisionChoice

/// References, keyframes and hints that guide the colorizer (`StageSpec.colorize`'s guide).
public typealias ColourGuideSpec = Models.ColourGuideSpec

/// A colour version of one frame (`ColourGuideSpec.keyframes`).
public typealias Keyframe = Models.Keyframe

/// A colour hint at one pixel (`ColourGuideSpec.hints`).
public typealias ColourHint = Models.ColourHint

/// The colorizer (its saturation range, for the command's checks).
package typealias Colorizer = Models.Colorizer

/// The models built into vivify (their names, for the command's defaults).
package typealias BuiltinModels = Models.BuiltinModels

/// FFmpeg's own log messages, for the commands that decode or encode.
package enum MediaLog {
    /// Shows FFmpeg's messages (`verbose`) or keeps them quiet.
    package static func configure(verbose: Bool) {
        FFmpegLog.configure(verbose: verbose)
    }
}
