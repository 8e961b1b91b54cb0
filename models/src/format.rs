//! Weight and KV-cache storage formats.

use serde::{Deserialize, Serialize};

/// How a tensor's values are stored in the checkpoint and in GPU memory.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WeightFormat {
    /// bfloat16: 2 bytes per value.
    Bf16,
    /// FP8 (e4m3) with one fp32 scale per `block` × `block` tile (block-wise, DeepSeek style),
    /// or per output channel when `block` is 0.
    Fp8 {
        /// Scale block edge (128 for DeepSeek-style), 0 for per-channel scales.
        block: u32,
    },
    /// NVFP4: 4-bit values, one fp8 scale per 16 values, plus a per-tensor fp32 scale.
    Nvfp4,
    /// 4-bit integers with one bf16 scale per `group_size` values (Kimi K2 Thinking's native INT4).
    Int4 {
        /// Values sharing one scale.
        group_size: u32,
    },
    /// MXFP4 (OCP microscaling): 4-bit e2m1 values, one e8m0 (1-byte) scale per 32 values
    /// (gpt-oss's experts, `quant_method: mxfp4`).
    Mxfp4,
    /// MXFP8 (OCP microscaling): e4m3 values, one e8m0 (1-byte) scale per 32 values along the
    /// reduction dimension (vLLM's online `mxfp8`: `MXFP8_BLOCK_SIZE = 32`,
    /// `online/mxfp8.py`).
    Mxfp8,
}

impl WeightFormat {
    /// Average bytes per stored value, scales included (per-tensor scales are negligible and left out).
    pub fn bytes_per_value(&self) -> f64 {
        match *self {
            WeightFormat::Bf16 => 2.0,
            WeightFormat::Fp8 { block: 0 } => 1.0,
            WeightFormat::Fp8 { block } => 1.0 + 4.0 / (block as f64 * block as f64),
            WeightFormat::Nvfp4 => 0.5 + 1.0 / 16.0,
            WeightFormat::Int4 { group_size } => 0.5 + 2.0 / group_size.max(1) as f64,
            WeightFormat::Mxfp4 => 0.5 + 1.0 / 32.0,
            WeightFormat::Mxfp8 => 1.0 + 1.0 / 32.0,
        }
    }

    /// A short human name: `bf16`, `fp8`, `nvfp4`, `int4-g32`, `mxfp4`, `mxfp8`.
    pub fn name(&self) -> String {
        match *self {
            WeightFormat::Bf16 => "bf16".into(),
            WeightFormat::Fp8 { .. } => "fp8".into(),
            WeightFormat::Nvfp4 => "nvfp4".into(),
            WeightFormat::Int4 { group_size } => format!("int4-g{group_size}"),
            WeightFormat::Mxfp4 => "mxfp4".into(),
            WeightFormat::Mxfp8 => "mxfp8".into(),
        }
    }
}

/// Storage of the KV cache (`--kv-cache-dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvDtype {
    /// bf16 / fp16: 2 bytes per value (SGLang's `auto` for bf16 models).
    Bf16,
    /// fp8 e4m3 / e5m2: 1 byte per value.
    Fp8,
}

impl KvDtype {
    /// The dtype a name stands for, in every spelling the engines and their logs use: SGLang's
    /// and vLLM's `--kv-cache-dtype` values (`bf16`, `bfloat16`, `fp8`, `fp8_e4m3`, `fp8_e5m2`),
    /// torch's (`torch.bfloat16`, `torch.float8_e4m3fn`), `fp16` / `float16` / `half` (two bytes,
    /// as bf16), case-insensitively. `None` for `auto` (the checkpoint's choice) and for anything
    /// else, FP4 included (not modelled): callers say why they refuse it.
    pub fn from_name(name: &str) -> Option<KvDtype> {
        let n = name
            .trim()
            .trim_start_matches("torch.")
            .to_ascii_lowercase();
        if n.starts_with("fp8") || n.starts_with("float8") {
            Some(KvDtype::Fp8)
        } else if matches!(
            n.as_str(),
            "bf16" | "bfloat16" | "fp16" | "float16" | "half"
        ) {
            Some(KvDtype::Bf16)
        } else {
            None
        }
    }

    /// Bytes per cached value.
    pub fn bytes(&self) -> u64 {
        match self {
            KvDtype::Bf16 => 2,
            KvDtype::Fp8 => 1,
        }
    }
}

#[cfg(test)]
mod kv_dtype_tests {
    use super::KvDtype;

    #[test]
    fn every_engine_spelling_names_its_dtype() {
        for n in ["fp8", "fp8_e4m3", "FP8_E5M2", "torch.float8_e4m3fn"] {
            assert_eq!(KvDtype::from_name(n), Some(KvDtype::Fp8), "{n}");
        }
        for n in [
            "bf16",
            "bfloat16",
            "torch.bfloat16",
            "fp16",
            "float16",
            "half",
        ] {
            assert_eq!(KvDtype::from_name(n), Some(KvDtype::Bf16), "{n}");
        }
        for n in ["auto", "fp4_e2m1", "int8", ""] {
            assert_eq!(KvDtype::from_name(n), None, "{n}");
        }
    }
}
