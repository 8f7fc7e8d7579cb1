//! The analysis behind `tests/architecture.rs`: reading Rust sources as text (comments and
//! literals blanked, then tokens), the module tree of a crate, the paths its files name,
//! strongly connected components, function lengths and the few `Cargo.toml` facts needed.

/// Reading `Cargo.toml` files and checking the layer table.
pub mod cargo;
/// A crate's file graph and the report of its circles.
pub mod circles;
/// Function lengths.
pub mod fns;
/// Strongly connected components.
pub mod graph;
/// A crate's module tree.
pub mod modtree;
/// The `crate::` and other-crate paths a file names.
pub mod paths;
/// Blanking comments and literals.
pub mod strip;
/// Tokens, line numbers and bracket matching.
pub mod tokens;
/// The repository's crates and Rust files.
pub mod workspace;
