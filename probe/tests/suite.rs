//! The `probe` crate's integration tests, one module a concern, in one test binary
//! (`cargo test -p probe --test suite <module>::` runs one module).

mod common;

mod cli;
mod fuzz_imports;
mod hostile_peers;
mod messages;
mod multinode;
mod vm_box;
