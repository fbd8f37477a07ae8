//! Per-collection compression of stored documents (zstd with trained dictionaries).
