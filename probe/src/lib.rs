//! `probe`: measures a GPU box — P2P paths, host bounce, NCCL collectives, compute ceilings — into
//! a versioned machine profile (`models::profile`). Public errors never name the CUDA bindings.
//!
//! Layout: [`plan`] (what to measure), [`backend`] (real GPUs) and [`fake`] (a fake machine),
//! [`cuda`] and [`nccl`] (the measurements), [`classify`] (pair verdicts), [`run`] (assembling
//! the profile), [`dist`] (several nodes: rendezvous, cross-node NCCL, merge), [`summary`]
//! (terminal tables), [`import`] (nccl-tests and p2pBandwidthLatencyTest logs), [`diff`] (two
//! profiles side by side), [`cli`].

pub mod backend;
pub mod charts;
pub mod classify;
pub mod cli;
pub mod cuda;
pub mod diff;
pub mod dist;
pub mod error;
pub mod estimate;
pub mod fake;
pub mod format;
pub mod hex;
pub mod hypervisor;
pub mod import;
pub mod inventory;
pub mod iommu;
pub mod nccl;
pub mod nic;
pub mod numa;
pub mod out_path;
pub mod p2p_sample;
pub mod par;
pub mod plan;
pub mod run;
pub mod stats;
pub mod summary;
pub mod summary_vm;
pub mod sysfs;
#[cfg(test)]
pub(crate) mod testbox;

pub use error::{ProbeError, Result};
