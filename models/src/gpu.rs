//! GPU specifications (datasheet figures), embedded as presets.

use crate::error::{ModelsError, Result};
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

/// One embedded GPU preset: key, JSON text, tokens a `nvidia-smi` name must contain and tokens
/// it must not contain to be this GPU (checked in table order, so the first match wins).
struct GpuPreset {
    key: &'static str,
    json: &'static str,
    must: &'static [&'static str],
    must_not: &'static [&'static str],
}

macro_rules! gpu_preset {
    ($key:literal, $must:expr, $must_not:expr) => {
        GpuPreset {
            key: $key,
            json: include_str!(concat!("../presets/gpus/", $key, ".json")),
            must: $must,
            must_not: $must_not,
        }
    };
}

const GPU_PRESETS: &[GpuPreset] = &[
    gpu_preset!(
        "rtx-pro-6000-server",
        &["rtx", "pro", "6000", "server"],
        &["max"]
    ),
    // the 300 W Max-Q Workstation Edition ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation
    // Edition", community spelling "RTX 6000 Pro Max-Q"): same memory, lower clocks
    gpu_preset!(
        "rtx-pro-6000-maxq",
        &["rtx", "pro", "6000", "max"],
        &["server"]
    ),
    gpu_preset!(
        "rtx-pro-6000-workstation",
        &["rtx", "pro", "6000"],
        &["max", "server"]
    ),
    gpu_preset!("h100-pcie", &["h100", "pcie"], &["nvl"]),
    gpu_preset!("h100-sxm", &["h100"], &["pcie", "nvl"]),
    gpu_preset!("h200", &["h200"], &["nvl"]),
    // the export-compliant Hopper part (96 GB HBM3, full NVLink, ~15% of H100's tensor peak)
    gpu_preset!("h20", &["h20"], &[]),
    gpu_preset!("b200", &["b200"], &[]),
    gpu_preset!("l40s", &["l40s"], &[]),
    // the 3090 Ti is another card (1008 GB/s, higher clocks)
    gpu_preset!("rtx-3090", &["3090"], &["laptop", "ti"]),
    gpu_preset!("rtx-4090", &["4090"], &["laptop", "d"]),
    gpu_preset!("rtx-5090", &["5090"], &["laptop", "d"]),
];

fn parse_preset(p: &GpuPreset) -> Result<GpuSpec> {
    serde_json::from_str(p.json).map_err(|e| ModelsError::Json {
        path: format!("models/presets/gpus/{}.json", p.key).into(),
        message: e.to_string(),
    })
}

/// Lower-case alphanumeric words of a GPU name (`NVIDIA H100 80GB HBM3` → `nvidia h100 80gb hbm3`).
fn tokens(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

impl GpuSpec {
    /// The embedded preset `name` (case-insensitive), e.g. `rtx-pro-6000-server`.
    pub fn preset(name: &str) -> Result<GpuSpec> {
        let key = name.to_ascii_lowercase();
        let p = GPU_PRESETS.iter().find(|p| p.key == key).ok_or_else(|| {
            ModelsError::UnknownPreset {
                kind: "GPU",
                name: name.to_string(),
                known: Self::preset_names().join(", "),
            }
        })?;
        parse_preset(p)
    }

    /// Keys of all embedded GPU presets.
    pub fn preset_names() -> Vec<&'static str> {
        GPU_PRESETS.iter().map(|p| p.key).collect()
    }

    /// The preset for a name as `nvidia-smi` / NVML prints it, matched loosely by words
    /// (`NVIDIA RTX PRO 6000 Blackwell Server Edition` → `rtx-pro-6000-server`,
    /// `NVIDIA H100 80GB HBM3` → `h100-sxm`); a preset key also matches. `None` when unknown.
    pub fn find_by_display_name(name: &str) -> Option<GpuSpec> {
        if let Ok(g) = Self::preset(name.trim()) {
            return Some(g);
        }
        let words = tokens(name);
        let has = |t: &&str| words.iter().any(|w| w == t);
        GPU_PRESETS
            .iter()
            .find(|p| p.must.iter().all(has) && !p.must_not.iter().any(has))
            .and_then(|p| parse_preset(p).ok())
    }
}
