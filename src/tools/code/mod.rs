//! `code`: what the project's language servers know of the code —
//! definitions, references, implementations, types, outlines, callers and
//! callees, and renames — asked of the editor where it can answer, else of
//! our own client of the servers configured for the project.

mod intelligence;

pub use intelligence::{CodeError, Intelligence};
