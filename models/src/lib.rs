//! Descriptions of what is deployed and on what: model architectures loaded from HuggingFace
//! `config.json` files (or embedded presets), their weight formats, GPU specs, parallel layouts and
//! the per-GPU footprint of a model under a layout, and the versioned machine-profile schema that
//! `probe` writes and `sim` reads.
//!
//! Modules: [`spec`] (the architecture and every derived count: parameters, bytes, KV, FLOPs;
//! each layer's linear modules under their checkpoint names and the storage format of each),
//! [`hf`] (the HF `config.json` loader), [`hf_cache`] (repository ids in the local HF cache), [`quant`] (quantization schemes and exclusion lists, read
//! module by module; [`ModelSpec::bf16_modules`] says what stayed BF16),
//! [`presets`] (embedded model presets; [`ModelSpec::resolve`] takes a preset or a path),
//! [`layout`] (SGLang parallel layouts and their validation), [`footprint`] (per-GPU weights and
//! KV per token under a layout), [`gpu`] (datasheet presets), [`profile`] (machine profiles) and
//! [`profile_check`] (reading them: schema version and plausibility checks), and three small homes every crate shares:
//! [`io`] (size-limited reads of users' files, atomic writes), [`stats`] (median, percentiles)
//! and [`units`] (sizes written for people).
//!
//! This crate measures and simulates nothing: it only describes. Units are bytes and seconds unless
//! a name says otherwise (`_gb_per_s` uses GB = 1e9 bytes, as nccl-tests reports; `_us` is µs).

pub mod alloc_model;
pub mod error;
pub mod footprint;
pub mod format;
pub mod gpu;
pub mod head_padding;
pub mod hf;
mod hf_attention;
pub mod hf_cache;
mod hf_fields;
mod hf_layers;
pub mod io;
pub mod layout;
pub mod load_replay;
mod minire;
mod online_quant;
pub mod presets;
pub mod profile;
pub mod profile_check;
pub mod quant;
pub mod shard;
pub mod spec;
pub mod stats;
pub mod units;
/// The virtualization facts of a profile, part of its schema ([`profile::vm_facts`]).
pub use profile::vm_facts;

pub use error::ModelsError;
pub use footprint::{Footprint, GpuFootprint};
pub use format::KvDtype;
pub use format::WeightFormat;
pub use gpu::GpuSpec;
pub use layout::Layout;
pub use profile::MachineProfile;
pub use spec::{ModelPart, ModelSpec};
