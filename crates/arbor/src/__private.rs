//! What the `arbor-macros` expansions name (not public API): paths the generated code
//! uses, so a user needs no direct dependency on the crates behind the facade.
