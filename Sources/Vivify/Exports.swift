@_exported import MediaIO
@_exported import struct Engine.EngineError
@_exported import struct Engine.TilingSpec
@_exported import ModelCatalog
@_exported import enum Engine.GEMMPeak
