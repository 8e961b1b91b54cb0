//! What a Triton fused MoE loses on its engine's default launch config.
//!
//! SGLang and vLLM launch their Triton fused-MoE GEMMs with a config file tuned for the
//! (experts, intermediate slice, GPU, dtype) where one ships, and otherwise with a fixed default
//! (SGLang `get_default_config`, bf16: at most as many tokens as experts, 16 × 32 × 64 blocks,
//! group 1, Triton's default 4 warps and 3 stages; `fused_moe_triton_config.py`). The server
//! then logs "Using default MoE kernel config" ([`crate::engine::log`] reads it), and a record
//! can say so (`engine.moe_kernel_config`).
//!
//! The kernel tables and curves price the tuned kernel. This module prices the default one as a
//! ratio of kernel times at the layer's token count, measured, not fitted: shardwise's own
//! fused-MoE Triton kernel (the engines' scheme: pairs sorted by expert and padded to the M
//! block, one program per M × N block streaming its expert's weights) timed under the default
//! config and under the best of a 48–96-config sweep (what the engines' tuning scripts search),
//! two gate-up + down GEMM pairs over six layers of weights so that each layer's experts come
//! from DRAM (`scripts/measure-fused-moe-configs.py`, one H200, Triton 3.6, bf16, uniform random
//! top-k; `data/observations/fused-moe-default-config-h200.csv`). The bf16 ratio is 1.3–1.6 at
//! one token, 1.0–1.2 at 4–8, and 1.02–1.40 above, by shape.
//!
//! Block-quantized fp8 experts likewise (`DTYPE=fp8`: 128 × 128 weight blocks, SGLang's fp8
//! block default 64 × 128 × 128, group 32, 4 warps, 3 stages): 1.5 at one token, 1.15–1.4 above.
//!
//! Priced only where that measurement speaks: an SGLang server (vLLM's default is another,
//! batch-aware config: [`VLLM_DEFAULT_NOT_MEASURED`]), bf16 / fp16 and fp8 experts, the Triton
//! runner (not CUTLASS, FlashInfer, Marlin or b12x), on a Hopper GPU (the measurement's H200, or
//! an H100 / H20 / H800 of the same architecture, said in the note); elsewhere the note says it
//! is not priced and why. The nearest measured shape stands in for one not measured, and the
//! note names it.

use crate::efficiency::normalize_dtype;

/// The measured rows (see the module docs).
const TABLE: &str = include_str!("../../../data/observations/fused-moe-default-config-h200.csv");

/// Published ratios of a Triton fused-MoE kernel's time on its engine's default config to its
/// time on a tuned one, low and high, at decode sizes (tokens no more than experts) and above,
/// for what this table does not measure: vllm-project/vllm #40542 (A100, E=64 N=1408 bf16: 1.00
/// at 1–4 tokens, 1.03–1.10 at 64–1024), #44152 (H20, Mixtral bf16: 1.31 at 1 token, 1.60 at
/// 32, 1.03 at 512), #35457 (H200, E=128 N=96 bf16: 1.02–1.24 at 1–64), #45142 (H20-3e,
/// Qwen3-Next FP8 block: 1.00 at 64, 1.45–1.51 at 96–512), sgl-project/sglang #34150 (H200,
/// E=256 N=512 bf16: 1.008 at 256, 1.38 at 512). They spread by shape, dtype, GPU and Triton
/// version, and PRs commit a tuned file only where it wins: a range, not a price.
pub const PUBLISHED_RATIO_RANGE: [f64; 2] = [1.0, 1.6];

/// Why a vLLM server's default config is not priced: the table measures SGLang's default, and
/// vLLM's has been batch-aware since vllm-project/vllm #34846 (February 2026: block M 16 → 128
/// with the batch, block K 64/128, warps and stages set, derived from its 298 tuned files), which
/// public A/Bs put near a tuned file (#52192, GB10, E=512 N=2688: tuned +3.5% geomean over it at
/// decode sizes, a wash end to end).
pub const VLLM_DEFAULT_NOT_MEASURED: &str = "measured for SGLang's default config; vLLM's has been batch-aware since vllm #34846 and near a tuned file (#52192: +3.5% at decode sizes, a wash end to end)";

/// Where the table was measured.
pub const MEASURED_ON: &str = "one H200, Triton 3.6 (data/observations/fused-moe-default-config-h200.csv, scripts/measure-fused-moe-configs.py)";

/// One measured shape: default-over-best kernel time ratio by tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredShape {
    /// `bf16` or `fp8` (128 × 128 weight blocks, 1 × 128 activation groups).
    pub dtype: String,
    pub name: String,
    pub experts: f64,
    pub hidden: f64,
    pub inter_per_gpu: f64,
    /// `(tokens, default time / best time)`, tokens ascending.
    pub ratios: Vec<(f64, f64)>,
}

/// The measured shapes of [`TABLE`], in file order (parsed once).
pub fn measured_shapes() -> &'static [MeasuredShape] {
    static SHAPES: std::sync::OnceLock<Vec<MeasuredShape>> = std::sync::OnceLock::new();
    SHAPES
        .get_or_init(|| parse(TABLE).expect("the carried default-config table parses (unit test)"))
}

fn parse(text: &str) -> Result<Vec<MeasuredShape>, String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty table")?.split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or(format!("no column {name}"))
    };
    let (dtype, shape, experts, hidden, inter, tokens, default_us, best_us) = (
        col("dtype")?,
        col("shape")?,
        col("experts")?,
        col("hidden")?,
        col("inter_per_gpu")?,
        col("tokens")?,
        col("default_us")?,
        col("best_us")?,
    );
    let mut out: Vec<MeasuredShape> = Vec::new();
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(',').collect();
        let num = |c: usize| -> Result<f64, String> {
            f.get(c)
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or(format!(
                    "row {}: column {} is not a positive number",
                    i + 2,
                    c + 1
                ))
        };
        let name = f.get(shape).ok_or(format!("row {}: no shape", i + 2))?;
        let kind = f
            .get(dtype)
            .filter(|d| matches!(**d, "bf16" | "fp8"))
            .ok_or(format!("row {}: dtype is neither bf16 nor fp8", i + 2))?;
        let point = (num(tokens)?, num(default_us)? / num(best_us)?);
        match out.iter_mut().find(|s| s.name == *name && s.dtype == *kind) {
            Some(s) => s.ratios.push(point),
            None => out.push(MeasuredShape {
                dtype: kind.to_string(),
                name: name.to_string(),
                experts: num(experts)?,
                hidden: num(hidden)?,
                inter_per_gpu: num(inter)?,
                ratios: vec![point],
            }),
        }
    }
    for s in &mut out {
        s.ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Ok(out)
}

impl MeasuredShape {
    /// How far `(experts, hidden, inter_per_gpu)` is from this shape: the sum of the three
    /// ratios' |ln| (0 = this shape).
    fn distance(&self, experts: f64, hidden: f64, inter_per_gpu: f64) -> f64 {
        (experts / self.experts).ln().abs()
            + (hidden / self.hidden).ln().abs()
            + (inter_per_gpu / self.inter_per_gpu).ln().abs()
    }

    /// The default-over-best ratio at `tokens`: linear in ln(tokens) between measured counts,
    /// the end rows' beyond them.
    pub fn ratio(&self, tokens: f64) -> f64 {
        let t = tokens.max(1.0);
        let (first, last) = (self.ratios[0], self.ratios[self.ratios.len() - 1]);
        if t <= first.0 {
            return first.1;
        }
        if t >= last.0 {
            return last.1;
        }
        let i = self
            .ratios
            .iter()
            .position(|p| p.0 >= t)
            .unwrap_or(1)
            .max(1);
        let (a, b) = (self.ratios[i - 1], self.ratios[i]);
        let w = (t.ln() - a.0.ln()) / (b.0.ln() - a.0.ln());
        a.1 + w * (b.1 - a.1)
    }
}

/// The default config's slowdown for one layout's routed experts.
#[derive(Debug, Clone, PartialEq)]
pub struct DefaultConfig {
    /// The measured shape priced from.
    pub shape: MeasuredShape,
    /// The layout's own shape was measured (else the nearest stands in).
    pub exact: bool,
    /// The GPU is not the measurement's H200 (same architecture).
    pub other_gpu: Option<String>,
}

impl DefaultConfig {
    /// The slowdown for experts of `format` with `experts` experts per rank, `hidden` and
    /// `inter_per_gpu`, run by `runner` (`--moe-runner-backend`, `None` = auto) on a GPU of SM
    /// major `sm` named `gpu`; `Err` with why it is not priced.
    pub fn of(
        (engine, format, runner): (crate::engine::Engine, &str, Option<&str>),
        (sm, gpu): (Option<u32>, &str),
        (experts, hidden, inter_per_gpu): (f64, f64, f64),
    ) -> Result<DefaultConfig, &'static str> {
        if engine == crate::engine::Engine::Vllm {
            return Err(VLLM_DEFAULT_NOT_MEASURED);
        }
        let dtype = match normalize_dtype(format) {
            Some(d @ ("bf16" | "fp8")) => d,
            _ => return Err("measured for bf16 and fp8 experts only"),
        };
        if !matches!(runner, None | Some("auto") | Some("triton")) {
            return Err("the MoE runner asked for is not the Triton fused MoE");
        }
        if sm != Some(9) {
            return Err("measured on Hopper (H200) only");
        }
        let best = measured_shapes()
            .iter()
            .filter(|s| s.dtype == dtype)
            .min_by(|a, b| {
                a.distance(experts, hidden, inter_per_gpu)
                    .total_cmp(&b.distance(experts, hidden, inter_per_gpu))
            })
            .ok_or("no measured shape")?;
        let exact = best.distance(experts, hidden, inter_per_gpu) < 1e-9;
        let h200 = gpu.to_ascii_lowercase().contains("h200");
        Ok(DefaultConfig {
            shape: best.clone(),
            exact,
            other_gpu: (!h200).then(|| gpu.to_string()),
        })
    }

    /// Kernel time on the default config over the tuned one at `tokens` tokens in the layer.
    pub fn ratio(&self, tokens: f64) -> f64 {
        self.shape.ratio(tokens)
    }

    /// What the prediction says of it.
    pub fn note(&self) -> String {
        let s = &self.shape;
        let at = |t: f64| format!("{:.2}× at {t:.0}", self.ratio(t));
        let shape = if self.exact {
            format!("this shape ({})", s.name)
        } else {
            format!(
                "the nearest measured shape, {} ({} experts, hidden {}, {} intermediate a GPU)",
                s.name, s.experts, s.hidden, s.inter_per_gpu
            )
        };
        let gpu = self
            .other_gpu
            .as_deref()
            .map(|g| format!("; {g} is priced from the H200's figures (same architecture)"))
            .unwrap_or_default();
        // per-tensor fp8's default runs the same 64 × 128 × 128 tiles as the block one measured
        let blocks = if s.dtype == "fp8" {
            ", with 128 × 128 block scales"
        } else {
            ""
        };
        let last = s.ratios.last().map_or(0.0, |p| p.0);
        format!(
            "MoE on the engine's default Triton config (no tuned file): the routed experts' kernel \
             priced slower than tuned by {}, {}, {} tokens (larger batches, prefill chunks among \
             them, at the {last:.0}-token row's, beyond which nothing was measured), measured in \
             {}{blocks} at {shape} on {MEASURED_ON}{gpu}",
            at(1.0),
            at(8.0),
            at(64.0),
            s.dtype
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;

    #[test]
    fn the_carried_table_parses_and_every_ratio_is_a_slowdown_or_none() {
        let shapes = measured_shapes();
        assert!(shapes.len() >= 5, "{shapes:?}");
        for s in shapes {
            assert!(s.ratios.len() >= 8, "{}", s.name);
            for (t, r) in &s.ratios {
                // the best of a sweep that holds the default is never slower than it, up to
                // the timing's noise (repeats agree within 1%)
                assert!(*r > 0.98 && *r < 2.0, "{} at {t}: {r}", s.name);
            }
            // one token is where a 32-column tile leaves the most bandwidth unused
            assert!(s.ratio(1.0) > 1.25, "{}", s.name);
        }
    }

    #[test]
    fn ratios_interpolate_between_measured_counts_and_hold_beyond_them() {
        let s = MeasuredShape {
            dtype: "bf16".into(),
            name: "t".into(),
            experts: 8.0,
            hidden: 64.0,
            inter_per_gpu: 16.0,
            ratios: vec![(1.0, 1.4), (4.0, 1.0), (16.0, 1.2)],
        };
        assert_eq!(s.ratio(0.5), 1.4);
        assert!((s.ratio(2.0) - 1.2).abs() < 1e-12);
        assert_eq!(s.ratio(4.0), 1.0);
        assert!((s.ratio(8.0) - 1.1).abs() < 1e-12);
        assert_eq!(s.ratio(1e6), 1.2);
    }

    #[test]
    fn a_bad_row_is_refused_with_its_place() {
        let head = "dtype,shape,experts,hidden,inter_per_gpu,tokens,default_us,best_us\n";
        let e = parse(&format!("{head}bf16,a,8,64,16,1,x,2\n")).unwrap_err();
        assert!(e.contains("row 2"), "{e}");
        let e = parse(&format!("{head}int4,a,8,64,16,1,3,2\n")).unwrap_err();
        assert!(e.contains("neither bf16 nor fp8"), "{e}");
    }

    #[test]
    fn priced_only_where_measured() {
        let shape = (512.0, 2048.0, 128.0);
        let h200 = (Some(9), "NVIDIA H200");
        let sglang = |format, runner| (Engine::Sglang, format, runner);
        let d = DefaultConfig::of(sglang("bf16", None), h200, shape).unwrap();
        assert!(d.exact && d.other_gpu.is_none());
        assert_eq!(d.shape.name, "qwen3next-tp4");
        // fp8 prices from the fp8 rows, never the bf16 ones
        let fp8 = DefaultConfig::of(sglang("fp8", None), h200, shape).unwrap();
        assert_eq!(fp8.shape.dtype, "fp8");
        assert!(
            fp8.note().contains("128 × 128 block scales"),
            "{}",
            fp8.note()
        );
        assert!(DefaultConfig::of(sglang("nvfp4", None), h200, shape).is_err());
        let cutlass = sglang("bf16", Some("flashinfer_cutlass"));
        assert!(DefaultConfig::of(cutlass, h200, shape).is_err());
        let rtx = (Some(12), "RTX PRO 6000");
        assert!(DefaultConfig::of(sglang("bf16", None), rtx, shape).is_err());
        // vLLM's default is another (batch-aware) config: not priced from SGLang's
        assert_eq!(
            DefaultConfig::of((Engine::Vllm, "bf16", None), h200, shape),
            Err(VLLM_DEFAULT_NOT_MEASURED)
        );
        let h20_gpu = (Some(9), "NVIDIA H20");
        let h20 = DefaultConfig::of(sglang("bf16", Some("triton")), h20_gpu, shape).unwrap();
        assert_eq!(h20.other_gpu.as_deref(), Some("NVIDIA H20"));
        let near = DefaultConfig::of(sglang("bf16", None), h200, (160.0, 5120.0, 192.0)).unwrap();
        assert!(!near.exact);
        assert!(
            near.note().contains("nearest measured shape"),
            "{}",
            near.note()
        );
    }
}
