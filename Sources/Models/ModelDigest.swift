import Foundation
package import ModelCatalog

/// The name of a model by its contents: the key of its int8 calibrations (shipped and kept)
/// and of the models a segment manifest records. A helper of the model layer, so that neither
/// the models nor the segments reach into the other for it.
package enum ModelDigest {
    /// SHA-256 over the SHA-256 of each of a model's files (a directory such as an
    /// `.mlpackage` by its tree digest), in path order; missing files are skipped.
    package static func of(files: [String]) throws -> SHA256.Digest {
        var digest = SHA256()
        for f in files.sorted() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: f, isDirectory: &isDirectory) else { continue }
            let url = URL(fileURLWithPath: f)
            let d = isDirectory.boolValue ? try SHA256.treeDigest(directoryAt: url).digest : try SHA256.hash(fileAt: url)
            digest.update(d.bytes)
        }
        return digest.finalize()
    }
}
