//! A MoE layer's decode time read from vLLM 0.24's fused-MoE rows of the model's own shape on the
//! RTX PRO 6000 (`data/observations/moe-vllm-0.24-rtx-pro-6000-shapes.csv`: aiconfigurator
//! 0.12.0's `vllm-0.24.0-moe.csv`, FlashInfer CUTLASS NVFP4 / FP8 / BF16, balanced routing, TP
//! shards without EP, at most 2 tokens per touched expert), where the kernel curves have no
//! measured slice near the model's and would extrapolate ([`super::moe::shape_note`]).
//!
//! Qwen3.5-397B-A17B at TP4 is the case that asked for it: hidden 4096 × expert intermediate
//! 1024 / 4, 512 experts, top-10 — a slice (1.05 M elements) below every slice the curves
//! measured (1.57 M), so the curve was the smallest slice's, flat, raised to the across-slice line
//! of [`super::moe_bound`]. The table measured that exact shape at 1–96 tokens.
//!
//! A balanced row of `T` tokens hands the kernel `min(E, T·k)` touched experts and `T·k`
//! (token, expert) pairs. A decode step's routing (skewed, [`super::moe::Routing`]) touches
//! fewer experts than it has pairs; at decode shapes the kernel's time follows the experts it
//! streams (the bound's line: a fixed cost plus a cost per touched expert; the rows with every
//! expert touched rise 0.02 µs per extra pair at TP4), so the row is looked up at the tokens
//! whose balanced routing touches as many experts, `touched / k`, and — once every expert is
//! touched — at the tokens with as many pairs, `pairs / k`.
//!
//! The collector repeats one call, so rows whose touched weights fit the 128 MB L2 were partly
//! read from L2; a serving step (every layer its own experts) reads them from DRAM. The row is
//! therefore never taken below the call's fixed cost plus the touched bytes at the achievable DRAM
//! bandwidth, both from the across-shape line ([`super::moe_bound::LayerBound::dram_floor_s`]:
//! t0 55 µs, 86% of the datasheet for NVFP4, fitted on the table's cold rows). Not the whole line:
//! its per-expert cost is a cross-shape mean that this shape's own cold rows sit below (TP4: 483
//! µs at 32 balanced tokens where the line says 550).

//!
//! SGLang's FlashInfer TRT-LLM fused MoE (`--moe-runner-backend flashinfer_trtllm`) on a B200
//! is read the same way from its own rows (`data/observations/moe-sglang-0.5.14-b200-flashinfer-trtllm.csv`:
//! aiconfigurator's SGLang 0.5.14 table, the `FusedMoE` layer with its top-k in a CUDA graph,
//! balanced routing, TP slices, 1–16,384 tokens), at every batch: decode, verify and prefill
//! chunks alike, for the curves (fitted on Hopper's and SM120's kernels) price that runner's
//! prefill 12–37% fast on a B200 (GLM-5 at TP8, 8,192 tokens: 769 µs where it measures 1,057)
//! and a 1,024-token verify pass 24% fast (265 vs 349). Past its last row (16,384 tokens) the
//! time grows at the last segment's cost per token (the kernel is compute-bound there).

use std::sync::OnceLock;

const TABLE: &str =
    include_str!("../../../data/observations/moe-vllm-0.24-rtx-pro-6000-shapes.csv");
const B200_TABLE: &str =
    include_str!("../../../data/observations/moe-sglang-0.5.14-b200-flashinfer-trtllm.csv");

/// One distilled row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub(crate) backend: String,
    pub(crate) dtype: String,
    pub(crate) hidden: u64,
    pub(crate) inter: u64,
    pub(crate) experts: u32,
    pub(crate) topk: u32,
    pub(crate) tp: u32,
    pub(crate) tokens: f64,
    pub(crate) time_s: f64,
}

fn rows() -> &'static [Row] {
    static R: OnceLock<Vec<Row>> = OnceLock::new();
    R.get_or_init(|| parse_rows(TABLE))
}

fn b200_rows() -> &'static [Row] {
    static R: OnceLock<Vec<Row>> = OnceLock::new();
    R.get_or_init(|| parse_rows(B200_TABLE))
}

/// The rows of a vLLM fused-MoE table in the distilled layout (`backend, dtype, hidden, inter,
/// experts, topk, tp, num_tokens, time_us`); a line that does not parse is skipped (the carried
/// files are checked whole by their tests).
pub(crate) fn parse_rows(text: &str) -> Vec<Row> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let u = |i: usize| f.get(i)?.trim().parse::<u32>().ok();
            let w = |i: usize| f.get(i)?.trim().parse::<u64>().ok();
            let x = |i: usize| f.get(i)?.trim().parse::<f64>().ok();
            Some(Row {
                backend: f.first()?.to_string(),
                dtype: f.get(1)?.to_string(),
                hidden: w(2)?,
                inter: w(3)?,
                experts: u(4)?,
                topk: u(5)?,
                tp: u(6)?,
                tokens: x(7)?,
                time_s: x(8)? * 1e-6,
            })
        })
        .collect()
}

/// The model shape a table is looked up by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoeShape<'a> {
    /// The distilled backend name (`cutlass`: FlashInfer CUTLASS; `marlin`).
    pub backend: &'a str,
    /// The experts' weight format (`nvfp4`, `fp8`, `bf16`, `int4`).
    pub dtype: &'a str,
    pub hidden: u64,
    pub inter: u64,
    pub experts: u32,
    pub topk: u32,
    /// `moe_tp` (TP without EP: every rank holds a slice of every expert).
    pub tp: u32,
}

/// The measured rows of one shape, by tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeTable {
    /// (tokens, seconds), ascending in tokens.
    points: Vec<(f64, f64)>,
    experts: f64,
    topk: f64,
    /// The rows reach prefill chunks (the B200 runner's table): they price every batch, and past
    /// the last row the time grows at the last segment's rate; otherwise (decode rows only) the
    /// curves price prefill and the last row stands beyond it.
    pub prices_prefill: bool,
    /// Where the rows came from, for the cost model's notes.
    pub source: String,
}

impl ShapeTable {
    /// The rows of `shape`; `None` when the table did not measure it (at least two rows needed).
    pub fn of(shape: MoeShape) -> Option<ShapeTable> {
        let t = Self::of_rows(rows(), shape, false)?;
        let source = format!("vLLM 0.24 fused MoE table ({})", t.source);
        Some(ShapeTable { source, ..t })
    }

    /// The B200 rows of `shape` (SGLang 0.5.14's FlashInfer TRT-LLM runner, module docs).
    pub fn b200_flashinfer_trtllm(shape: MoeShape) -> Option<ShapeTable> {
        let t = Self::of_rows(b200_rows(), shape, true)?;
        let source = format!(
            "SGLang 0.5.14 FlashInfer TRT-LLM MoE on a B200 ({})",
            t.source
        );
        Some(ShapeTable { source, ..t })
    }

    fn of_rows(rows: &[Row], shape: MoeShape, prices_prefill: bool) -> Option<ShapeTable> {
        let dtype = crate::efficiency::normalize_dtype(shape.dtype)?;
        let mut points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| {
                r.backend == shape.backend
                    && crate::efficiency::normalize_dtype(&r.dtype) == Some(dtype)
                    && (r.hidden, r.inter, r.experts, r.topk, r.tp)
                        == (
                            shape.hidden,
                            shape.inter,
                            shape.experts,
                            shape.topk,
                            shape.tp,
                        )
            })
            .map(|r| (r.tokens, r.time_s))
            .collect();
        if points.len() < 2 {
            return None;
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let source = format!(
            "{} {dtype}, {} x {}, {} experts top-{}, moe_tp {}, {}-{} tokens",
            shape.backend,
            shape.hidden,
            shape.inter,
            shape.experts,
            shape.topk,
            shape.tp,
            points[0].0,
            points[points.len() - 1].0,
        );
        Some(ShapeTable {
            points,
            experts: f64::from(shape.experts),
            topk: f64::from(shape.topk),
            prices_prefill,
            source,
        })
    }

    /// The balanced row's tokens that stand for `touched` experts and `pairs` pairs (module docs).
    pub fn equivalent_tokens(&self, touched: f64, pairs: f64) -> f64 {
        // every expert touched: a further token adds pairs only
        if touched >= self.experts - 0.5 {
            pairs.max(touched) / self.topk
        } else {
            touched / self.topk
        }
    }

    /// The layer's time at `touched` experts and `pairs` pairs, seconds: linear in tokens between
    /// rows, the first row below it, the last beyond it (the rows end where balanced routing
    /// passes 2 tokens per expert, and the time is flat there).
    pub fn time_s(&self, touched: f64, pairs: f64) -> f64 {
        let t = self.equivalent_tokens(touched, pairs);
        let p = &self.points;
        let i = p.partition_point(|&(x, _)| x < t);
        if i == 0 {
            return p[0].1;
        }
        if i == p.len() {
            let ((x0, y0), (x1, y1)) = (p[p.len() - 2], p[p.len() - 1]);
            let rate = if self.prices_prefill {
                ((y1 - y0) / (x1 - x0)).max(0.0)
            } else {
                0.0
            };
            return y1 + rate * (t - x1);
        }
        let ((x0, y0), (x1, y1)) = (p[i - 1], p[i]);
        y0 + (y1 - y0) * (t - x0) / (x1 - x0)
    }
}

/// The table that prices `model`'s decode MoE under `layout` on `machine` with `opts`, where one
/// applies: an SM120 GPU (the table's RTX PRO 6000 family), NVFP4 experts run by FlashInfer
/// CUTLASS (both engines' NVFP4 MoE there unless another runner is asked for; b12x's kernels are
/// priced against it, [`super::moe::MoeRunner::B12x`]), experts sliced by TP (no EP), a slice the kernel
/// curves did not measure ([`super::moe::shape_note`]: where they did, they stay), and the
/// table's rows of that exact shape.
pub fn for_layout(
    machine: &crate::machine::Machine,
    model: &models::ModelSpec,
    layout: &models::Layout,
    opts: &crate::options::ServerOptions,
) -> Option<ShapeTable> {
    let m = model.moe?;
    let format = model
        .format_of(models::spec::ModelPart::RoutedExperts)
        .name();
    // b12x is priced against the CUTLASS kernel's time (`super::moe::MoeRunner::B12x`, its
    // constants pinned on b12x/cutlass pairs that shared one baseline), so it reads the same rows
    let cutlass = matches!(
        opts.moe_runner_backend.as_deref(),
        None | Some("auto" | "cutlass" | "flashinfer_cutlass" | "b12x")
    );
    let shape = |backend| MoeShape {
        backend,
        dtype: &format,
        hidden: model.hidden_size,
        inter: m.expert_intermediate_size,
        experts: m.num_routed_experts,
        topk: m.top_k,
        tp: layout.tp,
    };
    // SGLang's FlashInfer TRT-LLM runner on a B200, as its flag names it (its default there
    // depends on the architecture and quantization: not guessed)
    let trtllm = opts.engine == crate::engine::Engine::Sglang
        && opts.moe_runner_backend.as_deref() == Some("flashinfer_trtllm");
    if trtllm && machine.gpu.name == "b200" && layout.ep <= 1 {
        return ShapeTable::b200_flashinfer_trtllm(shape("flashinfer_trtllm"));
    }
    let applies = super::attn_backend::sm_major(machine) == Some(12)
        && crate::efficiency::normalize_dtype(&format) == Some("nvfp4")
        && cutlass
        && layout.ep <= 1
        && super::moe::shape_note(&machine.gpu, model, layout).is_some();
    if !applies {
        return None;
    }
    ShapeTable::of(shape("cutlass"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qwen35(tp: u32) -> MoeShape<'static> {
        MoeShape {
            backend: "cutlass",
            dtype: "nvfp4",
            hidden: 4096,
            inter: 1024,
            experts: 512,
            topk: 10,
            tp,
        }
    }

    /// Qwen3.5-397B's shape at TP4: the rows themselves at balanced routing (1 token 74.8 µs,
    /// 16 tokens 290 µs, all 512 experts at 64 tokens 797 µs); 160 touched experts by a skewed
    /// batch cost what 16 balanced tokens do; a shape the table lacks has no table.
    #[test]
    fn reads_the_rows_of_the_model_s_shape() {
        let t = ShapeTable::of(qwen35(4)).unwrap();
        assert!((t.time_s(10.0, 10.0) - 74.768e-6).abs() < 1e-9);
        assert!((t.time_s(160.0, 160.0) - 290.005e-6).abs() < 1e-9);
        assert!((t.time_s(160.0, 200.0) - 290.005e-6).abs() < 1e-9);
        assert!((t.time_s(512.0, 640.0) - 796.923e-6).abs() < 1e-9);
        // between rows: 24 tokens' worth halfway from 16 to 32
        let mid = t.time_s(240.0, 300.0);
        assert!(
            (mid - (290.005e-6 + 482.736e-6) / 2.0).abs() < 1e-9,
            "{mid}"
        );
        // past the last row (96 tokens) the last row's time
        assert!((t.time_s(512.0, 1000.0) - 798.827e-6).abs() < 1e-9);
        assert!(ShapeTable::of(qwen35(3)).is_none());
        assert!(t.source.contains("moe_tp 4"));
    }

    /// SGLang's FlashInfer TRT-LLM runner on a B200, GLM-5-FP8's shape at TP8: the rows as
    /// measured at decode, verify and prefill sizes (1 token 32.5 µs, 1,024 tokens 349.0, 8,192
    /// tokens 1,056.9), and past the last row (16,384 tokens, 2,068.1 µs) the last segment's
    /// rate carried on; the table is picked only for that runner on that GPU.
    #[test]
    fn the_b200_runner_rows_price_every_batch() {
        let glm5 = MoeShape {
            backend: "flashinfer_trtllm",
            dtype: "fp8",
            hidden: 6144,
            inter: 2048,
            experts: 256,
            topk: 8,
            tp: 8,
        };
        let t = ShapeTable::b200_flashinfer_trtllm(glm5).unwrap();
        assert!(t.prices_prefill);
        let at = |tokens: f64| t.time_s((tokens * 8.0).min(256.0), tokens * 8.0) * 1e6;
        assert!((at(1.0) - 32.488).abs() < 1e-6, "{}", at(1.0));
        assert!((at(1024.0) - 348.996).abs() < 1e-6, "{}", at(1024.0));
        assert!((at(8192.0) - 1056.878).abs() < 1e-6, "{}", at(8192.0));
        let rate = (2068.099 - 1564.198) / 4096.0;
        let past = 2068.099 + rate * 8192.0;
        assert!((at(24576.0) - past).abs() < 1e-6, "{}", at(24576.0));
        assert!(
            t.source
                .starts_with("SGLang 0.5.14 FlashInfer TRT-LLM MoE on a B200")
        );

        let spec = models::ModelSpec::preset("glm-5-fp8").unwrap();
        let opts = |runner: Option<&str>| crate::options::ServerOptions {
            engine: crate::engine::Engine::Sglang,
            moe_runner_backend: runner.map(str::to_string),
            ..crate::options::ServerOptions::default()
        };
        let table = |machine: &str, o: &crate::options::ServerOptions| {
            let m = crate::machine::Machine::resolve(machine).unwrap();
            for_layout(&m, &spec, &models::Layout::tp(8), o)
        };
        assert!(table("b200-x8", &opts(Some("flashinfer_trtllm"))).is_some());
        assert!(table("b200-x8", &opts(None)).is_none());
        assert!(table("h200-x8", &opts(Some("flashinfer_trtllm"))).is_none());
    }
}
