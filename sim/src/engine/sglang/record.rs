//! SGLang's part of a record's flag text ([`crate::engine::record`]): the rows of its flag table
//! ([`super::args::flags`], the same rows its launch-line reader takes), the community builds'
//! `--enable-pcie-oneshot-allreduce`, and the InferenceX SGLang configs a record names by name.

use super::args::flags as f;
use crate::engine::record::{fraction, ints_after};
use crate::engine::{Engine, LaunchKnobs, PcieAllReduce};
use models::KvDtype;

/// Launch lines of the InferenceX SGLang configs the records name, from
/// SemiAnalysisAI/InferenceX @ 1fc5d73c `benchmarks/dsr1_fp4_b200.sh` and
/// `benchmarks/dsr1_fp8_h200.sh` (1k/1k branch). bench_serving there runs
/// `--num-prompts $((CONC * 10))`.
pub const INFERENCEX_SGLANG: [(&str, &str); 2] = [
    (
        "dsr1-fp4-b200-sglang",
        "--cuda-graph-max-bs 256 --max-running-requests 256 --mem-fraction-static 0.85 \
         --kv-cache-dtype fp8_e4m3 --chunked-prefill-size 16384 --disable-radix-cache \
         --attention-backend trtllm_mla --moe-runner-backend flashinfer_trtllm --stream-interval 10",
    ),
    (
        "dsr1-fp8-h200-sglang",
        "--disable-radix-cache --max-running-requests 512 --cuda-graph-max-bs 512 \
         --chunked-prefill-size 32768 --max-prefill-tokens 32768 --mem-fraction-static 0.82 \
         --attention-backend flashinfer --stream-interval 10",
    ),
];

/// `--scheduler-recv-interval` of the InferenceX SGLang configs that set it, by the run's
/// concurrency: `(config, below 16 streams, from 16)`. `benchmarks/dsr1_fp4_b200.sh` @1fc5d73c:
/// "recv every ~10 requests; if CONC ≥ 16, relax to ~30" (`SCHEDULER_RECV_INTERVAL`, passed to
/// the launch; in SGLang it counts decode steps, not requests: `scheduler_recv_skipper.py`).
pub const INFERENCEX_RECV_INTERVAL: [(&str, u32, u32); 1] = [("dsr1-fp4-b200-sglang", 10, 30)];

/// Prompts per concurrency InferenceX's bench_serving call sends.
pub const INFERENCEX_PROMPTS_PER_CONCURRENCY: u32 = 10;

/// The InferenceX config a flags text names, if any.
pub fn inferencex_config(flags: &str) -> Option<&'static str> {
    let f = flags.to_ascii_lowercase();
    INFERENCEX_SGLANG
        .iter()
        .find(|(name, _)| f.contains(name))
        .map(|(name, _)| *name)
}

/// SGLang's assumed draft for a speculative record of `model` whose flags are silent: the
/// checkpoint's MTP layer with the model card's flags for GLM-5 and DeepSeek, a separate
/// EAGLE-3 head where the checkpoint has no MTP layers, else SGLang's (3, 1, 4) for MTP.
pub(super) fn assumed_draft(model: &str) -> (crate::options::SpeculativeOptions, &'static str) {
    use crate::engine::draft::recipe_draft;
    if model.starts_with("glm-5") || model.starts_with("deepseek") {
        (
            recipe_draft("EAGLE", None),
            "the checkpoint's MTP layer with the model card's SGLang flags (--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4)",
        )
    } else if models::ModelSpec::preset(model).is_ok_and(|m| m.num_mtp_layers == 0) {
        // no MTP layers in the checkpoint: SGLang needs a separate draft (an EAGLE head)
        (
            recipe_draft("EAGLE3", Some("EAGLE-3 draft (one decoder layer)")),
            "a separate EAGLE-3 draft with SGLang's (3, 1, 4): the checkpoint has no MTP layers",
        )
    } else {
        (
            recipe_draft("EAGLE", None),
            "SGLang's (3, 1, 4) for MTP checkpoints",
        )
    }
}

/// The launch line of the InferenceX config `flags` names, and the assumption that says so.
pub(super) fn named_launch(flags: &str) -> Option<(&'static str, String)> {
    let cfg = inferencex_config(flags)?;
    let (_, line) = INFERENCEX_SGLANG.iter().find(|(n, _)| *n == cfg)?;
    Some((
        line,
        format!("launch flags of InferenceX `{cfg}` (@1fc5d73c): {line}"),
    ))
}

/// The read interval the InferenceX config `flags` names sets at `concurrency` streams, and
/// the assumption that says so.
pub(super) fn named_recv_interval(flags: &str, concurrency: u32) -> Option<(u32, String)> {
    let cfg = inferencex_config(flags)?;
    let &(_, below, from_16) = INFERENCEX_RECV_INTERVAL.iter().find(|(n, ..)| *n == cfg)?;
    let n = if concurrency >= 16 { from_16 } else { below };
    Some((
        n,
        format!(
            "InferenceX `{cfg}` (@1fc5d73c) launches with --scheduler-recv-interval {n} at {concurrency} streams ({below} below 16, {from_16} from 16): new requests are read every {n} decode steps"
        ),
    ))
}

/// Whether a record's `key` (an option of SGLang's table, or a `dest` as [`read_word`] reads
/// it) stating `value` is a value SGLang's launch takes
/// ([`super::args::Spec::judge_stated`], by [`super::args::check_value`]); `None` where the key
/// is not in SGLang's table.
pub(super) fn check_value(key: &str, value: &str) -> Option<Result<(), String>> {
    let spec = super::args::SPECS
        .iter()
        .find(|s| s.flags.contains(&key) || (!key.starts_with('-') && s.dest == key))?;
    let layout = [
        f::TP_SIZE.dest,
        f::PP_SIZE.dest,
        f::DP_SIZE.dest,
        f::EP_SIZE.dest,
    ];
    Some(spec.judge_stated(&layout, key, value, |spelled| {
        super::args::check_value(spec, value, spelled).map_err(|e| e.to_string())
    }))
}

/// Reads `key` (an option of SGLang's table, or its `dest` as a Python-style word) with its
/// argument into `k`; `true` when the key is SGLang's (acted on or not).
pub(super) fn read_word(key: &str, arg: Option<&str>, text: &str, k: &mut LaunchKnobs) -> bool {
    if key.starts_with("--enable-pcie-oneshot-allreduce") {
        k.pcie_all_reduce = Some(PcieAllReduce {
            engine: Engine::Sglang,
            max_bytes: None,
        });
        return true;
    }
    let dest = if key.starts_with('-') {
        match super::args::SPECS.iter().find(|s| s.flags.contains(&key)) {
            Some(s) => s.dest,
            None => return false,
        }
    } else {
        key
    };
    let number = || arg.and_then(|a| a.parse().ok());
    match dest {
        super::args::SGLANG_ENABLE_SPEC_V2 => {
            k.speculative_overlap = arg.is_some_and(super::args::env_true)
        }
        d if d == f::KV_CACHE_DTYPE.dest => {
            if let Some(d) = arg.and_then(KvDtype::from_name) {
                k.kv_cache_dtype = Some(d);
            }
        }
        d if d == f::MEM_FRACTION_STATIC.dest => {
            k.memory_fraction = arg.and_then(fraction).map(|f| (Engine::Sglang, f))
        }
        d if d == f::CONTEXT_LENGTH.dest => k.context_length = number(),
        d if d == f::MOE_RUNNER_BACKEND.dest => k.moe_runner_backend = arg.map(str::to_string),
        d if d == f::MOE_A2A_BACKEND.dest => {
            k.moe_a2a_backend = arg.filter(|b| *b != "none").map(str::to_string)
        }
        d if d == f::ATTENTION_BACKEND.dest => k.attention_backend = arg.map(str::to_string),
        d if d == f::NSA_PREFILL_BACKEND.dest => k.nsa.prefill = arg.map(str::to_string),
        d if d == f::NSA_DECODE_BACKEND.dest => k.nsa.decode = arg.map(str::to_string),
        d if d == f::JSON_MODEL_OVERRIDE_ARGS.dest => {
            if let Some(Ok(o)) = crate::engine::record::model_overrides_after(key, text) {
                k.model_overrides = o;
            }
        }
        // a --cuda-graph-bs list's largest wins over it wherever either stands (as SGLang's does)
        d if d == f::CUDA_GRAPH_MAX_BS.dest
            && ints_after(f::CUDA_GRAPH_BS.canonical(), None, text).is_none() =>
        {
            k.cuda_graph_max_bs = number()
        }
        d if d == f::CUDA_GRAPH_BS.dest => {
            k.cuda_graph_max_bs = ints_after(key, arg, text)
                .as_deref()
                .and_then(super::args::int_list)
                .and_then(|l| l.into_iter().max())
        }
        d if d == f::PAGE_SIZE.dest => k.kv_page_tokens = number(),
        d if d == f::MAX_RUNNING_REQUESTS.dest => k.max_running_requests = number(),
        d if d == f::CHUNKED_PREFILL_SIZE.dest => k.chunked_prefill_size = number(),
        d if d == f::MAX_PREFILL_TOKENS.dest => k.max_prefill_tokens = number(),
        d if d == f::DISABLE_RADIX_CACHE.dest => k.disable_radix_cache = true,
        d if d == f::STREAM_INTERVAL.dest => k.stream_interval = number(),
        d if d == f::SCHEDULER_RECV_INTERVAL.dest => k.scheduler_recv_interval = number(),
        d if d == f::DISABLE_CUSTOM_ALL_REDUCE.dest => k.disable_custom_all_reduce = true,
        d if d == f::DISABLE_CUDA_GRAPH.dest => k.disable_cuda_graph = true,
        // a Python-style word that is no dest of SGLang's: not SGLang's
        _ if !key.starts_with('-') => return false,
        _ => {}
    }
    true
}
