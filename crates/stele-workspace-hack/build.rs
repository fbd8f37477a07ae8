// Cargo resolves a package's build-dependencies only when it has a build script: this one
// does nothing, and lets the workspace hack unify the proc-macro crates' features too.
fn main() {}
