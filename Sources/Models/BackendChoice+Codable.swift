// By its name ("onednn"), like the other choices of a run (`RunSettings.backend`).
extension BackendChoice: Codable {}
