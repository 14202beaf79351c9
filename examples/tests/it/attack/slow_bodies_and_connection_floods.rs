//! (filled in by its item's work)
