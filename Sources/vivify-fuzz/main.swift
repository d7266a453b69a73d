// vivify-fuzz: drives the parsers of untrusted input (FuzzTargets) with libFuzzer.
//
//   scripts/fuzz builds it with `-sanitize=fuzzer,address -D VIVIFY_FUZZ` and runs
//   `vivify-fuzz TARGET CORPUS_DIR [libFuzzer options]`.
//   A plain build (no libFuzzer) replays inputs: `vivify-fuzz TARGET FILE_OR_DIR…`.
import FuzzTargets
import Foundation

// The target comes first; it is also left in the environment, because libFuzzer's -fork and
// -merge modes start this program again with libFuzzer's options only.
var arguments = CommandLine.arguments
#if VIVIFY_FUZZ
// `vivify-fuzz guard-band-check`: scripts/fuzz's proof that the guard band after swscale's
// buffers traps (it must crash here, naming the plane; returning is the failure).
if arguments.count == 2, arguments[1] == "guard-band-check" {
    FuzzTarget.overrunAGuardBand()
    FileHandle.standardError.write(Data("vivify-fuzz: a write past a plane buffer went unseen: the guard band is not checked\n".utf8))
    exit(1)
}
#endif
if arguments.count < 2 || FuzzTarget(rawValue: arguments[1]) == nil,
   let inherited = ProcessInfo.processInfo.environment["VIVIFY_FUZZ_TARGET"] {
    arguments.insert(inherited, at: 1)
}
guard arguments.count >= 2, let target = FuzzTarget(rawValue: arguments[1]) else {
    let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
    FileHandle.standardError.write(Data("usage: vivify-fuzz TARGET [CORPUS_DIR|FILE…] [libFuzzer options]\ntargets: \(names)\n".utf8))
    exit(64)
}

/// The target the C callback feeds (set once, before the fuzzer starts).
nonisolated(unsafe) var selected = target
setenv("VIVIFY_FUZZ_TARGET", target.rawValue, 1)
atexit { FuzzTarget.cleanUp() }

#if VIVIFY_FUZZ
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

// libFuzzer sees the program name and everything after the target name.
var cArguments: [UnsafeMutablePointer<CChar>?] = ([arguments[0]] + arguments.dropFirst(2)).map { strdup($0) } + [nil]
var argc = CInt(cArguments.count - 1)
let status = cArguments.withUnsafeMutableBufferPointer { buffer -> CInt in
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
    return LLVMFuzzerRunDriver(&argc, &argv) { bytes, count in
        let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
        selected.run(data)
        return 0
    }
}
exit(status)
#else
var files: [String] = []
for path in arguments.dropFirst(2) {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        FileHandle.standardError.write(Data("vivify-fuzz: no such file or folder '\(path)'\n".utf8))
        exit(66)
    }
    if isDirectory.boolValue {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        files += names.sorted().filter { !$0.hasPrefix(".") }.map { path + "/" + $0 }
    } else {
        files.append(path)
    }
}
for file in files {
    guard let data = FileManager.default.contents(atPath: file) else { continue }
    selected.run(data)
}
print("vivify-fuzz: \(target.rawValue): \(files.count) inputs replayed, no crash")
#endif
