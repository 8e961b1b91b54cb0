//! vLLM's part of a record's flag text ([`crate::engine::record`]): the rows of its flag table
//! ([`super::args::table`], the same rows its launch-line reader takes, `_` for `-` as vLLM's
//! argparse reads them), the rtx6kpro run scripts' own words (`GPU_MEM=0.94`) and the
//! environment its community builds read (`VLLM_ENABLE_PCIE_ALLREDUCE=1 (cpp, 56KB cutoff)`).

use super::args::{self, table as t};
use crate::engine::record::{env_value, fraction, ints_after};
use crate::engine::sglang::args::{HumanInt, human_int};
use crate::engine::{Engine, LaunchKnobs, PcieAllReduce};
use models::KvDtype;

/// The rtx6kpro wiki's own spellings of launch settings (`GPU_MEM=0.94`), by the `dest` of the
/// table row they stand for.
const WIKI_WORDS: &[(&str, &str)] = &[
    ("KV_CACHE_DTYPE", t::KV_CACHE_DTYPE.dest),
    ("GPU_MEM", t::GPU_MEMORY_UTILIZATION.dest),
    ("MAX_MODEL_LEN", t::MAX_MODEL_LEN.dest),
    // the vLLM GLM-5.1 / Kimi pages' run scripts: `MOE_BACKEND=b12x` (vLLM's `--moe-backend`)
    ("MOE_BACKEND", MOE_BACKEND_WORD),
    // and `ATTENTION_BACKEND=B12X_MLA_SPARSE` (vLLM's `--attention-backend`)
    ("ATTENTION_BACKEND", t::ATTENTION_BACKEND.dest),
    // the run scripts' variables passed to the flag of the same name (local-inference-lab/vllm
    // `scripts/run-kimi26-vllm` @3ff722e55: `--gpu-memory-utilization "${GPU_MEMORY_UTILIZATION}"`
    // and so on); boolean flags are left out, whose variables a script may set to 0
    ("GPU_MEMORY_UTILIZATION", t::GPU_MEMORY_UTILIZATION.dest),
    ("MAX_NUM_BATCHED_TOKENS", t::MAX_NUM_BATCHED_TOKENS.dest),
    ("MAX_NUM_SEQS", t::MAX_NUM_SEQS.dest),
    (
        "MAX_CUDAGRAPH_CAPTURE_SIZE",
        t::MAX_CUDAGRAPH_CAPTURE_SIZE.dest,
    ),
];

/// The rtx6kpro community's vLLM run scripts and the flags they pass where the caller sets no
/// variable (local-inference-lab/vllm @3ff722e55, 2026-05-14, `scripts/run-kimi26-vllm` lines
/// 24–25 and 36–43, `scripts/run-glm51-vllm` lines 35–42; the same defaults through @4ee263c70,
/// 2026-05-21): a record that launches through one and names only some variables ran the rest at
/// these. The record's own words come after them and win.
const RUN_SCRIPTS: &[(&str, &str)] = &[
    (
        "run-kimi26-vllm",
        "--gpu-memory-utilization 0.94 --max-model-len 262144 --max-num-batched-tokens 8192 \
         --max-num-seqs 128 --enable-prefix-caching --attention-backend TRITON_MLA \
         --kv-cache-dtype fp8 VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ALLREDUCE_BACKEND=cpp",
    ),
    (
        "run-glm51-vllm",
        "--gpu-memory-utilization 0.865 --max-model-len 202752 --max-num-batched-tokens 8192 \
         --max-num-seqs 64 --max-cudagraph-capture-size 256 --enable-prefix-caching \
         --moe-backend b12x --attention-backend B12X_MLA_SPARSE --kv-cache-dtype fp8",
    ),
];

/// The defaults of the run script a record's flags name ([`RUN_SCRIPTS`]), and the assumption
/// that says so.
pub(super) fn named_launch(flags: &str) -> Option<(&'static str, String)> {
    let (name, line) = RUN_SCRIPTS.iter().find(|(name, _)| {
        flags
            .split(|c: char| c.is_whitespace() || c == ':' || c == '`' || c == '/')
            .any(|w| w == *name)
    })?;
    let shown = line.split_whitespace().collect::<Vec<_>>().join(" ");
    Some((
        line,
        format!(
            "launched through the rtx6kpro run script `{name}`: the flags it passes where the record sets no variable (local-inference-lab/vllm @3ff722e55 scripts/{name}): {shown}"
        ),
    ))
}

/// `--max-model-len 128k` / `auto`, `--max-num-batched-tokens 8K`, `--kv-cache-memory-bytes
/// 20G` as vLLM reads them ([`human_int`]): the integer, unset where vLLM would not read one or
/// it does not fit `T` (as a plain number that does not parse is), and whether it is `auto` /
/// `-1`.
fn human<T: TryFrom<i64>>(arg: Option<&str>, auto: bool) -> (Option<T>, bool) {
    match arg.map(|a| human_int(a, auto)) {
        Some(Ok(HumanInt::Value(n))) => (T::try_from(n).ok(), false),
        Some(Ok(HumanInt::Auto)) => (None, true),
        _ => (None, false),
    }
}

/// What the run scripts' `MOE_BACKEND` word sets: the MoE runner, as vLLM's `--moe-backend`
/// (and SGLang's `--moe-runner-backend`) does.
const MOE_BACKEND_WORD: &str = "moe_runner_backend";

/// Reads `key` (an option of vLLM's table, a run-script word, a `VLLM_*` variable, or a row's
/// `dest` as a Python-style word) with its argument into `k`; `true` when the key is vLLM's.
pub(super) fn read_word(key: &str, arg: Option<&str>, text: &str, k: &mut LaunchKnobs) -> bool {
    let dest = if key.starts_with('-') {
        match t::spec_of(key) {
            Some(s) => s.dest,
            None => return false,
        }
    } else {
        WIKI_WORDS
            .iter()
            .find(|(w, _)| *w == key)
            .map_or(key, |(_, d)| *d)
    };
    let number = || arg.and_then(|a| a.parse().ok());
    match dest {
        d if d == t::KV_CACHE_DTYPE.dest => {
            if let Some(d) = arg.and_then(KvDtype::from_name) {
                k.kv_cache_dtype = Some(d);
            }
        }
        d if d == t::GPU_MEMORY_UTILIZATION.dest => {
            k.memory_fraction = arg.and_then(fraction).map(|f| (Engine::Vllm, f))
        }
        d if d == t::MAX_MODEL_LEN.dest => {
            (k.context_length, k.context_length_auto_fit) = human(arg, true)
        }
        // the launch line reads `--moe-backend` into the same knob (it was left unread here)
        d if d == MOE_BACKEND_WORD || d == t::MOE_BACKEND.dest => {
            k.moe_runner_backend = arg.map(str::to_string)
        }
        // the b12x fork's B12X_MLA_SPARSE pads heads (`virtual_tp`); kept as stated
        d if d == t::ATTENTION_BACKEND.dest => k.attention_backend = arg.map(str::to_string),
        d if d == t::MAX_NUM_SEQS.dest => k.max_running_requests = number(),
        d if d == t::KV_CACHE_MEMORY_BYTES.dest => k.kv_cache_memory_bytes = human(arg, false).0,
        d if d == t::MAX_NUM_BATCHED_TOKENS.dest => k.chunked_prefill_size = human(arg, false).0,
        // vLLM's boolean flag and its argparse negation, the rows a launch line reads too
        d if d == t::ENABLE_PREFIX_CACHING.dest => k.prefix_caching = Some(true),
        d if d == t::NO_ENABLE_PREFIX_CACHING.dest => k.prefix_caching = Some(false),
        d if d == t::ENABLE_CHUNKED_PREFILL.dest => k.chunked_prefill = Some(true),
        d if d == t::NO_ENABLE_CHUNKED_PREFILL.dest => k.chunked_prefill = Some(false),
        d if d == t::DISABLE_CUSTOM_ALL_REDUCE.dest => k.disable_custom_all_reduce = true,
        d if d == t::ENFORCE_EAGER.dest => k.disable_cuda_graph = true,
        d if d == t::BLOCK_SIZE.dest => k.kv_page_tokens = number(),
        d if d == t::MAX_CUDAGRAPH_CAPTURE_SIZE.dest => k.cuda_graph_max_bs = number(),
        d if d == t::MAMBA_SSM_CACHE_DTYPE.dest => {
            k.linear_state_dtype_bytes = arg.and_then(args::state_dtype_bytes)
        }
        // an unreadable object leaves none: the record is refused for it ([`unreadable_words`])
        d if d == t::HF_OVERRIDES.dest => {
            if let Some(Ok(o)) = crate::engine::record::model_overrides_after(key, text) {
                k.model_overrides = o;
            }
        }
        d if d == t::QUANTIZATION_CONFIG.dest || d == t::QUANTIZATION.dest => {
            read_online_quant(d, key, arg, text, k)
        }
        d if d == t::CUDAGRAPH_CAPTURE_SIZES.dest => {
            k.cuda_graph_max_bs = ints_after(key, arg, text)
                .as_deref()
                .and_then(crate::engine::sglang::args::int_list)
                .and_then(|l| l.into_iter().max())
        }
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS" => {
            k.estimate_cudagraph_memory = Some(arg == Some("1"))
        }
        // b12x's W4A16 MoE (BF16 activations) in place of its NVFP4 kernels
        // (`default_moe_quant_mode` in b12x `integration/tp_moe.py`), or the fork's own switch
        // for it: either on runs W4A16, whichever the text names first
        crate::b12x_build::B12X_MOE_FORCE_A16 | args::VLLM_B12X_FORCE_MOE_A16 => {
            k.b12x_moe_a16 = args::b12x_moe_a16(|name| env_value(text, name))
        }
        args::VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE => {
            // an unreadable size leaves none: the record is refused for it ([`unreadable_words`])
            k.fused_add_rms_norm_max_bytes = args::fused_add_rms_norm_max_bytes(
                |name| env_value(text, name),
                args::fusion_pass_in(text),
            )
            .ok()
            .flatten()
        }
        crate::b12x_build::B12X_W4A16_TC_DECODE => {
            k.b12x_w4a16_tc_decode = arg.is_some_and(crate::b12x_build::env_flag_on)
        }
        // read with the build's date by the record mapping (`records::mapping::express`)
        crate::b12x_build::VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE => {}
        "VLLM_ENABLE_PCIE_ALLREDUCE" if arg == Some("1") => {
            k.pcie_all_reduce = Some(PcieAllReduce {
                engine: Engine::Vllm,
                // the notes' own `NNKB cutoff` first, else what the environment words give
                // the fork (a launch line reads the same), never SGLang's automatic cutoff
                // an unreadable stated size leaves none: the record is refused for it
                // ([`unreadable_words`])
                max_bytes: cutoff_bytes(text)
                    .or_else(|| args::pcie_cutoff_bytes(|name| env_value(text, name)).ok()),
            })
        }
        _ => return key.starts_with('-'),
    }
    true
}

/// Whether a record's `key` (an option of vLLM's table, or a run-script word or `dest` as
/// [`read_word`] reads them) stating `value` is a value vLLM's launch takes
/// ([`crate::engine::sglang::args::Spec::judge_stated`], by [`args::check`]); `None` where the
/// key is not in vLLM's table.
pub(super) fn check_value(key: &str, value: &str) -> Option<Result<(), String>> {
    let spec = if key.starts_with('-') {
        t::spec_of(key)?
    } else {
        let dest = WIKI_WORDS
            .iter()
            .find(|(w, _)| *w == key)
            .map_or(key, |(_, d)| *d);
        t::SPECS.iter().find(|s| s.dest == dest)?
    };
    let layout = [
        t::TENSOR_PARALLEL_SIZE.dest,
        t::PIPELINE_PARALLEL_SIZE.dest,
        t::DATA_PARALLEL_SIZE.dest,
        t::DECODE_CONTEXT_PARALLEL_SIZE.dest,
    ];
    Some(spec.judge_stated(&layout, key, value, |spelled| {
        args::check(spec, value, spelled).map_err(|e| e.to_string())
    }))
}

/// Why a record's vLLM words cannot be read for sure, if they cannot: an `--hf-overrides` or
/// `--quantization-config` object that does not parse (or, for the latter, asks what shardwise
/// does not price), a `--quantization` shorthand it does not price, or a stated size the fork would refuse ([`args::pcie_cutoff_bytes`]).
pub fn unreadable_words(text: &str) -> Option<String> {
    let overrides = t::HF_OVERRIDES.canonical();
    if let Some(Err(why)) = crate::engine::record::model_overrides_after(overrides, text) {
        return Some(why);
    }
    let online = t::QUANTIZATION_CONFIG.canonical();
    if let Some(Err(why)) = crate::engine::record::online_quant_after(online, text, None) {
        return Some(why);
    }
    // a shorthand the launch line refuses is refused here too, never read as no conversion
    let method = t::QUANTIZATION.canonical();
    if let Err(why) = args::online_shorthand(flag_value(text, method)) {
        return Some(format!("{method}: {why}"));
    }
    if env_value(text, "VLLM_ENABLE_PCIE_ALLREDUCE") != Some("1") {
        return None;
    }
    let fused = args::fused_add_rms_norm_max_bytes(
        |name| env_value(text, name),
        args::fusion_pass_in(text),
    );
    if cutoff_bytes(text).is_some() {
        return fused.err();
    }
    args::pcie_cutoff_bytes(|name| env_value(text, name))
        .err()
        .map(|(_, why)| why)
        .or(fused.err())
}

/// vLLM's assumed draft for a speculative record on `model` whose flags are silent: a checkpoint
/// with MTP layers runs its own (`--speculative-config '{"method": "mtp", ...}'`, the GLM-5.x
/// and DeepSeek recipes; an EAGLE-3 head would be a separate draft model the record names), any
/// other the common EAGLE-3 recipe; 3 speculative tokens either way.
pub(super) fn assumed_draft(model: &str) -> (crate::options::SpeculativeOptions, &'static str) {
    let mtp = models::ModelSpec::preset(model).is_ok_and(|m| m.num_mtp_layers > 0);
    (
        default_speculation(mtp),
        if mtp {
            "the checkpoint's MTP layer, vLLM's method \"mtp\" with 3 speculative tokens (a chain: 3 drafts, 4 verified), the recipe for MTP checkpoints"
        } else {
            "vLLM EAGLE-3 with 3 speculative tokens (a chain: 3 drafts, 4 verified), the common recipe: the checkpoint has no MTP layers"
        },
    )
}

/// vLLM's recipe draft: the checkpoint's MTP layer where it has `mtp_layers`, else a separate
/// EAGLE-3 head; 3 speculative tokens either way.
pub(super) fn default_speculation(mtp_layers: bool) -> crate::options::SpeculativeOptions {
    use crate::engine::draft::recipe_draft;
    if mtp_layers {
        recipe_draft("MTP", None)
    } else {
        recipe_draft("EAGLE3", Some("EAGLE-3 draft (one decoder layer)"))
    }
}

/// A `NNKB cutoff` in the text (the rtx6kpro vLLM notes), bytes.
fn cutoff_bytes(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let at = lower.find("kb cutoff")?;
    let digits: String = lower[..at]
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse::<u64>().ok().map(|kb| kb * 1024)
}

/// The online quantization a record's `--quantization-config` (over its `--quantization`
/// shorthand's specs) or, where none set them, its shorthand gives; an unreadable or unpriceable
/// object leaves none: the record is refused for it ([`unreadable_words`]).
fn read_online_quant(dest: &str, key: &str, arg: Option<&str>, text: &str, k: &mut LaunchKnobs) {
    if dest == t::QUANTIZATION_CONFIG.dest {
        let base = args::online_shorthand(flag_value(text, t::QUANTIZATION.canonical()))
            .ok()
            .flatten();
        if let Some(Ok(q)) = crate::engine::record::online_quant_after(key, text, base) {
            k.online_quant = q;
        }
    } else if k.online_quant.is_none() {
        k.online_quant = args::online_shorthand(arg).ok().flatten();
    }
}

/// The word a record's text gives `flag` (`--quantization modelopt_fp4`, `--quantization=fp8`),
/// quotes stripped: the first occurrence of the flag followed by a space or `=`, never a longer
/// flag it begins (`--quantization-config`).
fn flag_value<'a>(text: &'a str, flag: &str) -> Option<&'a str> {
    text.match_indices(flag).find_map(|(i, _)| {
        let rest = &text[i + flag.len()..];
        let rest = rest.strip_prefix('=').or_else(|| rest.strip_prefix(' '))?;
        rest.split_whitespace()
            .next()
            .map(|w| w.trim_matches(['\'', '"']))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 33: a record's `--moe-backend b12x` was left unread while a launch line naming it
    /// ran the b12x MoE runner; both now read the same row into the same knob.
    #[test]
    fn moe_backend_reads_alike_from_a_launch_line_and_a_record() {
        let text = "vllm serve lukealonso/GLM-5.1-NVFP4 -tp 8 --moe-backend b12x";
        let l = super::super::args::VllmLine::parse(text).unwrap().unwrap();
        let from_record =
            crate::engine::record::launch_knobs(Engine::Vllm, text, "", &mut Vec::new());
        assert_eq!(
            l.knobs().unwrap().moe_runner_backend.as_deref(),
            Some("b12x")
        );
        assert_eq!(from_record.moe_runner_backend.as_deref(), Some("b12x"));
    }

    /// A record reads the fork's fused all-reduce + add + RMSNorm cap as a launch line does:
    /// only with the `b12x` PCIe backend and the fusion pass on; an unreadable cap refuses the
    /// record ([`unreadable_words`]).
    #[test]
    fn the_fused_all_reduce_cap_reads_alike_from_a_line_and_a_record() {
        let serve = "vllm serve lukealonso/GLM-5.2-NVFP4 -tp 8 --moe-backend b12x";
        let pcie = "VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ALLREDUCE_BACKEND=b12x";
        for (words, want) in [
            (
                format!(
                    "{pcie} VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE=84KB {serve} -cc.pass_config.fuse_allreduce_rms=True"
                ),
                Some(84 * 1024),
            ),
            (
                format!("{pcie} VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE=84KB {serve}"),
                None,
            ),
            (
                format!(
                    "VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE=84KB {serve} -cc.pass_config.fuse_allreduce_rms=True"
                ),
                None,
            ),
        ] {
            let line = super::super::args::VllmLine::parse(&words)
                .unwrap()
                .unwrap();
            let record =
                crate::engine::record::launch_knobs(Engine::Vllm, &words, "", &mut Vec::new());
            assert_eq!(
                line.knobs().unwrap().fused_add_rms_norm_max_bytes,
                want,
                "{words}"
            );
            assert_eq!(record.fused_add_rms_norm_max_bytes, want, "{words}");
            assert_eq!(unreadable_words(&words), None, "{words}");
        }
        let bad = format!(
            "{pcie} VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE=84QB {serve} -cc.pass_config.fuse_allreduce_rms=True"
        );
        assert!(unreadable_words(&bad).is_some_and(|w| w.contains("84QB")));
    }

    /// The fork's `VLLM_B12X_FORCE_MOE_A16=1` runs the b12x MoE as W4A16 even beside b12x's own
    /// `B12X_MOE_FORCE_A16=0` (the rtx6kpro GLM-5.1 composes set both so), in either order; and
    /// the `b12x` backend's `VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE` is its one-shot cutoff, which
    /// the `cpp` backend ignores; `B12X_W4A16_TC_DECODE=1` runs its W4A16 tensor-core decode
    /// kernel. A record and a launch line read them alike.
    #[test]
    fn the_forks_a16_switch_and_one_shot_size_read_alike_from_a_line_and_a_record() {
        let serve = "vllm serve lukealonso/GLM-5.1-NVFP4 -tp 8 --moe-backend b12x";
        for (env, a16, cutoff) in [
            ("VLLM_B12X_FORCE_MOE_A16=1 B12X_MOE_FORCE_A16=0", true, None),
            ("B12X_MOE_FORCE_A16=0 VLLM_B12X_FORCE_MOE_A16=1", true, None),
            ("VLLM_B12X_FORCE_MOE_A16=0", false, None),
            ("B12X_MOE_FORCE_A16=1 B12X_W4A16_TC_DECODE=1", true, None),
            ("B12X_MOE_FORCE_A16=1 B12X_W4A16_TC_DECODE=0", true, None),
            (
                "VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ALLREDUCE_BACKEND=b12x VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE=64KB",
                false,
                Some(64 * 1024),
            ),
            (
                "VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE=96K VLLM_PCIE_ALLREDUCE_BACKEND=b12x VLLM_ENABLE_PCIE_ALLREDUCE=1",
                false,
                Some(96 * 1024),
            ),
        ] {
            let text = format!("{env} {serve}");
            let line = super::super::args::VllmLine::parse(&text).unwrap().unwrap();
            let from_line = line.knobs().unwrap();
            let from_record =
                crate::engine::record::launch_knobs(Engine::Vllm, &text, "", &mut Vec::new());
            // b12x's W4A16 tensor-core decode kernel, read alike from a launch and a record
            let tc_decode = env.contains("B12X_W4A16_TC_DECODE=1");
            for k in [&from_line, &from_record] {
                assert_eq!(k.b12x_moe_a16, a16, "{text}");
                assert_eq!(k.b12x_w4a16_tc_decode, tc_decode, "{text}");
                if let Some(bytes) = cutoff {
                    assert_eq!(k.pcie_all_reduce.unwrap().max_bytes, Some(bytes), "{text}");
                }
            }
        }
        // the cpp backend (stated, or the default) has no one-shot pool: the size is not its cutoff
        for env in [
            "VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE=64KB",
            "VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ALLREDUCE_BACKEND=cpp VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE=64KB",
        ] {
            let text = format!("{env} {serve}");
            let k = crate::engine::record::launch_knobs(Engine::Vllm, &text, "", &mut Vec::new());
            assert_ne!(
                k.pcie_all_reduce.unwrap().max_bytes,
                Some(64 * 1024),
                "{text}"
            );
        }
    }

    /// A b12x one-shot size the fork cannot read is refused, never read as the 64 KiB default:
    /// the launch line with an error naming the variable, the record with why; under the cpp
    /// backend (which ignores the size) nothing is refused.
    #[test]
    fn an_unreadable_one_shot_size_is_refused_in_a_line_and_a_record() {
        let serve = "vllm serve lukealonso/GLM-5.1-NVFP4 -tp 8";
        let env = "VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ALLREDUCE_BACKEND=b12x \
                   VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE=sixtyfour";
        let text = format!("{env} {serve}");
        let line = super::super::args::VllmLine::parse(&text).unwrap().unwrap();
        let e = line.knobs().unwrap_err().to_string();
        assert!(
            e.contains("VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE=sixtyfour is no size"),
            "{e}"
        );
        let why = unreadable_words(&text).unwrap();
        assert!(why.contains("give digits with K, KB, M or MB"), "{why}");
        let cpp = text.replace("=b12x", "=cpp");
        assert!(unreadable_words(&cpp).is_none());
        assert!(
            super::super::args::VllmLine::parse(&cpp)
                .unwrap()
                .unwrap()
                .knobs()
                .is_ok()
        );
    }

    /// The cpp backend's own cutoff (`VLLM_CPP_AR_1STAGE_NCCL_CUTOFF`, which it reads and the
    /// b12x backend does not) is its cutoff in a launch line and a record, and one the fork
    /// cannot read is refused with the variable named, never taken as the 56 KiB default.
    #[test]
    fn the_cpp_backends_cutoff_is_read_and_an_unreadable_one_refused() {
        let serve = "vllm serve moonshotai/Kimi-K2.6 -tp 8";
        let cutoff = |env: &str| {
            let text = format!("VLLM_ENABLE_PCIE_ALLREDUCE=1 {env} {serve}");
            let line = super::super::args::VllmLine::parse(&text).unwrap().unwrap();
            let from_line = line.knobs().map(|k| k.pcie_all_reduce.unwrap().max_bytes);
            let from_record =
                crate::engine::record::launch_knobs(Engine::Vllm, &text, "", &mut Vec::new())
                    .pcie_all_reduce
                    .and_then(|p| p.max_bytes);
            (from_line, from_record, unreadable_words(&text))
        };
        let (line, record, why) = cutoff("VLLM_CPP_AR_1STAGE_NCCL_CUTOFF=8MB");
        assert_eq!(line.unwrap(), Some(8 << 20));
        assert_eq!(record, Some(8 << 20));
        assert!(why.is_none());
        // the b12x backend ignores it
        let (line, _, _) =
            cutoff("VLLM_PCIE_ALLREDUCE_BACKEND=b12x VLLM_CPP_AR_1STAGE_NCCL_CUTOFF=8MB");
        assert_eq!(line.unwrap(), Some(64 * 1024));
        let (line, _, why) = cutoff("VLLM_CPP_AR_1STAGE_NCCL_CUTOFF=lots");
        let e = line.unwrap_err().to_string();
        assert!(
            e.contains("VLLM_CPP_AR_1STAGE_NCCL_CUTOFF=lots is no size"),
            "{e}"
        );
        assert!(why.unwrap().contains("(56KB)"));
    }

    /// With no cutoff stated, a record takes the fork's own default for its backend (cpp 56 KiB,
    /// b12x 64 KiB), as a launch line does, never SGLang's automatic 48 KiB.
    #[test]
    fn an_unstated_cutoff_is_the_forks_default_in_a_line_and_a_record() {
        let serve = "vllm serve lukealonso/GLM-5.1-NVFP4 -tp 8";
        for (env, bytes) in [
            ("VLLM_ENABLE_PCIE_ALLREDUCE=1", 56 * 1024),
            (
                "VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ALLREDUCE_BACKEND=cpp",
                56 * 1024,
            ),
            (
                "VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ALLREDUCE_BACKEND=b12x",
                64 * 1024,
            ),
        ] {
            let text = format!("{env} {serve}");
            let line = super::super::args::VllmLine::parse(&text).unwrap().unwrap();
            let from_record =
                crate::engine::record::launch_knobs(Engine::Vllm, &text, "", &mut Vec::new());
            for k in [&line.knobs().unwrap(), &from_record] {
                assert_eq!(k.pcie_all_reduce.unwrap().max_bytes, Some(bytes), "{text}");
            }
        }
    }

    #[test]
    fn byte_sizes_read_as_the_fork_reads_them_or_not_at_all() {
        for (text, want) in [
            ("64KB", Some(65_536)),
            ("64kb", Some(65_536)),
            ("84K", Some(86_016)),
            ("131072", Some(131_072)),
            ("1MB", Some(1 << 20)),
            ("2MiB", Some(2 << 20)),
            ("\"64KB\",", Some(65_536)),
            ("64 KB", Some(65_536)),
            ("sixty", None),
            ("64GB", None),
            ("KB", None),
            ("", None),
        ] {
            assert_eq!(args::byte_size(text), want, "{text}");
        }
    }

    #[test]
    fn the_environment_this_reader_acts_on_is_in_vllm_s_table() {
        for name in [
            "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
            "VLLM_ENABLE_PCIE_ALLREDUCE",
            args::VLLM_B12X_FORCE_MOE_A16,
            args::VLLM_PCIE_ALLREDUCE_BACKEND,
            args::VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE,
            args::VLLM_CPP_AR_1STAGE_NCCL_CUTOFF,
        ] {
            assert!(
                t::VLLM_ENV_MODELLED.iter().any(|(n, _)| *n == name),
                "{name}"
            );
        }
    }

    /// `--mamba-ssm-cache-dtype` reads alike from a launch line and a record; `auto` leaves the
    /// engine's rule.
    #[test]
    fn mamba_ssm_cache_dtype_reads_alike_from_a_launch_line_and_a_record() {
        let base = "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4";
        for (word, want) in [("float32", Some(4)), ("bfloat16", Some(2)), ("auto", None)] {
            let text = format!("{base} --mamba-ssm-cache-dtype {word}");
            let l = super::super::args::VllmLine::parse(&text).unwrap().unwrap();
            let k = crate::engine::record::launch_knobs(Engine::Vllm, &text, "", &mut Vec::new());
            assert_eq!(l.knobs().unwrap().linear_state_dtype_bytes, want, "{text}");
            assert_eq!(k.linear_state_dtype_bytes, want, "{text}");
        }
    }

    /// vLLM's human-readable integers (`--max-model-len 128k` / `128K` / `auto`,
    /// `--max-num-batched-tokens 8K`) read alike from a launch line and a record, as vLLM's
    /// `human_readable_int(_or_auto)` reads them; `auto` and `-1` leave the config's length and
    /// say that vLLM fits it to the KV cache.
    #[test]
    fn human_readable_lengths_read_alike_from_a_launch_line_and_a_record() {
        let base = "vllm serve moonshotai/Kimi-K2.6 -tp 8";
        for (len, tokens, want_len, want_auto, want_tokens) in [
            ("128k", "8k", Some(128_000), false, Some(8_000)),
            ("128K", "8K", Some(131_072), false, Some(8_192)),
            ("25.6k", "1_024", Some(25_600), false, Some(1_024)),
            ("262144", "4096", Some(262_144), false, Some(4_096)),
            ("auto", "2M", None, true, Some(2 << 20)),
            ("AUTO", "0.5k", None, true, Some(500)),
            ("-1", "16384", None, true, Some(16_384)),
        ] {
            let text = format!(
                "{base} --max-model-len {len} --max-num-batched-tokens {tokens} \
                 --kv-cache-memory-bytes 20G"
            );
            let l = super::super::args::VllmLine::parse(&text).unwrap().unwrap();
            let k = crate::engine::record::launch_knobs(Engine::Vllm, &text, "", &mut Vec::new());
            for (from, k) in [("line", l.knobs().unwrap()), ("record", k)] {
                assert_eq!(k.context_length, want_len, "{from}: {text}");
                assert_eq!(k.context_length_auto_fit, want_auto, "{from}: {text}");
                assert_eq!(k.chunked_prefill_size, want_tokens, "{from}: {text}");
                assert_eq!(k.kv_cache_memory_bytes, Some(20 << 30), "{from}: {text}");
            }
        }
    }

    /// `--hf-overrides` reads alike from a launch line and a record (one quoted word or a JSON
    /// object over several words); a record's prose after the flag names no override; an object
    /// that does not parse, or whose pattern is not F / S letters, makes the record unreadable.
    #[test]
    fn hf_overrides_read_alike_from_a_launch_line_and_a_record() {
        let base = "vllm serve lukealonso/GLM-5.1-NVFP4-MTP -tp 8";
        for json in [
            r#"'{"index_topk_pattern":"FSF"}'"#,
            r#"'{"index_topk_pattern": "FSF"}'"#,
        ] {
            let text = format!("{base} --hf-overrides {json} --max-num-seqs 32");
            let l = super::super::args::VllmLine::parse(&text).unwrap().unwrap();
            let from_record =
                crate::engine::record::launch_knobs(Engine::Vllm, &text, "", &mut Vec::new());
            let want = Some("FSF".to_string());
            assert_eq!(l.knobs().unwrap().model_overrides.index_topk_pattern, want);
            assert_eq!(
                from_record.model_overrides.index_topk_pattern, want,
                "{text}"
            );
            assert_eq!(from_record.max_running_requests, Some(32));
            assert_eq!(unreadable_words(&text), None);
        }
        let prose = format!("{base} (--hf-overrides index-cache pattern FFFSSS... 78 chars)");
        assert_eq!(unreadable_words(&prose), None);
        let k = crate::engine::record::launch_knobs(Engine::Vllm, &prose, "", &mut Vec::new());
        assert_eq!(k.model_overrides, Default::default());
        for bad in [
            r#"'{"index_topk_pattern": "FSF"'"#,
            r#"'{"index_topk_pattern": "FXF"}'"#,
        ] {
            let text = format!("{base} --hf-overrides {bad}");
            assert!(unreadable_words(&text).is_some(), "{text}");
        }
    }

    /// Issue 33: `--enable-prefix-caching` was a no-effect row on a `vllm serve` line while a record
    /// naming it changed the prediction. Both now read the same table rows into the same knob, and
    /// the engine's one rule (`prefix_cache`) decides what it does.
    /// `--no-enable-chunked-prefill` reads alike from a launch line and a record, and is
    /// modelled: the scheduler splits no prompt, and with no `--max-num-batched-tokens` the memory
    /// plan sizes the budget (`sim/tests/vllm_kv_lines.rs`).
    #[test]
    fn unchunked_prefill_reads_alike_from_a_launch_line_and_a_record() {
        let base = "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4";
        let machine = crate::machine::Machine::resolve("b200-x8").unwrap();
        for (more, want) in [
            ("", None),
            (" --enable-chunked-prefill", Some(true)),
            (" --no-enable-chunked-prefill", Some(false)),
        ] {
            let text = format!("{base}{more}");
            let l = super::super::args::VllmLine::parse(&text).unwrap().unwrap();
            let from_record =
                crate::engine::record::launch_knobs(Engine::Vllm, &text, "", &mut Vec::new());
            assert_eq!(l.knobs().unwrap().chunked_prefill, want, "{text}");
            assert_eq!(from_record.chunked_prefill, want, "{text}");
            assert!(
                l.not_modelled_line()
                    .is_none_or(|w| !w.contains("chunked-prefill")),
                "{text}"
            );
            let (o, _) = l.server_options(&models::Layout::tp(4), &machine).unwrap();
            assert_eq!(o.prefill_chunking, want != Some(false), "{text}");
            let unchunked_default = o.vllm_memory.unwrap().unchunked_default_budget;
            assert_eq!(unchunked_default, want == Some(false), "{text}");
        }
        // a budget given stays as given
        let given = format!("{base} --no-enable-chunked-prefill --max-num-batched-tokens 16384");
        let l = super::super::args::VllmLine::parse(&given)
            .unwrap()
            .unwrap();
        let (o, _) = l.server_options(&models::Layout::tp(4), &machine).unwrap();
        assert!(!o.prefill_chunking && !o.vllm_memory.unwrap().unchunked_default_budget);
    }

    #[test]
    fn prefix_caching_reads_alike_from_a_launch_line_and_a_record() {
        let base = "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4";
        for (more, want) in [
            ("", None),
            (" --enable-prefix-caching", Some(true)),
            (" --no-enable-prefix-caching", Some(false)),
        ] {
            let text = format!("{base}{more}");
            let l = super::super::args::VllmLine::parse(&text).unwrap().unwrap();
            let from_line = l.knobs().unwrap();
            let from_record =
                crate::engine::record::launch_knobs(Engine::Vllm, &text, "", &mut Vec::new());
            assert_eq!(from_line.prefix_caching, want, "{text}");
            assert_eq!(from_record.prefix_caching, want, "{text}");
            for hybrid in [false, true] {
                assert_eq!(
                    Engine::Vllm.prefix_cache(&from_line, hybrid),
                    Engine::Vllm.prefix_cache(&from_record, hybrid),
                );
            }
            // modelled, so no longer listed among the flags without effect
            assert!(
                l.not_modelled_line()
                    .is_none_or(|w| !w.contains("prefix-caching")),
                "{text}"
            );
        }
        // on by default in V1 for a model without linear attention, off for a hybrid one (< 0.28)
        let line = |t: &str| super::super::args::VllmLine::parse(t).unwrap().unwrap();
        let none = line(base).knobs().unwrap();
        assert!(Engine::Vllm.prefix_cache(&none, false).0);
        assert!(!Engine::Vllm.prefix_cache(&none, true).0);
        let machine = crate::machine::Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
        let off = line(&format!("{base} --no-enable-prefix-caching"));
        let (o, _) = off
            .server_options(&models::Layout::tp(4), &machine)
            .unwrap();
        assert!(
            o.disable_radix_cache,
            "the neutral config says no prefix reuse"
        );
    }
}
