//! The `models` crate's integration tests, one module a concern, in one test binary
//! (`cargo test -p models --test suite <module>::` runs one module).

mod common;

mod bad_input;
mod footprint;
mod fuzz_inputs;
mod hf_configs;
mod load_replay;
mod presets;
mod profile_check;
mod quant_modules;
