//! Per-tenant handlers, hot-swapped (to be written).
