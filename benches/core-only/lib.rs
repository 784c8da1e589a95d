//! Nothing but a home for the core's own benches (`instructions.rs`,
//! `resume.rs`): run them with `cargo bench --bench instructions` or
//! `cargo bench --bench resume` from the repository's root.
