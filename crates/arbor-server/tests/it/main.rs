//! Integration tests for arbor-server: one binary, one module per behaviour, raw JSON at the boundary.
