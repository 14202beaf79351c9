//! Placeholder; the fan-out benchmark follows.
fn main() {}
