@_exported import MediaIO
