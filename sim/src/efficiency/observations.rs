//! Reads the measured SGLang 0.5.14 kernel timings (`data/observations/*-kernels-sglang-0.5.14.csv`,
//! collected by NVIDIA's aiconfigurator on an RTX PRO 6000 Blackwell Server and an H200 SXM) into
//! rows with the flops, bytes and tokens conventions of [`super`].

use super::{EfficiencyError, KernelKind, normalize_dtype};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The three kernel-timing files, relative to the observations folder.
pub const KERNEL_CSVS: [(&str, KernelKind); 3] = [
    ("gemm-kernels-sglang-0.5.14.csv", KernelKind::DenseGemm),
    ("moe-kernels-sglang-0.5.14.csv", KernelKind::MoeGrouped),
    (
        "mla-decode-kernels-sglang-0.5.14.csv",
        KernelKind::MlaDecode,
    ),
];

/// MLA latent width per token (kv_lora_rank 512 + rope 64), values.
const MLA_KV_DIM: f64 = 576.0;
/// MLA value width (kv_lora_rank), values: PV multiplies over it.
const MLA_V_DIM: f64 = 512.0;

/// One measured kernel call.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRow {
    /// The CSV's `system` (family key).
    pub system: String,
    pub kind: KernelKind,
    /// Normalized dtype (`bf16`, `fp8`, `nvfp4`, `int4`); KV dtype for MLA.
    pub dtype: &'static str,
    /// The CSV's own dtype label (`fp8_block`, `int4_wo`, …).
    pub source_dtype: String,
    pub tokens: u64,
    /// Tokens entering the kernel (rows M of a GEMM, the batch of a MoE or MLA call): the
    /// `tokens` key of a MoE row is tokens per expert instead.
    pub entering_tokens: u64,
    pub flops: f64,
    pub bytes: f64,
    /// Measured time per call, seconds.
    pub time_s: f64,
    /// The CSV's `pct_peak_bw` and achieved GB/s (to recover the peak it assumed).
    pub pct_peak_bw: f64,
    pub achieved_gb_per_s: f64,
    /// The CSV's `pct_peak_flops` and achieved TFLOP/s where given (GEMM only).
    pub pct_peak_flops: Option<f64>,
    pub achieved_tflops: Option<f64>,
    /// Short description of the shape, for tables.
    pub shape: String,
    /// MoE only: elements of one expert's slice on this GPU, `hidden × moe_inter / tp` (what
    /// sets the grouped GEMM's N and K, hence its tile occupancy); 0 for other kinds.
    pub slice_elements: f64,
}

/// The default observations folder: `data/observations` beside the repository.
pub fn default_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/observations"))
}

/// A parsed CSV: header index and records.
struct Table {
    path: PathBuf,
    cols: HashMap<String, usize>,
    records: Vec<(usize, Vec<String>)>,
}

impl Table {
    fn read(path: &Path) -> Result<Table, EfficiencyError> {
        let text = std::fs::read_to_string(path).map_err(|source| EfficiencyError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines.next().ok_or_else(|| EfficiencyError::Csv {
            path: path.to_path_buf(),
            line: 1,
            problem: "empty file, expected a header row".into(),
        })?;
        let cols = header
            .split(',')
            .enumerate()
            .map(|(i, c)| (c.trim().to_string(), i))
            .collect();
        let records = lines
            .map(|(i, l)| (i + 1, l.split(',').map(|s| s.trim().to_string()).collect()))
            .collect();
        Ok(Table {
            path: path.to_path_buf(),
            cols,
            records,
        })
    }

    fn err(&self, line: usize, problem: String) -> EfficiencyError {
        EfficiencyError::Csv {
            path: self.path.clone(),
            line,
            problem,
        }
    }

    fn str<'a>(
        &self,
        rec: &'a (usize, Vec<String>),
        col: &str,
    ) -> Result<&'a str, EfficiencyError> {
        let i = *self
            .cols
            .get(col)
            .ok_or_else(|| self.err(1, format!("missing column `{col}`")))?;
        rec.1
            .get(i)
            .map(String::as_str)
            .ok_or_else(|| self.err(rec.0, format!("row has no `{col}` field")))
    }

    fn num(&self, rec: &(usize, Vec<String>), col: &str) -> Result<f64, EfficiencyError> {
        let s = self.str(rec, col)?;
        s.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                self.err(
                    rec.0,
                    format!("`{col}` = `{s}` is not a non-negative number"),
                )
            })
    }
}

/// Reads all three kernel CSVs from `dir`.
pub fn load_kernel_rows(dir: &Path) -> Result<Vec<KernelRow>, EfficiencyError> {
    let mut rows = Vec::new();
    for (file, kind) in KERNEL_CSVS {
        let t = Table::read(&dir.join(file))?;
        for rec in &t.records {
            rows.push(parse_row(&t, rec, kind)?);
        }
    }
    Ok(rows)
}

fn parse_row(
    t: &Table,
    rec: &(usize, Vec<String>),
    kind: KernelKind,
) -> Result<KernelRow, EfficiencyError> {
    let dtype_col = match kind {
        KernelKind::DenseGemm => "gemm_dtype",
        KernelKind::MoeGrouped => "moe_dtype",
        _ => "kv_cache_dtype",
    };
    let source_dtype = t.str(rec, dtype_col)?.to_string();
    let dtype = normalize_dtype(&source_dtype)
        .ok_or_else(|| t.err(rec.0, format!("unknown dtype `{source_dtype}`")))?;
    let time_s = t.num(rec, "time_us")? * 1e-6;
    if time_s <= 0.0 {
        return Err(t.err(rec.0, "`time_us` must be positive".into()));
    }
    let mut slice_elements = 0.0;
    let (tokens, flops, bytes, shape, entering) = match kind {
        KernelKind::DenseGemm => {
            let (m, n, k) = (t.num(rec, "m")?, t.num(rec, "n")?, t.num(rec, "k")?);
            let shape = format!("n{n}k{k}");
            (m, 2.0 * m * n * k, t.num(rec, "weight_bytes")?, shape, m)
        }
        KernelKind::MoeGrouped => {
            let tokens = t.num(rec, "num_tokens")?;
            let (h, inter) = (t.num(rec, "hidden_size")?, t.num(rec, "inter_size")?);
            let topk = t.num(rec, "topk")?;
            let shard = t.num(rec, "moe_tp_size")?.max(1.0) * t.num(rec, "moe_ep_size")?.max(1.0);
            let flops = 2.0 * tokens * topk * 3.0 * h * inter / shard;
            slice_elements = h * inter / t.num(rec, "moe_tp_size")?.max(1.0);
            let shape = format!(
                "{} tp{} ep{} T{tokens}",
                t.str(rec, "model")?,
                t.str(rec, "moe_tp_size")?,
                t.str(rec, "moe_ep_size")?
            );
            // keyed by tokens per active expert on this GPU (balanced routing: T·k/ep pairs over
            // its active experts), rounded to the nearest power of two, the fit's knots
            let ep = t.num(rec, "moe_ep_size")?.max(1.0);
            let active = t.num(rec, "gpu_active_experts")?.max(1.0);
            let per_expert = (tokens * topk / ep / active).max(1.0);
            let key = 2f64.powi(per_expert.log2().round() as i32);
            (
                key,
                flops,
                t.num(rec, "weight_bytes_active")?,
                shape,
                tokens,
            )
        }
        _ => {
            let batch = t.num(rec, "batch_size")?;
            let (ctx, heads) = (t.num(rec, "kv_len")?, t.num(rec, "heads_per_gpu")?);
            let flops = 2.0 * batch * heads * ctx * (MLA_KV_DIM + MLA_V_DIM);
            let shape = format!("ctx{ctx} heads{heads}");
            (batch, flops, t.num(rec, "kv_bytes")?, shape, batch)
        }
    };
    let opt = |col: &str| {
        if t.cols.contains_key(col) {
            t.num(rec, col).map(Some)
        } else {
            Ok(None)
        }
    };
    Ok(KernelRow {
        system: t.str(rec, "system")?.to_string(),
        kind,
        dtype,
        source_dtype,
        tokens: tokens as u64,
        entering_tokens: entering as u64,
        flops,
        bytes,
        time_s,
        pct_peak_bw: t.num(rec, "pct_peak_bw")?,
        achieved_gb_per_s: t.num(rec, "achieved_GBps")?,
        pct_peak_flops: opt("pct_peak_flops")?,
        achieved_tflops: opt("achieved_tflops")?,
        shape,
        slice_elements,
    })
}
