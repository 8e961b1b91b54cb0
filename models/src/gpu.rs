//! GPU specifications (datasheet figures), embedded as presets.

use serde::{Deserialize, Serialize};

/// A GPU model's datasheet figures. Dense (non-sparse) throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    /// Preset key, e.g. `rtx-pro-6000-server`.
    pub name: String,
    /// Marketing name as `nvidia-smi` prints it, e.g. `NVIDIA RTX PRO 6000 Blackwell Server Edition`.
    pub display_name: String,
    /// Device memory in bytes.
    pub memory_bytes: u64,
    /// Peak memory bandwidth, GB/s (1e9 B/s).
    pub memory_gb_per_s: f64,
    /// Dense bf16 tensor throughput, TFLOP/s.
    pub bf16_tflops: f64,
    /// Dense fp8 tensor throughput, TFLOP/s, if the GPU has fp8 tensor cores.
    pub fp8_tflops: Option<f64>,
    /// Dense fp4 tensor throughput, TFLOP/s, if the GPU has fp4 tensor cores.
    pub fp4_tflops: Option<f64>,
    /// PCIe generation of the host link.
    pub pcie_gen: u32,
    /// PCIe lanes of the host link.
    pub pcie_lanes: u32,
    /// NVLink bandwidth per GPU, GB/s per direction, if any.
    pub nvlink_gb_per_s: Option<f64>,
    /// Where these figures come from (datasheet URL and date).
    pub source: String,
}
