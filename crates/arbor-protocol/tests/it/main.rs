//! Integration tests for arbor-protocol: one binary, one module per behaviour.
