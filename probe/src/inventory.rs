//! What a machine's inventory step finds (the GPUs, their pairs' topology and P2P status, the
//! driver), whichever backend found it: the CUDA/NVML reader and the fake machine both fill it.

use models::profile::{DeviceInfo, PairLink};

/// What the inventory step found.
#[derive(Debug, Default)]
pub struct Inventory {
    /// The GPUs.
    pub devices: Vec<DeviceInfo>,
    /// Ordered pairs with topology and P2P status (no measurements yet).
    pub links: Vec<PairLink>,
    /// NVIDIA driver version (`580.159.04`).
    pub driver_version: Option<String>,
    /// CUDA driver API version (`13.0`).
    pub cuda_version: Option<String>,
    /// Remarks (e.g. NVML missing).
    pub notes: Vec<String>,
}
