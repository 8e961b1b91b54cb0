//! Public serving measurements in the records format of `validation-dev/records.json`: a typed
//! reader ([`RecordSet::load`]) and the mapping of each record onto what shardwise can express
//! ([`mapping`]): machine preset, model preset, layout, server options and the quantity to predict.
//!
//! A records file is `{"about": …, "records": [ … ]}`; each record names its source, the hardware,
//! the engine and its flags, the checkpoint, the parallel sizes, the workload and the metrics.
//! Figures stay as the source printed them ([`MeasuredValue`]). Unknown keys are ignored, most
//! keys may be missing or `null`; a record that cannot be expressed is not an error, it gets a
//! reason ([`mapping::Unexpressible`]), and so does one with words where a count belongs
//! ([`Whole`]) or a figure that is no usable number. Only a file that is not such JSON is an error.

pub mod acceptance;
mod machine_map;
pub mod mapping;
mod metrics;
mod model_map;
mod nccl;
pub mod speculation;
mod unexpressible;
pub mod value;

pub use mapping::{
    Expressed, MeasuredFigure, MetricFamily, Quantity, Unexpressible, UnexpressibleKind, express,
};
pub use value::{MeasuredValue, Whole};

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `s` in lower case, empty when absent (the mapping and the metrics both match on it).
fn lower(s: &Option<String>) -> String {
    s.as_deref().unwrap_or("").to_ascii_lowercase()
}

/// Why a records file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    /// Missing, unreadable, too large or not text (the message names the file).
    #[error("records file: {0}")]
    Read(models::ModelsError),
    #[error(
        "records file {path}: {problem}; expected {{\"records\": [{{\"id\": …, \"hardware\": …, \"parallel\": …, \"workload\": …, \"metrics\": …}}]}} as in validation-dev/records.json"
    )]
    Json { path: PathBuf, problem: String },
}

/// A parsed records file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordSet {
    /// Where it was read from.
    pub path: PathBuf,
    /// The file's `about` text.
    pub about: Option<String>,
    pub records: Vec<Record>,
    /// Entries of `records` that are no record (a string, a record whose fields have the wrong
    /// shape) or repeat an earlier id: `(id, why)`, the id `#N` (0-based) where there is none.
    /// Each is skipped with its reason; the others are compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<(String, String)>,
}

/// One cited measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    /// Repository, commit and table the figure was taken from.
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub hardware: Hardware,
    #[serde(default)]
    pub engine: EngineInfo,
    /// Checkpoint as the source names it (`moonshotai/Kimi-K2.6`, `GLM-5 NVFP4`), or a model
    /// preset name.
    #[serde(default)]
    pub model: Option<String>,
    /// Quantization in words (`nvfp4 (modelopt_fp4), bf16 KV cache`).
    #[serde(default)]
    pub quant: Option<String>,
    #[serde(default)]
    pub parallel: Parallel,
    #[serde(default)]
    pub workload: RecordWorkload,
    /// Metric name → figure (`output_tok_s`, `output_tok_s_per_gpu`, `itl_ms_mean`, …).
    #[serde(default)]
    pub metrics: BTreeMap<String, MeasuredValue>,
    #[serde(default)]
    pub notes: Option<String>,
    /// Records of one box, model and workload that differ in one knob.
    #[serde(default)]
    pub comparison_group: Option<String>,
}

/// The machine a record ran on, as far as the source says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hardware {
    /// GPU name (`NVIDIA RTX PRO 6000 Blackwell Server Edition`, `NVIDIA B200`).
    #[serde(default)]
    pub gpu: Option<String>,
    /// GPUs in the server.
    #[serde(default)]
    pub count: Option<Whole>,
    #[serde(default)]
    pub interconnect: Option<String>,
    /// `enabled`, `disabled`, `unknown`, …
    #[serde(default)]
    pub p2p: Option<String>,
    /// `true`, `false` or unknown (`"unknown"` / `null`).
    #[serde(default, deserialize_with = "known_bool")]
    pub virtualized: Option<bool>,
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub notes: Option<String>,
    /// Not in the dev set: a machine preset name or probe profile path to simulate this record
    /// on, for a user's own measurements (overrides the mapping from `gpu` and `count`).
    #[serde(default)]
    pub machine: Option<String>,
}

/// The serving engine of a record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineInfo {
    /// `sglang`, `vllm`, …
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    /// Launch flags and environment as the source lists them, free text.
    #[serde(default)]
    pub flags: Option<String>,
    /// Whether the engine's Triton fused MoE ran a tuned config file or its default, where the
    /// source says (a tuning PR's before / after rows); `None` = not stated (tuned, as the
    /// kernel tables ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_kernel_config: Option<MoeKernelConfig>,
    /// The KV cache size, in tokens, the server reported at start-up, as the source prints it:
    /// vLLM's `GPU KV cache size: N tokens` (counted over the DCP group, as vLLM prints it),
    /// SGLang's `max_total_num_tokens` (per DP worker). Where the launch names no
    /// `--kv-cache-dtype` it says which dtype the run cached in ([`crate::scoreboard`]'s
    /// `kv_pool`); `None` = not stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_tokens: Option<Whole>,
}

/// The launch config a Triton fused MoE ran ([`EngineInfo::moe_kernel_config`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MoeKernelConfig {
    /// The engine's default (no tuned file for the shape and GPU).
    Default,
    /// A tuned file.
    Tuned,
}

/// Parallel sizes; `null` = not stated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Parallel {
    #[serde(default)]
    pub tp: Option<Whole>,
    #[serde(default)]
    pub pp: Option<Whole>,
    #[serde(default)]
    pub ep: Option<Whole>,
    #[serde(default)]
    pub dp: Option<Whole>,
    #[serde(default, deserialize_with = "known_bool")]
    pub attn_dp: Option<bool>,
    /// vLLM's decode context parallelism.
    #[serde(default)]
    pub dcp: Option<Whole>,
    /// Speculative decoding (MTP / EAGLE) on.
    #[serde(default, deserialize_with = "known_bool")]
    pub mtp: Option<bool>,
}

/// What the client ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordWorkload {
    /// Prompt tokens (`bench_serving`), or context already cached (`llm_decode_bench`).
    #[serde(default)]
    pub input_len: Option<Whole>,
    /// Output tokens, or the source's words (`open-ended (30 s window)`).
    #[serde(default)]
    pub output_len: Option<MeasuredValue>,
    /// Concurrent streams / `--max-concurrency`.
    #[serde(default)]
    pub concurrency: Option<Whole>,
    #[serde(default)]
    pub num_prompts: Option<Whole>,
    /// The client (`llm_decode_bench.py synthetic`, `InferenceX random 1k/1k`).
    #[serde(default)]
    pub dataset: Option<String>,
}

/// A boolean that may be unknown: `true`/`false`, `"yes"`/`"no"`, `"true"`/`"false"`; anything
/// else (`"unknown"`, `null`) is `None`.
fn known_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(match v {
        serde_json::Value::Bool(b) => Some(b),
        serde_json::Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" => Some(true),
            "false" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    })
}

#[derive(Deserialize)]
struct RecordsFile {
    #[serde(default)]
    about: Option<String>,
    records: Vec<serde_json::Value>,
}

impl RecordSet {
    /// Reads (at most [`models::io::RECORDS_LIMIT_BYTES`]) and parses a records file.
    pub fn load(path: &Path) -> Result<RecordSet, RecordsError> {
        let text = models::io::read_text_limited(path, models::io::RECORDS_LIMIT_BYTES)
            .map_err(RecordsError::Read)?;
        Self::parse(text.as_bytes(), path)
    }

    /// Parses the bytes of a records file read from `path`: a file that is not such JSON is an
    /// error; an entry that is no record, or repeats an id, is skipped with its reason
    /// ([`RecordSet::unreadable`]).
    pub fn parse(bytes: &[u8], path: &Path) -> Result<RecordSet, RecordsError> {
        let file: RecordsFile = serde_json::from_slice(bytes).map_err(|e| RecordsError::Json {
            path: path.to_path_buf(),
            problem: e.to_string(),
        })?;
        let mut seen = std::collections::HashSet::new();
        let (mut records, mut unreadable) = (Vec::new(), Vec::new());
        for (i, v) in file.records.into_iter().enumerate() {
            let id = v
                .get("id")
                .and_then(serde_json::Value::as_str)
                .map_or_else(|| format!("#{i}"), str::to_string);
            match serde_json::from_value::<Record>(v) {
                Ok(r) if !seen.insert(r.id.clone()) => unreadable.push((
                    id,
                    "its id appears more than once: the first is compared, give every record its own id".to_string(),
                )),
                Ok(r) => records.push(r),
                Err(e) => unreadable.push((
                    id,
                    format!(
                        "entry {i} is no record ({e}); expected {{\"id\": …, \"hardware\": …, \"parallel\": …, \"workload\": …, \"metrics\": …}}"
                    ),
                )),
            }
        }
        Ok(RecordSet {
            path: path.to_path_buf(),
            about: file.about,
            records,
            unreadable,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ONE: &str = r#"{"about": "x", "records": [{
        "id": "a", "hardware": {"gpu": "NVIDIA B200", "count": 8, "p2p": "enabled",
        "virtualized": "unknown"}, "engine": {"name": "sglang", "flags": "--tp 8"},
        "model": "nvidia/DeepSeek-R1-0528-FP4-V2", "quant": "nvfp4",
        "parallel": {"tp": 8, "pp": 1, "ep": 8, "dp": 1, "attn_dp": null},
        "workload": {"input_len": 1024, "output_len": 1024, "concurrency": 4, "num_prompts": null},
        "metrics": {"output_tok_s_per_gpu": "59.7", "ttft_ms_mean": "5,719 ⚠️"},
        "extra_key": 1}]}"#;

    #[test]
    fn reads_a_record_with_unknowns_and_extra_keys() {
        let set = RecordSet::parse(ONE.as_bytes(), Path::new("r.json")).unwrap();
        let r = &set.records[0];
        assert_eq!(r.hardware.virtualized, None);
        assert_eq!(r.parallel.attn_dp, None);
        assert_eq!(r.parallel.ep, Some(Whole::Stated(8)));
        assert_eq!(r.workload.output_len.as_ref().unwrap().value, Some(1024.0));
        assert!(r.metrics["ttft_ms_mean"].flagged);
    }

    #[test]
    fn bad_files_are_one_line_errors() {
        let e = RecordSet::parse(b"[1, 2]", Path::new("r.json")).unwrap_err();
        assert!(matches!(e, RecordsError::Json { .. }));
        assert!(
            e.to_string().contains("r.json") && !e.to_string().contains('\n'),
            "{e}"
        );
        // a repeated id, a string and a wrongly shaped record: each skipped with its reason
        let bad = ONE.replace(
            "}]}",
            "}, {\"id\": \"a\"}, \"oops\", {\"id\": \"b\", \"parallel\": 8}]}",
        );
        let set = RecordSet::parse(bad.as_bytes(), Path::new("r.json")).unwrap();
        assert_eq!(set.records.len(), 1);
        let ids: Vec<&str> = set.unreadable.iter().map(|(i, _)| i.as_str()).collect();
        assert_eq!(ids, ["a", "#2", "b"]);
        assert!(set.unreadable[0].1.contains("appears more than once"));
        assert!(set.unreadable[1].1.contains("entry 2 is no record"));
        let e = RecordSet::load(Path::new("/no/such/records.json")).unwrap_err();
        assert!(matches!(e, RecordsError::Read(_)));
    }

    proptest! {
        #[test]
        fn any_bytes_are_an_error_or_a_set(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = RecordSet::parse(&bytes, Path::new("fuzz.json"));
        }

        #[test]
        fn mutated_records_never_panic(cut in 0usize..ONE.len(), byte in any::<u8>()) {
            let mut b = ONE.as_bytes().to_vec();
            b[cut] = byte;
            if let Ok(set) = RecordSet::parse(&b, Path::new("fuzz.json")) {
                for r in &set.records {
                    let _ = express(r);
                }
            }
        }
    }
}
