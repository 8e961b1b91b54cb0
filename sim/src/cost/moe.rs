//! Routing statistics of a MoE layer: how many experts a batch touches, and how unevenly the work
//! lands on expert-parallel ranks.
//!
//! Routing is skewed: within one decode batch the experts are not equally popular (hot experts,
//! and a batch's streams on one topic route alike), so `T` tokens touch fewer distinct experts
//! than uniform random routing would. The experts' popularity is taken as Zipf-like by rank,
//! `p_i ∝ i^(−s)` ([`ROUTING_SKEW`]; `s = 0` is uniform), each token picking `k` of them: expert
//! `i` is touched by one token with probability `q_i = min(1, k·p_i)` and by `T` tokens with
//! `1 − (1 − q_i)^T`; the expected touched count is the sum over experts (uniform:
//! `E·(1 − (1 − k/E)^T)`). The touched experts' weights are what a decode step's MoE streams.
//! Under EP each rank holds `m = E/ep` experts; the slowest rank sets the pace, and its load is
//! modelled as the expected maximum of `ep` roughly normal counts: mean + z(ep)·σ, with z(n) the
//! expected maximum of n standard normals (Blom's approximation) and σ the binomial spread of the
//! mean touched share (hot experts are taken as spread over ranks, as EPLB places them).

/// Elements of one routed expert's slice on one GPU, `hidden × moe_inter / moe_tp` with
/// `moe_tp = tp / ep` (SGLang's `moe_tp_size`): the shape the MoE efficiency is keyed by
/// ([`crate::efficiency::ShapeKnots`]); `None` for a dense model.
pub fn expert_slice_elements(model: &models::ModelSpec, layout: &models::Layout) -> Option<f64> {
    let m = model.moe?;
    let moe_tp = (layout.tp / layout.ep.max(1)).max(1);
    Some(model.hidden_size as f64 * m.expert_intermediate_size as f64 / moe_tp as f64)
}

/// The slice the MoE efficiency of `model` under `layout` is keyed by: `None` (the pooled curve)
/// for weight-only int4. The int4 rows measured SGLang's int4 MoE kernel, while the int4 records
/// ran vLLM's Marlin W4A16 MoE, which scales otherwise: at Kimi-K2's TP8 slice the table falls to
/// 46% of bandwidth from 32 tokens per expert, while the Kimi-K2.6 DCP1 records keep scaling
/// (already predicted 16–27% too slow at 16–128 streams with the pooled curve). Keyed by that
/// shape they came out worse (DCP1 MAPE, MTP off 11.8 → 11.9%, MTP on 15.4 → 16.0%), so the
/// pooled curve stays; under vLLM on SM120 its bandwidth is scaled to the carried Marlin table's
/// ([`super::moe_table`]).
pub fn efficiency_slice(
    model: &models::ModelSpec,
    layout: &models::Layout,
    format: &str,
) -> Option<f64> {
    if crate::efficiency::normalize_dtype(format) == Some("int4") {
        return None;
    }
    expert_slice_elements(model, layout)
}

/// The note saying that the MoE efficiency of `model` under `layout` extrapolates beyond the
/// measured expert slices of its format on `gpu`'s family, if it does.
pub fn shape_note(
    gpu: &models::GpuSpec,
    model: &models::ModelSpec,
    layout: &models::Layout,
) -> Option<String> {
    let f = model
        .format_of(models::spec::ModelPart::RoutedExperts)
        .name();
    let slice = efficiency_slice(model, layout, &f)?;
    let note = crate::efficiency::EfficiencyModel::builtin().moe_shape_note(gpu, &f, slice)?;
    Some(match super::moe_bound::line_of(&f) {
        Some(_) => format!(
            "{note}, and no faster than the line vLLM 0.24's fused MoE measured across slices (cost::moe_bound)"
        ),
        None => note,
    })
}

/// Expected maximum of `n` independent standard normal draws (Blom: Φ⁻¹((n − 0.375)/(n + 0.25))).
pub fn expected_max_z(n: u32) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let n = n as f64;
    inverse_normal_cdf((n - 0.375) / (n + 0.25))
}

/// Φ⁻¹(p) for 0 < p < 1 (Abramowitz & Stegun 26.2.23, |error| < 4.5e-4).
fn inverse_normal_cdf(p: f64) -> f64 {
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    let (q, sign) = if p < 0.5 { (p, -1.0) } else { (1.0 - p, 1.0) };
    let t = (-2.0 * q.ln()).sqrt();
    let num = 2.515517 + 0.802853 * t + 0.010328 * t * t;
    let den = 1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t;
    sign * (t - num / den)
}

/// Routing of one MoE layer over an expert-parallel group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Routing {
    /// Routed experts `E`.
    pub experts: f64,
    /// Experts per token `k`.
    pub top_k: f64,
    /// Expert-parallel ranks (1 = experts sliced by TP, every rank sees every expert).
    pub ep: u32,
    /// [`expected_max_z`] of `ep`, precomputed.
    z: f64,
    /// Zipf exponent of the experts' popularity by rank (0 = uniform; [`ROUTING_SKEW`]).
    skew: f64,
    /// `Σ_i i^(−skew)` over the experts, precomputed.
    zipf_norm: f64,
}

/// Zipf exponent of the experts' popularity within one decode batch (`p_i ∝ i^(−s)`), for every
/// MoE model: 0.45, i.e. the hottest of Kimi-K2's 384 experts about 8× the mean load, the
/// coldest about 0.6 of it. Bounds: 0 (uniform routing, what the model took before) and 0.45,
/// where the touched count first reaches, at 16 tokens, the one of aiconfigurator's
/// `power_law_1.2` routing (`data/observations/moe-vllm-0.24-rtx-pro-6000-routing.csv`: the most
/// skewed routing NVIDIA's collector measures kernels under, whose time falls with the experts
/// it leaves cold; `moe_routing_table` checks both). Taken at the bound because the dev set
/// (`validation/public-records.json`) asks for at least that much: its records with no DCP
/// (Kimi-K2.6 DCP1 on vLLM, GLM-5 on SGLang) match at 8–128 streams with 0.85–0.95, at short and
/// long context, with and without MTP, while the dev MAPE over all records is flat from 0.4 to
/// 0.6 (8.50 / 8.45 / 8.54%; 8.67% uniform) and worse beyond (0.8: 9.44%): the Kimi DCP2–8
/// records at ≥ 16k (DCP collectives, long-context attention) and the H200 DeepSeek-V3
/// `bench_serving` records ask for less. Those Kimi and GLM-5 records are `llm_decode_bench`
/// cells, whose streams all continue one prompt: they are priced with
/// [`SHARED_PROMPT_ROUTING_SKEW`] since issue 35, beyond the collector's `power_law_1.2` (a
/// synthetic routing, not a batch of one text's continuations); this one stays for independent
/// requests.
pub const ROUTING_SKEW: f64 = 0.45;

/// Zipf exponent of the experts' popularity within one decode batch whose streams all continue
/// the same prompt (`llm_decode_bench.py`: every stream of a cell sends the same messages, the
/// generation prompt after the same reference document, and samples its own continuation of
/// it): the streams write about one subject in one style, so their tokens pick the same experts
/// more often than independent requests' do ([`ROUTING_SKEW`], which stays for them: the dev
/// set's `bench_serving` records, random prompts, ask for no more). Physical meaning as
/// [`ROUTING_SKEW`]'s; bounds: [`ROUTING_SKEW`] (no correlation beyond independent requests')
/// and 1.0 (the hottest of Kimi-K2's 384 experts ≈ 60× the coldest). The bench's prompt is one
/// encyclopedia-article request (`GENERATION_PROMPT`, after the reference document at ctx > 0),
/// no sampling parameters (the server's defaults), `ignore_eos`, 2,048 tokens a request
/// (voipmonitor/llm-inference-bench `llm_decode_bench.py` at 429f63e8): the streams run in step
/// through the same kind of text. No public count of the experts such a batch touches was
/// found; the exponent is pinned on the dev set (`validation/public-records.json`), where the
/// Kimi-K2.6 records on vLLM price the count directly: their Marlin kernel is priced within a
/// few percent of vLLM 0.24's measured rows at their own touched counts from 16 to 512 tokens
/// ([`super::marlin_moe`], `sim/tests/marlin_moe_routing.rs`). The DCP1 MTP-off cells at ctx 0
/// then imply, from the measured step's growth less the modelled all-reduce and attention,
/// ≈ 70 / 120 / 170 / 250 touched experts at 16 / 32 / 64 / 128 streams, 0.62–0.70 of uniform
/// routing (0.8 gives 84 / 137 / 208 / 287, 1.0 gives 67 / 108 / 166 / 237). Dev MAPE / bias
/// (`validate`, one headline per record) by the exponent, with the Marlin price: 0.6 7.42% /
/// −3.3%, 0.7 6.87 / −2.1, 0.8 6.52 / −0.7, 0.9 6.55 / +1.1, 1.0 7.25 / +3.2. Taken: 0.8, the
/// minimum; the leave-one-source-out coverage of the error model is 80.3% there (75–90%,
/// `sim/tests/error_model.rs`). More is asked by those Kimi cells (≈ 0.95) and less by the rest:
/// GLM-5 on SGLang (256 experts; bias +2 → +4% at 0.8, MAPE down in every group), Kimi DCP2–8
/// MTP on, and the 8-stream cells. Those 8-stream cells are what no routing can fit: the
/// measured step grows 1.5 ms a stream from 4 to 8 streams (16.7 → 22.8 ms), then 0.29 ms a
/// stream from 8 to 16 (→ 25.1 ms), 0.5 from 16 to 32. Tokens routed independently of one
/// another add `Σ_i q_i (1 − q_i)^T` new experts per token, falling smoothly with `T`, so a
/// five-fold drop between 8 and 16 tokens is not a touched-expert effect: it stays (+12% at 8
/// streams, MTP off, ctx 0) for whatever makes the 8-token step slow.
pub const SHARED_PROMPT_ROUTING_SKEW: f64 = 0.8;

impl Routing {
    /// Routing of `experts` experts, top-`top_k`, over `ep` ranks, skewed by [`ROUTING_SKEW`].
    pub fn new(experts: u32, top_k: u32, ep: u32) -> Self {
        Self::with_skew(experts, top_k, ep, ROUTING_SKEW)
    }

    /// [`Self::new`] for a batch whose streams all continue one prompt when `shared_prompt`
    /// ([`SHARED_PROMPT_ROUTING_SKEW`]).
    pub fn of_streams(experts: u32, top_k: u32, ep: u32, shared_prompt: bool) -> Self {
        let skew = if shared_prompt {
            SHARED_PROMPT_ROUTING_SKEW
        } else {
            ROUTING_SKEW
        };
        Self::with_skew(experts, top_k, ep, skew)
    }

    /// [`Self::new`] with the experts' popularity `∝ rank^(−skew)` (0 = uniform).
    pub fn with_skew(experts: u32, top_k: u32, ep: u32, skew: f64) -> Self {
        let skew = skew.max(0.0);
        Routing {
            experts: experts.max(1) as f64,
            top_k: top_k.clamp(1, experts.max(1)) as f64,
            ep: ep.max(1),
            z: expected_max_z(ep.max(1)),
            skew,
            zipf_norm: (1..=experts.max(1)).map(|i| (i as f64).powf(-skew)).sum(),
        }
    }

    /// Mean probability over the experts that one is touched by `tokens` tokens.
    fn touched_probability(&self, tokens: f64) -> f64 {
        self.expected_touched(tokens) / self.experts
    }

    /// Expected distinct experts touched by `tokens` tokens: `Σ_i 1 − (1 − min(1, k·p_i))^T`
    /// (uniform: `E·(1 − (1 − k/E)^T)`).
    pub fn expected_touched(&self, tokens: f64) -> f64 {
        if tokens <= 0.0 {
            return 0.0;
        }
        if self.skew == 0.0 {
            return self.experts * (1.0 - (1.0 - self.top_k / self.experts).powf(tokens));
        }
        (1..=self.experts as u32)
            .map(|i| {
                let q = (self.top_k * (i as f64).powf(-self.skew) / self.zipf_norm).min(1.0);
                1.0 - (1.0 - q).powf(tokens)
            })
            .sum()
    }

    /// Experts held by one rank.
    pub fn experts_per_rank(&self) -> f64 {
        self.experts / self.ep as f64
    }

    /// Expected touched experts on the busiest rank (all of them when `ep == 1`).
    pub fn max_touched_per_rank(&self, tokens: f64) -> f64 {
        let m = self.experts_per_rank();
        let q = self.touched_probability(tokens);
        let mean = m * q;
        (mean + self.z * (m * q * (1.0 - q)).sqrt()).min(m)
    }

    /// Expected (token, expert) pairs on the busiest rank: `T·k/ep` plus the binomial tail.
    pub fn max_pairs_per_rank(&self, tokens: f64) -> f64 {
        let pairs = tokens * self.top_k;
        let p = 1.0 / self.ep as f64;
        let most = tokens * self.top_k.min(self.experts_per_rank());
        (pairs * p + self.z * (pairs * p * (1.0 - p)).sqrt()).min(most)
    }

    /// Busiest rank's work over the average rank's (1.0 = balanced), by (token, expert) pairs.
    pub fn pair_imbalance(&self, tokens: f64) -> f64 {
        let mean = tokens * self.top_k / self.ep as f64;
        if mean <= 0.0 {
            1.0
        } else {
            self.max_pairs_per_rank(tokens) / mean
        }
    }

    /// Expected tokens with at least one of their experts on a given rank.
    pub fn tokens_per_rank(&self, tokens: f64) -> f64 {
        let miss = (1.0 - 1.0 / self.ep as f64).powf(self.top_k);
        tokens * (1.0 - miss)
    }
}

pub use crate::b12x_build::{B12X_MOE_FORCE_A16, B12xA16Build, B12xBuild};

/// Rows of b12x's MoE M tile and columns of its N tile (`_LEVEL_TILE_M`, `_LEVEL_TILE_N` = 128,
/// `MoEDynamicKernel(mma_tiler_mn=(128, 128))`).
pub const B12X_TILE: f64 = 128.0;
/// Intermediate N tiles one dynamic task covers (`_DYNAMIC_SLICE_CHUNK = 2`, every build here).
pub const B12X_SLICE_CHUNK: f64 = 2.0;
/// Bytes per activation value the dynamic kernel's A tile holds: NVFP4 (half a byte) plus one
/// e4m3 block scale per 16 values (`_NVFP4_BLOCK_SIZE`).
pub const B12X_A_BYTES_PER_VALUE: f64 = 0.5 + 1.0 / 16.0;

/// What the March 2026 build's ([`B12xBuild::March2026`]) micro / compact static kernels save
/// per touched expert and layer against the tables' (CUTLASS grouped-GEMM) MoE, seconds.
/// Physical meaning: b12x runs route, pack, FP4 quantize, FC1, SiLU, FC2 and the weighted
/// scatter as one persistent launch over only the routed rows (`b12x/moe/fused/static.py`,
/// `micro.py`), where the CUTLASS path runs separate quantize / expand / activation / reduce
/// kernels around two grouped GEMMs whose every group (touched expert) gets its own tile set-up
/// and 128-row tile: a cost per touched expert, as the measured gaps are. Bounds: 0 (no gain) up
/// to the floor [`B12X_STATIC_FLOOR_RATIO`]. Pinned on dev (`validation/public-records.json`):
/// the 14 GLM-5-NVFP4 TP8 b12x vs cutlass decode pairs below 128 routed pairs
/// (`models/glm5.md`, MTP off c1–c8 and MTP on c1–c2 at every context;
/// `data/observations/b12x-glm5-moe-ab.csv`), March 2026 build, where b12x runs 0–11% more
/// tokens/s. Predicted over measured b12x/cutlass ratio by the saving: 0 → bias −3.5% (mean
/// |error| 3.5%), 0.4 µs −1.0% (2.4%), 0.55 µs 0.0% (2.0%), 0.6 µs +0.3% (2.0%), 0.8 µs +1.7%
/// (2.5%), 1.0 µs +3.1% (3.5%). Taken: 0.55 µs, which centres them (0.6 µs, as close, puts the
/// error model's leave-one-source-out coverage at 90.5%, above its 75–90% bar,
/// `sim/tests/error_model.rs`; 89.5% here with the dynamic rate below). Only that build: the
/// later builds' static kernels have their own public timings ([`B12X_STATIC_RATIO_0_7`]), at
/// about half FlashInfer's CUTLASS time where this saving leaves 0.93 of it (Qwen3.5-397B TP4,
/// one token), i.e. the later builds removed most of the CUTLASS path's fixed cost, which the
/// March build did not. Re-checked when the thirty-second session read these runs' launch as the
/// page printed it (5 verified tokens a stream, NCCL with its graph file; the same 14 pairs
/// fall below 128 routed pairs): 0.4 µs −0.9% (2.4%), 0.55 µs +0.1% (2.1%), 0.7 µs +1.2%
/// (2.3%): kept.
pub const B12X_STATIC_SAVING_PER_EXPERT_S: f64 = 0.55e-6;
/// The least share of the tables' MoE time the March build's static kernels are priced at: the
/// best geomean b12x's benchmark reports against FlashInfer's CUTLASS fused MoE at decode sizes
/// (0.44, fast math, 1–8 tokens, Qwen3.5-397B TP4; b12x commit ba2b9679, 10 April 2026).
pub const B12X_STATIC_FLOOR_RATIO: f64 = 0.44;
/// The 0.7.1–0.8.1 builds' ([`B12xBuild::Static640`]) micro / static kernel time over
/// FlashInfer's CUTLASS fused MoE (`cutlass_fused_moe`, the kernel of the tables' NVFP4 rows:
/// aiconfigurator's vLLM 0.24 FlashInfer CUTLASS), at one to eight tokens: 0.52, the geomean
/// b12x's `benchmarks/benchmark_moe.py` (CUDA-graph replay) printed before ba2b9679 at
/// Qwen3.5-397B-A17B NVFP4 TP4 (commit message of local-inference-lab/b12x ba2b9679; carried in
/// `data/observations/b12x-public-kernel-geomeans.csv`, row `moe micro/static (fast math)`).
/// Physical meaning: one persistent launch does what the CUTLASS path spreads over about eight
/// kernels (expand + FP4 quantize, stride set-up, two grouped GEMMs, activation, finalize),
/// whose fixed cost is most of a decode-sized call (the tables' one-token rows: 49–78 µs at every
/// NVFP4 shape, `moe-vllm-0.24-rtx-pro-6000-shapes.csv`, where streaming the touched experts
/// takes 5–15 µs). Bounds: 0.52 (fast math) – 0.56 (exact math, the same commit). Not fitted:
/// the public figure as printed; the benchmark's shape is the only one b12x published, so other
/// shapes take the same share (the fixed cost it removes is shape-independent, as the tables'
/// one-token rows are). Never faster than streaming the touched experts from DRAM
/// ([`super::moe_bound::LayerBound::dram_floor_s`]'s bandwidth, without its t0): the
/// benchmark replays one layer, whose experts the 128 MB L2 partly keeps.
pub const B12X_STATIC_RATIO_0_7: f64 = 0.52;
/// [`B12X_STATIC_RATIO_0_7`] from 0.8.2 ([`B12xBuild::UnderfillTiles`]: 64×128 underfill tiles
/// for experts with few routed rows): 0.44, the same benchmark after ba2b9679 (exact math 0.49).
pub const B12X_STATIC_RATIO_0_8_2: f64 = 0.44;
/// The expert slice on one GPU at which b12x published [`B12X_STATIC_RATIO_0_7`] and
/// [`B12X_STATIC_RATIO_0_8_2`]: Qwen3.5-397B-A17B at TP4, `(hidden, moe_inter / tp)` =
/// (4096, 1024 / 4), its only benchmark shape (`data/observations/b12x-public-kernel-geomeans.csv`).
pub const B12X_BENCHMARK_SLICE: (f64, f64) = (4096.0, 256.0);

/// The rate at which b12x's dynamic kernel gets through its tasks' bytes, as a fraction of the
/// GPU's peak memory bandwidth. Physical meaning: the queue-driven persistent kernel
/// (`b12x/moe/fused/dynamic.py::MoEDynamicKernel`, 128×128 tiles) runs each (expert, M tile,
/// slice group) task's FC1 and FC2 over a full 128-row tile whatever rows are routed, while one
/// warp streams that expert's weight slice and the tile's packed activations: a task is slow for
/// the bytes it moves. Bounds: above 0, up to the tables' achieved 0.55–0.75 at these shapes
/// (`moe-kernels-sglang-0.5.14.csv`), where b12x would cost what the tables do. Pinned on dev:
/// the 7 GLM-5 b12x vs cutlass pairs from 128 routed pairs (MTP off c16–c64, MTP on c4–c32,
/// read then at 4 verify tokens a stream; the March 2026 build, which ran the dynamic kernel
/// there; the static saving above): predicted over measured b12x/cutlass ratio, bias (mean |error|) 0.28
/// −11.4% (12.2%), 0.30 −7.2% (10.4%), 0.32 −3.2% (9.1%), 0.34 +0.6% (7.9%), 0.36 +4.2%
/// (7.7%), 0.40 +11.1% (11.1%), at the shared-prompt routing skew of 0.6. The skew of 0.8
/// ([`SHARED_PROMPT_ROUTING_SKEW`], issue 35) hands both kernels fewer experts, which the
/// dynamic kernel's tasks (no fixed cost) gain more from: 0.32 −0.4% (7.8%), 0.33 +1.5% (7.2%),
/// 0.34 +3.3% (7.0%), 0.36 +6.9% (8.2%). Taken: 0.34 (0.61 TB/s of the 1.79 TB/s peak), the
/// least mean |error| again. Left: MTP-off 64 streams and MTP-on 16 streams 15–20% too fast
/// (the measured gap there is deeper than the touched experts explain), MTP-on 4 and 32
/// streams 4–7% too slow. Re-checked when the thirty-second session read these runs' launch as
/// the page printed it (5 verify tokens a stream, NCCL with its graph file; the same 7 pairs):
/// 0.32 −5.0% (9.8%), 0.34 −1.1% (8.5%), 0.36 +2.6% (7.3%): kept, the least |bias| (0.36's
/// smaller mean |error| comes from the two scattered rows, MTP-off 64 streams +11.8% and MTP-on
/// 16 streams +14.3% at 0.34, and puts the seven 2.6% fast).
pub const B12X_DYNAMIC_PEAK_FRACTION: f64 = 0.34;

/// The W4A16 dynamic kernel's tile ([`B12xA16Build::Fused128`]): 32 routed rows × 64
/// intermediate columns (`_W4A16_LEVEL_TILE_M = 32`, `_W4A16_LEVEL_TILE_N = 64`), one N tile a
/// task (`_DYNAMIC_SLICE_CHUNK = 1`; b12x `integration/tp_moe.py` at 32679922).
pub const B12X_A16_DYNAMIC_TILE_MN: (f64, f64) = (32.0, 64.0);
/// Bytes per activation value of the W4A16 dynamic kernel's A tile: BF16
/// (`a_scratch_dtype = cutlass.BFloat16`, `_get_dynamic_kernel` at 32679922).
pub const B12X_A16_A_BYTES_PER_VALUE: f64 = 2.0;

/// b12x's NVFP4 (W4A4) MoE kernels at one GPU's expert slice: what [`MoeRunner::B12x`] prices,
/// and the kernels [`MoeRunner::B12xA16`]'s tensor-core decode sizes are priced as.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct B12xKernels {
    /// Model hidden size (the GEMMs' K of FC1, N of FC2).
    pub hidden: f64,
    /// Expert intermediate size on this GPU (`moe_inter / moe_tp`).
    pub inter_per_gpu: f64,
    /// The dynamic kernel's task rate, bytes/s ([`B12X_DYNAMIC_PEAK_FRACTION`] of peak).
    pub dynamic_bytes_per_s: f64,
    /// The rate the static kernels stream the touched experts at no faster than, bytes/s:
    /// the NVFP4 line's achievable share of peak ([`super::moe_bound::line_of`], 0.86,
    /// fitted on the vLLM 0.24 table's cold rows).
    pub cold_bytes_per_s: f64,
    /// The build that ran.
    pub build: B12xBuild,
}

/// The MoE runner, where its kernels cost other than the kernel tables' (SGLang's fused MoE and
/// FlashInfer CUTLASS, which the efficiency curves and shape tables were fitted to).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MoeRunner {
    /// The tables' kernels (`cutlass`, `flashinfer_*`, `triton`, …): their time as it is.
    Tables,
    /// `--moe-runner-backend b12x` with NVFP4 experts (b12x `b12x_moe_fp4`, SM120). Below the
    /// build's dynamic cutover ([`B12xBuild::dynamic_from_pairs`]) its micro / compact static
    /// kernels pack only the routed rows in one launch ([`MoeRunner::static_s`]): the March
    /// build at the tables' time less [`B12X_STATIC_SAVING_PER_EXPERT_S`] per touched expert,
    /// later builds at their published share of it ([`B12X_STATIC_RATIO_0_7`],
    /// [`B12X_STATIC_RATIO_0_8_2`]), never faster than streaming the touched experts from DRAM.
    /// From the cutover the dynamic kernel queues one task per (touched expert, 128-row M tile,
    /// 2 × 128 intermediate columns); each task TMA-loads its full 128-row FP4 activation tile
    /// and its slice of the expert's weights (the weights once per M tile), and the tasks go
    /// through at [`B12X_DYNAMIC_PEAK_FRACTION`] of peak bandwidth; never faster than the tables.
    B12x(B12xKernels),
    /// vLLM's Marlin W4A16 MoE on SM120 ([`super::marlin_moe`]): a fixed cost, the touched
    /// experts streamed once and a cost per routed row, at decode and verify sizes; the tables'
    /// time for prefill chunks.
    Marlin(super::marlin_moe::MarlinMoe),
    /// b12x's W4A16 kernels (`B12X_MOE_FORCE_A16=1`: BF16 activations, the NVFP4 weights
    /// dequantised inline). With `B12X_W4A16_TC_DECODE=1`
    /// ([`crate::b12x_build::B12X_W4A16_TC_DECODE`]) a call of up to 8 tokens runs its
    /// tensor-core decode kernel, which streams the touched experts' 4-bit weights, the same
    /// bytes as b12x's W4A4 kernels of the same build, its BF16 activation rows adding 2 bytes ×
    /// `hidden` per routed pair (12 KB at GLM-5's 6144, under 1% of one expert's 2.65 MB TP8
    /// slice): priced as those W4A4 kernels ([`MoeRunner::B12x`] of its `kernels`), as no public
    /// timing prices it. The other static sizes, up to [`B12xA16Build::FUSED128_STATIC_MAX_PAIRS`]
    /// routed pairs (route-packed, or the May builds' compact static / direct-micro kernels): no
    /// public timing, the tables' time. Above, for [`B12xA16Build::Fused128`] (b12x 0.13.x of
    /// 9–14 May 2026, `b12x/moe/fused/w4a16/`) the dynamic kernel
    /// (`w4a16/dynamic.py`, "keeps the queue-driven routing and task publication structure from
    /// the NVFP4 path"): one task per (touched expert, 32-row M tile, 64-column intermediate
    /// slice), each TMA-loading the full 32-row BF16 activation tile over all of `hidden`
    /// (`tAgA_mk` for every FC1 K tile, whatever rows are valid) and its slice of the expert's
    /// FP4 weights, dequantised into shared memory; the tasks go through at the NVFP4 dynamic
    /// kernel's rate ([`B12X_DYNAMIC_PEAK_FRACTION`], the same persistent queue design: a
    /// physical stand-in, pinned on the dev set's NVFP4 pairs, as b12x publishes no W4A16
    /// timing); never faster than the tables. At GLM-5's TP8 slice (256 intermediate columns: 4
    /// tasks an expert) a task moves a quarter of the expert's weights (≈ 0.66 MB) and a
    /// 32 × 6144 BF16 tile (0.39 MB): 2.4× the NVFP4 build's 128-row, 2-slice task bytes per
    /// weight byte, which is the step's jump from 128 to 256 routed pairs.
    /// Any other W4A16 build above 128 pairs (the rewritten kernels of 5aa74cb3 on, or none
    /// named): no public timing, the tables' time.
    B12xA16 {
        /// The slice and rates (FC1's K is the activation tile's width; the dynamic kernel's
        /// task rate is the NVFP4 one's), and the b12x build whose W4A4 kernels price the
        /// tensor-core decode sizes.
        kernels: B12xKernels,
        /// Routed pairs on this GPU up to which a call runs the tensor-core decode kernel
        /// (`B12X_W4A16_TC_DECODE=1`: its 8 tokens × top-k, over the EP ranks); 0 without it.
        tc_decode_max_pairs: f64,
        /// Whether the build's dynamic kernel is modelled ([`B12xA16Build::Fused128`]).
        dynamic: bool,
    },
}

/// The geometry of a b12x dynamic MoE kernel's tasks: tile rows, intermediate columns a task
/// covers, activation bytes per value.
#[derive(Debug, Clone, Copy)]
struct DynamicTasks {
    tile_m: f64,
    slice_cols: f64,
    a_bytes_per_value: f64,
}

impl DynamicTasks {
    /// The kernel's time for `pairs` routed pairs over `touched` experts of `bytes_per_expert`
    /// each: tasks × (the expert's weight slice + the full activation tile) over
    /// `bytes_per_s`; `None` where there is nothing to price.
    fn time_s(
        self,
        (hidden, inter_per_gpu): (f64, f64),
        pairs: f64,
        touched: f64,
        bytes_per_expert: f64,
        bytes_per_s: f64,
    ) -> Option<f64> {
        if touched <= 0.0 || bytes_per_s <= 0.0 {
            return None;
        }
        let m_tiles = (pairs / touched / self.tile_m).ceil().max(1.0);
        let slice_groups = (inter_per_gpu / self.slice_cols).ceil().max(1.0);
        let a_tile_bytes = self.tile_m * hidden * self.a_bytes_per_value;
        let task_bytes = bytes_per_expert / slice_groups + a_tile_bytes;
        Some(touched * m_tiles * slice_groups * task_bytes / bytes_per_s)
    }

    /// A layer under the dynamic kernel: its [`Self::time_s`], never faster than the tables'
    /// `tables_s` (the dynamic kernel is taken only where the static one would be slower), and
    /// the tables where there is nothing to price.
    fn layer_s(
        self,
        shape: (f64, f64),
        (pairs, touched, bytes_per_expert): (f64, f64, f64),
        bytes_per_s: f64,
        tables_s: f64,
    ) -> f64 {
        self.time_s(shape, pairs, touched, bytes_per_expert, bytes_per_s)
            .map_or(tables_s, |t| t.max(tables_s))
    }
}

/// Why `opts`'s MoE runner cannot run `layout` of `model`, where it cannot
/// ([`crate::options::runner_applies`]: b12x with the experts expert-parallel).
pub fn runner_refusal(
    opts: &crate::options::ServerOptions,
    model: &models::ModelSpec,
    layout: &models::Layout,
) -> Option<String> {
    (!crate::options::runner_applies(opts, model, layout)).then(|| {
        let flag = opts.engine.flag(crate::engine::Knob::MoeRunner);
        format!(
            "{flag} {} runs the routed experts sliced by TP only (the engine refuses to start \
             with expert parallelism): slice the experts by TP, or name another {flag} for EP {}",
            crate::options::B12X_RUNNER,
            layout.ep
        )
    })
}

impl MoeRunner {
    /// The runner `opts` name (`--moe-runner-backend`), for experts in weight format `format`
    /// on a GPU of `peak_bytes_per_s`: b12x's NVFP4 kernels of the build `opts` name
    /// ([`B12xBuild::NEWEST`] where none). Under `B12X_MOE_FORCE_A16=1` b12x runs its W4A16
    /// kernels instead (BF16 activations, chosen by `default_moe_quant_mode` in
    /// `integration/tp_moe.py`): [`MoeRunner::B12xA16`] for the 9–14 May 2026 build
    /// ([`B12xA16Build::Fused128`]) or under `B12X_W4A16_TC_DECODE=1`; any other W4A16 build (the
    /// rewritten `b12x.moe.fused.w4a16.kernel` of 5aa74cb3 on, or none named) without the
    /// tensor-core decode kernel has no public timing: priced as the tables.
    pub fn of(
        opts: &crate::options::ServerOptions,
        format: &str,
        model: &models::ModelSpec,
        layout: &models::Layout,
        peak_bytes_per_s: f64,
    ) -> MoeRunner {
        let nvfp4 = crate::efficiency::normalize_dtype(format) == Some("nvfp4");
        let (Some("b12x"), Some(m), true) = (opts.moe_runner_backend.as_deref(), model.moe, nvfp4)
        else {
            return MoeRunner::Tables;
        };
        let moe_tp = (layout.tp / layout.ep.max(1)).max(1);
        let kernels = B12xKernels {
            hidden: model.hidden_size as f64,
            inter_per_gpu: m.expert_intermediate_size as f64 / moe_tp as f64,
            dynamic_bytes_per_s: peak_bytes_per_s * B12X_DYNAMIC_PEAK_FRACTION,
            cold_bytes_per_s: peak_bytes_per_s
                * super::moe_bound::line_of(format).map_or(1.0, |l| l.eta),
            build: opts.b12x_build.unwrap_or(B12xBuild::NEWEST),
        };
        let fused128 = opts.b12x_a16_build == Some(B12xA16Build::Fused128);
        if !opts.b12x_moe_a16 {
            MoeRunner::B12x(kernels)
        } else if fused128 || opts.b12x_w4a16_tc_decode {
            MoeRunner::B12xA16 {
                kernels,
                tc_decode_max_pairs: if opts.b12x_w4a16_tc_decode {
                    crate::b12x_build::B12X_W4A16_TC_DECODE_MAX_TOKENS * f64::from(m.top_k)
                        / f64::from(layout.ep.max(1))
                } else {
                    0.0
                },
                dynamic: fused128,
            }
        } else {
            MoeRunner::Tables
        }
    }

    /// b12x's micro / compact static kernels of `build` for a layer the tables price at
    /// `tables_s` over `touched` experts whose weights take `cold_s` to stream from DRAM. The
    /// March build: the tables' time less [`B12X_STATIC_SAVING_PER_EXPERT_S`] per touched expert,
    /// never below [`B12X_STATIC_FLOOR_RATIO`] of it (pinned on the dev set's GLM-5 pairs). Later
    /// builds: their benchmark's share of FlashInfer's CUTLASS time ([`B12X_STATIC_RATIO_0_7`],
    /// [`B12X_STATIC_RATIO_0_8_2`]), never below `cold_s` (the benchmark replays one layer from
    /// L2), never above the tables'.
    fn static_s(build: B12xBuild, tables_s: f64, touched: f64, cold_s: f64) -> f64 {
        let ratio = match build {
            B12xBuild::March2026 => {
                return (tables_s - touched * B12X_STATIC_SAVING_PER_EXPERT_S)
                    .max(B12X_STATIC_FLOOR_RATIO * tables_s);
            }
            B12xBuild::Static640 => B12X_STATIC_RATIO_0_7,
            B12xBuild::UnderfillTiles => B12X_STATIC_RATIO_0_8_2,
            // the direct-micro kernel, the benchmark's own `micro` profile, kept from 0.8.2
            B12xBuild::MicroDynamic => B12X_STATIC_RATIO_0_8_2,
        };
        (ratio * tables_s).max(cold_s).min(tables_s)
    }

    /// The note saying that this runner's static kernels are priced at a share b12x published
    /// for another expert slice ([`B12X_BENCHMARK_SLICE`]), if they are: the later builds'
    /// ratios carry one shape's fixed-cost share to every shape, and no serving record of the
    /// dev set ran those builds (its GLM-5 b12x runs are the March build, whose saving is pinned
    /// on them). Worded as the extrapolated-MoE notes are ([`crate::uncertainty::Flag`]), so the
    /// prediction's interval is the one of kernels off their measured shapes.
    pub fn benchmark_shape_note(&self) -> Option<String> {
        let MoeRunner::B12x(B12xKernels {
            hidden,
            inter_per_gpu,
            build,
            ..
        }) = *self
        else {
            return None;
        };
        let (bench_hidden, bench_inter) = B12X_BENCHMARK_SLICE;
        let ratio = match build {
            B12xBuild::March2026 => return None,
            B12xBuild::Static640 => B12X_STATIC_RATIO_0_7,
            B12xBuild::UnderfillTiles => B12X_STATIC_RATIO_0_8_2,
            B12xBuild::MicroDynamic => {
                return Some(format!(
                    "MoE efficiency extrapolated: {}, at this expert slice ({hidden} x {inter_per_gpu})",
                    build.describe()
                ));
            }
        };
        let same = |a: f64, b: f64| (a - b).abs() < 0.5;
        if same(hidden, bench_hidden) && same(inter_per_gpu, bench_inter) {
            return None;
        }
        Some(format!(
            "MoE efficiency extrapolated: {}'s static kernels priced at {ratio} of FlashInfer's CUTLASS time, the share b12x published for Qwen3.5-397B-A17B TP4's expert slice ({bench_hidden} x {bench_inter}) at 1-8 tokens; this slice is {hidden} x {inter_per_gpu}",
            build.describe()
        ))
    }

    /// One GPU's MoE layer under this runner, for `pairs` routed pairs on it over `touched`
    /// experts of `bytes_per_expert` each, given `tables_s`, the tables' kernel's time for it.
    pub fn time_s(&self, tables_s: f64, pairs: f64, touched: f64, bytes_per_expert: f64) -> f64 {
        let k = match *self {
            MoeRunner::Tables => return tables_s,
            MoeRunner::Marlin(m) => {
                return m
                    .time_s(touched, pairs, bytes_per_expert)
                    .unwrap_or(tables_s);
            }
            MoeRunner::B12xA16 {
                kernels,
                tc_decode_max_pairs,
                dynamic,
            } => {
                if pairs <= tc_decode_max_pairs {
                    return MoeRunner::B12x(kernels).time_s(
                        tables_s,
                        pairs,
                        touched,
                        bytes_per_expert,
                    );
                }
                if pairs <= B12xA16Build::FUSED128_STATIC_MAX_PAIRS || !dynamic {
                    return tables_s;
                }
                let (tile_m, slice_cols) = B12X_A16_DYNAMIC_TILE_MN;
                let tasks = DynamicTasks {
                    tile_m,
                    slice_cols,
                    a_bytes_per_value: B12X_A16_A_BYTES_PER_VALUE,
                };
                return tasks.layer_s(
                    (kernels.hidden, kernels.inter_per_gpu),
                    (pairs, touched, bytes_per_expert),
                    kernels.dynamic_bytes_per_s,
                    tables_s,
                );
            }
            MoeRunner::B12x(k) => k,
        };
        if pairs < k.build.dynamic_from_pairs() {
            let cold_s = touched * bytes_per_expert / k.cold_bytes_per_s.max(1.0);
            return Self::static_s(k.build, tables_s, touched, cold_s);
        }
        if k.build == B12xBuild::MicroDynamic {
            // the sub-128-row dynamic kernel has no public timing. It replaced the static kernel
            // because it beat it (377083ec: "micro wins below 64, dynamic at/above", the 16-row
            // tile "~0.88-0.92x of the 128 tile up to ~640 routed rows"), so it is no slower
            // than the build it retired; and the rate pinned on the March build's 128-row
            // kernel, slower than the tables above 640 pairs, is not its own: capped there
            let retired = MoeRunner::B12x(B12xKernels {
                build: B12xBuild::UnderfillTiles,
                ..k
            });
            return retired
                .time_s(tables_s, pairs, touched, bytes_per_expert)
                .min(tables_s);
        }
        let tasks = DynamicTasks {
            tile_m: B12X_TILE,
            slice_cols: B12X_TILE * B12X_SLICE_CHUNK,
            a_bytes_per_value: B12X_A_BYTES_PER_VALUE,
        };
        tasks.layer_s(
            (k.hidden, k.inter_per_gpu),
            (pairs, touched, bytes_per_expert),
            k.dynamic_bytes_per_s,
            tables_s,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_max_of_normals_matches_tables() {
        // exact values: n=2 0.564, n=4 1.029, n=8 1.424
        assert!((expected_max_z(2) - 0.564).abs() < 0.05);
        assert!((expected_max_z(4) - 1.029).abs() < 0.05);
        assert!((expected_max_z(8) - 1.424).abs() < 0.05);
        assert_eq!(expected_max_z(1), 0.0);
    }

    #[test]
    fn touched_experts_follow_the_formula() {
        let r = Routing::with_skew(256, 8, 1, 0.0);
        assert!((r.expected_touched(1.0) - 8.0).abs() < 1e-9);
        let t64 = 256.0 * (1.0 - (1.0f64 - 8.0 / 256.0).powi(64));
        assert!((r.expected_touched(64.0) - t64).abs() < 1e-9);
        assert!(r.expected_touched(1e6) <= 256.0);
        // TP: every rank holds a slice of all experts, so the busiest rank touches them all
        assert!((r.max_touched_per_rank(64.0) - t64).abs() < 1e-9);
    }

    #[test]
    fn ep_ranks_are_imbalanced_at_small_batches() {
        let r = Routing::with_skew(256, 8, 8, 0.0);
        // one token, 8 experts on 8 ranks: the busiest rank gets about 2.4 (multinomial max)
        let busiest = r.max_touched_per_rank(1.0);
        assert!((2.0..3.0).contains(&busiest), "{busiest}");
        assert!(r.pair_imbalance(1.0) > 2.0);
        assert!(r.pair_imbalance(4096.0) < 1.1);
        assert!(r.max_pairs_per_rank(4096.0) >= 4096.0);
    }

    /// Skewed routing touches fewer experts than uniform at every batch, the same at one token
    /// (k experts) and when every expert is touched; more skew, fewer touched.
    #[test]
    fn skew_touches_fewer_experts() {
        let uniform = Routing::with_skew(384, 8, 1, 0.0);
        let skewed = Routing::with_skew(384, 8, 1, ROUTING_SKEW);
        let more = Routing::with_skew(384, 8, 1, 0.75);
        assert!((skewed.expected_touched(1.0) - 8.0).abs() < 1e-6);
        for t in [4.0, 16.0, 64.0, 256.0] {
            let (u, s, m) = (
                uniform.expected_touched(t),
                skewed.expected_touched(t),
                more.expected_touched(t),
            );
            assert!(m < s && s < u, "{t}: {m} {s} {u}");
        }
        assert!(skewed.expected_touched(1e6) > 383.9);
        assert!(skewed.max_touched_per_rank(64.0) <= 384.0);
    }

    /// Streams continuing one prompt touch fewer experts than independent requests from two
    /// tokens on (one token: its k experts either way); `of_streams(.., false)` is `new`.
    #[test]
    fn shared_prompt_streams_touch_fewer_experts() {
        let independent = Routing::of_streams(384, 8, 1, false);
        assert_eq!(independent, Routing::new(384, 8, 1));
        let shared = Routing::of_streams(384, 8, 1, true);
        assert!((shared.expected_touched(1.0) - 8.0).abs() < 1e-6);
        for t in [16.0, 32.0, 64.0, 128.0] {
            let (s, i) = (shared.expected_touched(t), independent.expected_touched(t));
            assert!(s < 0.97 * i, "{t}: {s} vs {i}");
        }
        // Kimi-K2 at 128 streams: about 75% of the 384 experts (the dev cells imply ≈ 250),
        // where independent routing touches 339
        let s128 = shared.expected_touched(128.0);
        assert!((275.0..300.0).contains(&s128), "{s128}");
    }

    /// The build that retired the static kernel (3 June 2026) keeps the micro kernel's share
    /// under 64 routed pairs, prices its new dynamic kernel no slower than the static kernel it
    /// retired and never slower than the tables: no cliff at the April builds' 640-pair cutover
    /// onto the March build's 128-row dynamic rate.
    #[test]
    fn b12x_micro_dynamic_build_prices_micro_then_the_tables() {
        let r = glm5_runner(B12xBuild::MicroDynamic);
        let (touched, bytes_per_expert, tables_s) = (8.0, 2.6e6, 100e-6);
        let micro = r.time_s(tables_s, 8.0, touched, bytes_per_expert);
        assert!(
            (micro - B12X_STATIC_RATIO_0_8_2 * tables_s).abs() < 1e-12,
            "{micro}"
        );
        // from 64 pairs: no slower than the static kernel it retired, up to 640 pairs ...
        let april = glm5_runner(B12xBuild::UnderfillTiles);
        for pairs in [64.0, 200.0, 600.0] {
            let (now, then) = (
                r.time_s(tables_s, pairs, 20.0, bytes_per_expert),
                april.time_s(tables_s, pairs, 20.0, bytes_per_expert),
            );
            assert_eq!(now, then.min(tables_s), "{pairs} pairs");
            assert!(now < tables_s, "{pairs} pairs: {now}");
        }
        // ... and above, where the April build ran the March-rate dynamic kernel, slower than
        // the tables, the tables' time
        let then = april.time_s(tables_s, 1024.0, 200.0, bytes_per_expert);
        assert!(then > tables_s, "{then}");
        assert_eq!(
            r.time_s(tables_s, 1024.0, 200.0, bytes_per_expert),
            tables_s
        );
    }

    /// The later builds' static share was published at one expert slice: a prediction at any
    /// other is flagged as extrapolated (the flag the interval widens for), the benchmark's own
    /// slice and the March build (pinned on dev serving runs) are not.
    #[test]
    fn b12x_static_share_off_its_benchmark_slice_is_flagged() {
        for build in [B12xBuild::Static640, B12xBuild::UnderfillTiles] {
            let note = glm5_runner(build)
                .benchmark_shape_note()
                .expect("GLM-5 TP8 is not the benchmark's slice");
            assert!(note.contains("6144 x 256"), "{note}");
            // worded as the extrapolated-MoE notes (`uncertainty::Flag::from_notes` reads it)
            assert!(note.starts_with("MoE efficiency extrapolated"), "{note}");
            let qwen35_tp4 = runner_at(B12X_BENCHMARK_SLICE, build);
            assert_eq!(qwen35_tp4.benchmark_shape_note(), None);
        }
        assert_eq!(
            glm5_runner(B12xBuild::March2026).benchmark_shape_note(),
            None
        );
        // from 3 June 2026 no shape has a public timing: flagged at every slice
        let june = runner_at(B12X_BENCHMARK_SLICE, B12xBuild::MicroDynamic);
        let note = june.benchmark_shape_note().expect("no public timing");
        assert!(note.starts_with("MoE efficiency extrapolated"), "{note}");
        assert_eq!(MoeRunner::Tables.benchmark_shape_note(), None);
    }

    fn glm5_runner(build: B12xBuild) -> MoeRunner {
        runner_at((6144.0, 256.0), build)
    }

    /// b12x's NVFP4 runner of `build` at the expert slice `(hidden, inter_per_gpu)`.
    fn runner_at((hidden, inter_per_gpu): (f64, f64), build: B12xBuild) -> MoeRunner {
        MoeRunner::B12x(kernels_at((hidden, inter_per_gpu), build))
    }

    /// b12x's NVFP4 kernels of `build` at the expert slice `(hidden, inter_per_gpu)`.
    fn kernels_at((hidden, inter_per_gpu): (f64, f64), build: B12xBuild) -> B12xKernels {
        B12xKernels {
            hidden,
            inter_per_gpu,
            dynamic_bytes_per_s: 0.5e12,
            cold_bytes_per_s: 1.5e12,
            build,
        }
    }

    /// GLM-5 NVFP4 at TP8 (hidden 6144, 2048 / 8 intermediate per GPU, one slice group), March
    /// build: under 128 pairs the tables' time less a fixed saving per touched expert, down to
    /// its floor; from 16 tokens each touched expert is one task of its weights plus a 128-row
    /// activation tile (128 × 6144 × 0.5625 B ≈ 442 KB) at the dynamic rate; more than 128 rows
    /// per expert make two tasks each; the tables' time stays a floor.
    #[test]
    fn b12x_static_and_dynamic_kernels() {
        let r = glm5_runner(B12xBuild::March2026);
        let (tile, w, rate) = (128.0 * 6144.0 * 0.5625, 2.5e6, 0.5e12);
        let saved = 1e-4 - 60.0 * B12X_STATIC_SAVING_PER_EXPERT_S;
        assert!((r.time_s(1e-4, 120.0, 60.0, w) - saved).abs() < 1e-12);
        let floor = 1e-5 * B12X_STATIC_FLOOR_RATIO;
        assert!((r.time_s(1e-5, 120.0, 60.0, w) - floor).abs() < 1e-15);
        let one = r.time_s(1e-6, 128.0, 100.0, w);
        assert!((one - 100.0 * (w + tile) / rate).abs() < 1e-9, "{one}");
        let two = r.time_s(1e-6, 256.0 * 200.0, 200.0, w);
        assert!((two - 400.0 * (w + tile) / rate).abs() < 1e-9, "{two}");
        assert_eq!(r.time_s(1.0, 128.0, 100.0, w), 1.0);
        assert_eq!(MoeRunner::Tables.time_s(1e-4, 1e4, 100.0, w), 1e-4);
    }

    /// From 0.7.1 the static kernel runs up to 640 routed pairs (b12x df84035c): 16–80 tokens
    /// at top-8 are priced as static, not as the March build's dynamic kernel, at 0.52 of the
    /// tables' time (b12x's benchmark against FlashInfer CUTLASS), from 0.8.2 at 0.44; never
    /// faster than the touched experts stream from DRAM, never slower than the tables.
    #[test]
    fn b12x_builds_move_the_dynamic_cutover() {
        let w = 2.5e6;
        let (march, april) = (
            glm5_runner(B12xBuild::March2026),
            glm5_runner(B12xBuild::Static640),
        );
        let t = 3e-4;
        assert!(march.time_s(t, 512.0, 150.0, w) > t);
        // 150 experts of 2.5 MB stream in 250 µs at 1.5 TB/s: above 0.52 × 300 µs
        let cold = 150.0 * w / 1.5e12;
        assert!((april.time_s(t, 512.0, 150.0, w) - cold).abs() < 1e-12);
        // 20 experts (one token's worth) stream in 33 µs: the benchmark's share binds
        let few = april.time_s(t, 20.0, 20.0, w);
        assert!((few - B12X_STATIC_RATIO_0_7 * t).abs() < 1e-12, "{few}");
        assert!((april.time_s(t, 640.0, 20.0, w) - few).abs() < 1e-12);
        assert!(april.time_s(t, 648.0, 150.0, w) > t);
        let newest = glm5_runner(B12xBuild::UnderfillTiles).time_s(t, 20.0, 20.0, w);
        assert!(
            (newest - B12X_STATIC_RATIO_0_8_2 * t).abs() < 1e-12,
            "{newest}"
        );
        // a layer the tables price faster than DRAM streaming (L2-warm rows) keeps the tables'
        assert_eq!(april.time_s(1e-4, 512.0, 150.0, w), 1e-4);
    }

    /// The 9–14 May W4A16 build at GLM-5's TP8 slice: the tables' time up to 128 routed pairs;
    /// above, 4 tasks a touched expert (256 / 64 columns), each a quarter of the expert's
    /// weights plus a 32 × 6144 BF16 tile (393 KB); two M tiles an expert from 33 rows on; the
    /// tables' time stays a floor.
    #[test]
    fn b12x_w4a16_dynamic_kernel_above_128_pairs() {
        let r = MoeRunner::B12xA16 {
            kernels: kernels_at((6144.0, 256.0), B12xBuild::NEWEST),
            tc_decode_max_pairs: 0.0,
            dynamic: true,
        };
        let (w, tile, rate) = (2.5e6, 32.0 * 6144.0 * 2.0, 0.5e12);
        assert_eq!(r.time_s(1e-4, 128.0, 100.0, w), 1e-4);
        let one = r.time_s(1e-6, 256.0, 150.0, w);
        assert!(
            (one - 150.0 * 4.0 * (w / 4.0 + tile) / rate).abs() < 1e-12,
            "{one}"
        );
        let two = r.time_s(1e-6, 40.0 * 100.0, 100.0, w);
        assert!(
            (two - 800.0 * (w / 4.0 + tile) / rate).abs() < 1e-12,
            "{two}"
        );
        assert_eq!(r.time_s(1.0, 256.0, 150.0, w), 1.0);
    }

    /// Under `B12X_W4A16_TC_DECODE=1` a call of up to 8 tokens (GLM-5's 64 routed pairs at TP8)
    /// is priced as the W4A4 kernels of the build it ships with (the same 4-bit weight bytes
    /// streamed), never as the tables; without it, and above 8 tokens up to 128 pairs, the
    /// tables; above, a build without a modelled dynamic kernel takes the tables.
    #[test]
    fn b12x_w4a16_tensor_core_decode_is_the_w4a4_kernels() {
        let kernels = kernels_at((6144.0, 256.0), B12xBuild::MicroDynamic);
        let a4 = MoeRunner::B12x(kernels);
        let a16 = |tc_decode: bool, dynamic| MoeRunner::B12xA16 {
            kernels,
            tc_decode_max_pairs: if tc_decode { 64.0 } else { 0.0 },
            dynamic,
        };
        let (t, w) = (80e-6, 2.65e6);
        for dynamic in [true, false] {
            for (pairs, touched) in [(8.0, 8.0), (32.0, 30.0), (64.0, 50.0)] {
                let got = a16(true, dynamic).time_s(t, pairs, touched, w);
                assert_eq!(got, a4.time_s(t, pairs, touched, w));
                assert!(got <= t, "{pairs} pairs: {got} vs the tables' {t}");
                assert_eq!(a16(false, dynamic).time_s(t, pairs, touched, w), t);
            }
            // past 8 tokens, up to 128 pairs: the tables
            assert_eq!(a16(true, dynamic).time_s(t, 72.0, 55.0, w), t);
            // one token's 8 pairs on the micro kernel: the tables' intercept is not paid
            assert!(a16(true, dynamic).time_s(t, 8.0, 8.0, w) < 0.5 * t);
            let above = a16(true, dynamic).time_s(1e-6, 256.0, 150.0, w);
            assert_eq!(above == 1e-6, !dynamic);
        }
    }

    /// b12x on NVFP4 experts is its own runner, of the build the options name (the newest where
    /// none); under `B12X_MOE_FORCE_A16=1` (its W4A16 kernels) the tables unless the build's
    /// dynamic kernel or its tensor-core decode kernel is modelled; for other backends the
    /// tables price the MoE.
    #[test]
    fn b12x_runner_follows_the_options() {
        let glm = models::ModelSpec::preset("glm-5-nvfp4").unwrap();
        let tp8 = models::Layout::tp(8);
        let mut o = crate::options::ServerOptions {
            moe_runner_backend: Some("b12x".into()),
            ..Default::default()
        };
        let of = |o: &crate::options::ServerOptions| MoeRunner::of(o, "nvfp4", &glm, &tp8, 1e12);
        assert!(matches!(
            of(&o),
            MoeRunner::B12x(B12xKernels {
                build: B12xBuild::NEWEST,
                ..
            })
        ));
        o.b12x_build = Some(B12xBuild::March2026);
        assert!(matches!(
            of(&o),
            MoeRunner::B12x(B12xKernels {
                build: B12xBuild::March2026,
                ..
            })
        ));
        o.b12x_moe_a16 = true;
        assert_eq!(of(&o), MoeRunner::Tables);
        o.b12x_a16_build = Some(B12xA16Build::Other);
        assert_eq!(of(&o), MoeRunner::Tables);
        let cold = super::super::moe_bound::line_of("nvfp4").map_or(1.0, |l| l.eta) * 1e12;
        let a16 = |tc_decode_max_pairs, dynamic| MoeRunner::B12xA16 {
            kernels: B12xKernels {
                hidden: 6144.0,
                inter_per_gpu: 256.0,
                dynamic_bytes_per_s: B12X_DYNAMIC_PEAK_FRACTION * 1e12,
                cold_bytes_per_s: cold,
                build: B12xBuild::March2026,
            },
            tc_decode_max_pairs,
            dynamic,
        };
        // GLM-5's top-8 at TP8: 8 tokens are 64 routed pairs on every GPU
        o.b12x_w4a16_tc_decode = true;
        assert_eq!(of(&o), a16(64.0, false));
        o.b12x_w4a16_tc_decode = false;
        o.b12x_a16_build = Some(B12xA16Build::Fused128);
        assert_eq!(of(&o), a16(0.0, true));
        o.b12x_moe_a16 = false;
        o.moe_runner_backend = Some("cutlass".into());
        assert_eq!(of(&o), MoeRunner::Tables);
    }
}
