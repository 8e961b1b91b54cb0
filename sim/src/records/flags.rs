//! A record's launch settings from its free-text `engine.flags` and `quant`: SGLang flags
//! (`--tp 8 --moe-runner-backend b12x`), the environment style of the rtx6kpro vLLM runs
//! (`KV_CACHE_DTYPE=fp8 GPU_MEM=0.94 VLLM_ENABLE_PCIE_ALLREDUCE=1 (cpp, 56KB cutoff)`), and the
//! InferenceX configs a record names (their launch lines are fixed per config, see
//! [`INFERENCEX_SGLANG`]). Option names are looked up in the two engines' flag tables
//! ([`crate::sglang_args::SPECS`], [`crate::vllm_args::table::SPECS`]), so a spelling either
//! engine takes is read; words it does not know are left alone: this is a tolerant reader of
//! what the sources wrote, not a launch-line parser.

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

/// The rtx6kpro wiki's own spellings of launch settings (`GPU_MEM=0.94`), by the table `dest`
/// they stand for; every `--flag` is looked up in the engines' tables instead.
const WIKI_WORDS: &[(&str, &str)] = &[
    ("KV_CACHE_DTYPE", dest::KV_CACHE_DTYPE),
    ("GPU_MEM", dest::GPU_MEMORY_UTILIZATION),
    ("MAX_MODEL_LEN", dest::MAX_MODEL_LEN),
    // the vLLM GLM-5.1 / Kimi pages' run scripts: `MOE_BACKEND=b12x` (vLLM's `--moe-backend`)
    ("MOE_BACKEND", dest::MOE_RUNNER_BACKEND),
];

/// The table `dest`s this reader acts on, taken from the two flag tables at compile time: a dest
/// renamed or removed in a table breaks the build here instead of silently never matching.
mod dest {
    use crate::sglang_args::flags as s;
    use crate::vllm_args::table as v;

    pub const KV_CACHE_DTYPE: &str = s::KV_CACHE_DTYPE.dest;
    pub const MEM_FRACTION_STATIC: &str = s::MEM_FRACTION_STATIC.dest;
    pub const GPU_MEMORY_UTILIZATION: &str = v::GPU_MEMORY_UTILIZATION.dest;
    pub const CONTEXT_LENGTH: &str = s::CONTEXT_LENGTH.dest;
    pub const MAX_MODEL_LEN: &str = v::MAX_MODEL_LEN.dest;
    pub const MOE_RUNNER_BACKEND: &str = s::MOE_RUNNER_BACKEND.dest;
    pub const ATTENTION_BACKEND: &str = s::ATTENTION_BACKEND.dest;
    pub const CUDA_GRAPH_MAX_BS: &str = s::CUDA_GRAPH_MAX_BS.dest;
    pub const MAX_RUNNING_REQUESTS: &str = s::MAX_RUNNING_REQUESTS.dest;
    pub const MAX_NUM_SEQS: &str = v::MAX_NUM_SEQS.dest;
    pub const CHUNKED_PREFILL_SIZE: &str = s::CHUNKED_PREFILL_SIZE.dest;
    pub const MAX_NUM_BATCHED_TOKENS: &str = v::MAX_NUM_BATCHED_TOKENS.dest;
    pub const MAX_PREFILL_TOKENS: &str = s::MAX_PREFILL_TOKENS.dest;
    pub const DISABLE_RADIX_CACHE: &str = s::DISABLE_RADIX_CACHE.dest;
    pub const STREAM_INTERVAL: &str = s::STREAM_INTERVAL.dest;
    pub const DISABLE_CUSTOM_ALL_REDUCE: &str = s::DISABLE_CUSTOM_ALL_REDUCE.dest;
    pub const DISABLE_CUDA_GRAPH: &str = s::DISABLE_CUDA_GRAPH.dest;
    pub const ENFORCE_EAGER: &str = v::ENFORCE_EAGER.dest;
    pub const ENABLE_PREFIX_CACHING: &str = v::ENABLE_PREFIX_CACHING.dest;
    pub const NO_ENABLE_PREFIX_CACHING: &str = v::NO_ENABLE_PREFIX_CACHING.dest;

    // one arm serves both engines where their tables share the dest
    const _: () = assert!(same(KV_CACHE_DTYPE, v::KV_CACHE_DTYPE.dest));
    const _: () = assert!(same(
        DISABLE_CUSTOM_ALL_REDUCE,
        v::DISABLE_CUSTOM_ALL_REDUCE.dest
    ));

    const fn same(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }
}

/// The table `dest` of a record's key: an option of vLLM's or SGLang's flag table (their
/// canonical spellings and aliases), or a wiki word; `None` = neither (kept as written).
fn dest_of(key: &str) -> Option<&'static str> {
    if key.starts_with('-') {
        return crate::sglang_args::SPECS
            .iter()
            .find(|s| s.flags.contains(&key))
            .or_else(|| crate::vllm_args::table::spec_of(key))
            .map(|s| s.dest);
    }
    WIKI_WORDS.iter().find(|(w, _)| *w == key).map(|(_, d)| *d)
}

/// Launch settings of a record run by `engine`, from its flags and quantization words; with the
/// assumptions made (one line each).
pub fn launch_knobs(
    engine: Engine,
    flags: &str,
    quant: &str,
    assumptions: &mut Vec<String>,
) -> LaunchKnobs {
    let mut k = LaunchKnobs::default();
    let q = quant.to_ascii_lowercase();
    if q.contains("fp8 kv") {
        k.kv_cache_dtype = Some(KvDtype::Fp8);
    } else if q.contains("bf16 kv") || q.contains("fp16 kv") {
        k.kv_cache_dtype = Some(KvDtype::Bf16);
    }
    let mut text = flags.to_string();
    if let Some(cfg) = inferencex_config(flags) {
        let line = INFERENCEX_SGLANG
            .iter()
            .find(|(n, _)| *n == cfg)
            .map(|(_, l)| *l);
        if let Some(line) = line {
            assumptions.push(format!(
                "launch flags of InferenceX `{cfg}` (@1fc5d73c): {line}"
            ));
            text = format!("{line} {text}");
        }
    }
    let tokens: Vec<&str> = text.split_whitespace().collect();
    for (key, arg) in keyed(&tokens) {
        let number = || arg.and_then(|a| a.parse().ok());
        match dest_of(key).unwrap_or(key) {
            dest::KV_CACHE_DTYPE => {
                if let Some(d) = arg.and_then(KvDtype::from_name) {
                    k.kv_cache_dtype = Some(d);
                }
            }
            dest::MEM_FRACTION_STATIC => {
                k.memory_fraction = arg.and_then(fraction).map(|f| (Engine::Sglang, f))
            }
            dest::GPU_MEMORY_UTILIZATION => {
                k.memory_fraction = arg.and_then(fraction).map(|f| (Engine::Vllm, f))
            }
            dest::CONTEXT_LENGTH | dest::MAX_MODEL_LEN => k.context_length = number(),
            dest::MOE_RUNNER_BACKEND => k.moe_runner_backend = arg.map(str::to_string),
            dest::ATTENTION_BACKEND => k.attention_backend = arg.map(str::to_string),
            dest::CUDA_GRAPH_MAX_BS => k.cuda_graph_max_bs = number(),
            dest::MAX_RUNNING_REQUESTS | dest::MAX_NUM_SEQS => k.max_running_requests = number(),
            dest::CHUNKED_PREFILL_SIZE | dest::MAX_NUM_BATCHED_TOKENS => {
                k.chunked_prefill_size = number()
            }
            dest::MAX_PREFILL_TOKENS => k.max_prefill_tokens = number(),
            dest::DISABLE_RADIX_CACHE => k.disable_radix_cache = true,
            // vLLM's boolean flag and its argparse negation, the rows a launch line reads too
            dest::ENABLE_PREFIX_CACHING => k.prefix_caching = Some(true),
            dest::NO_ENABLE_PREFIX_CACHING => k.prefix_caching = Some(false),
            dest::STREAM_INTERVAL => k.stream_interval = number(),
            dest::DISABLE_CUSTOM_ALL_REDUCE => k.disable_custom_all_reduce = true,
            dest::DISABLE_CUDA_GRAPH | dest::ENFORCE_EAGER => k.disable_cuda_graph = true,
            "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS" => {
                k.estimate_cudagraph_memory = arg == Some("1")
            }
            "VLLM_ENABLE_PCIE_ALLREDUCE" if arg == Some("1") => {
                k.pcie_all_reduce = Some(PcieAllReduce {
                    engine: Engine::Vllm,
                    max_bytes: cutoff_bytes(&text),
                })
            }
            _ if key.starts_with("--enable-pcie-oneshot-allreduce") => {
                k.pcie_all_reduce = Some(PcieAllReduce {
                    engine: Engine::Sglang,
                    max_bytes: None,
                })
            }
            _ => {}
        }
    }
    // the rtx6kpro wiki's words for a run without custom all-reduce
    let lower = text.to_ascii_lowercase();
    if lower.contains("pure nccl") || lower.contains("ar cutoff 0") {
        k.disable_custom_all_reduce = true;
        k.pcie_all_reduce = None;
    }
    if k.moe_runner_backend.is_none()
        && let Some(i) = tokens
            .windows(3)
            .position(|w| w[0] == "moe" && w[1] == "backend")
    {
        k.moe_runner_backend = Some(tokens[i + 2].to_string());
    }
    if engine == Engine::Sglang && k.pcie_all_reduce.is_some_and(|p| p.engine == Engine::Vllm) {
        assumptions.push("a vLLM PCIe all-reduce knob on an SGLang record: ignored".into());
    }
    k
}

/// The speculative-decoding settings a record's flags state (each `None` where silent):
/// SGLang's `--speculative-*` flags, or vLLM's `--speculative-config` JSON
/// (`"method"`, `"num_speculative_tokens"`: a chain of that many drafts, one more verified).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatedSpeculation {
    pub algorithm: Option<String>,
    pub num_steps: Option<u32>,
    pub eagle_topk: Option<u32>,
    pub num_draft_tokens: Option<u32>,
}

impl StatedSpeculation {
    /// Whether the flags say anything about speculation.
    pub fn is_stated(&self) -> bool {
        *self != StatedSpeculation::default()
    }
}

/// [`StatedSpeculation`] of a flags text.
pub fn stated_speculation(flags: &str) -> StatedSpeculation {
    let mut st = StatedSpeculation::default();
    let tokens: Vec<&str> = flags.split_whitespace().collect();
    let number = |v: Option<&str>| {
        v.map(|v| v.trim_matches(|c: char| !c.is_ascii_digit()))
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|n| *n > 0)
    };
    for (key, arg) in keyed(&tokens) {
        match key {
            "--speculative-algorithm" => {
                st.algorithm = arg.map(|a| a.trim_matches(['\'', '"', ',']).to_ascii_uppercase())
            }
            "--speculative-num-steps" => st.num_steps = number(arg),
            "--speculative-eagle-topk" => st.eagle_topk = number(arg),
            "--speculative-num-draft-tokens" => st.num_draft_tokens = number(arg),
            _ => {}
        }
    }
    // vLLM's JSON, however the source quoted it
    let json = flags.replace(['\'', '\\'], "");
    let field = |name: &str| {
        let at = json.find(&format!("\"{name}\""))? + name.len() + 2;
        let rest = json[at..].trim_start_matches([' ', ':']);
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim().trim_matches('"').to_string())
    };
    if let Some(k) = number(field("num_speculative_tokens").as_deref()) {
        st.num_steps = Some(k);
        st.eagle_topk = Some(1);
        st.num_draft_tokens = Some(k + 1);
    }
    if let Some(m) = field("method") {
        st.algorithm = Some(m.to_ascii_uppercase());
    }
    st
}

/// Every token as `(key, argument)`: `KEY=value` and `--flag=value` carry their own, otherwise the
/// next token is the argument (trimmed of the `,` / `;` the sources write between settings).
fn keyed<'a>(tokens: &'a [&'a str]) -> impl Iterator<Item = (&'a str, Option<&'a str>)> + 'a {
    tokens
        .iter()
        .enumerate()
        .map(|(i, raw)| match raw.split_once('=') {
            Some((key, inline)) => (key, Some(inline)),
            None => (
                *raw,
                tokens
                    .get(i + 1)
                    .map(|s| s.trim_matches(|c| c == ',' || c == ';')),
            ),
        })
}

fn fraction(v: &str) -> Option<f64> {
    v.parse::<f64>().ok().filter(|f| *f > 0.0 && *f <= 1.0)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_this_reader_acts_on_is_in_vllm_s_table() {
        for name in [
            "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
            "VLLM_ENABLE_PCIE_ALLREDUCE",
        ] {
            assert!(
                crate::vllm_args::table::VLLM_ENV_MODELLED
                    .iter()
                    .any(|(n, _)| *n == name),
                "{name}"
            );
        }
    }

    fn knobs(engine: Engine, flags: &str, quant: &str) -> LaunchKnobs {
        launch_knobs(engine, flags, quant, &mut Vec::new())
    }

    #[test]
    fn reads_the_speculative_settings_sglang_and_vllm_spell() {
        let s = stated_speculation(
            "--tp 8 --speculative-algorithm NEXTN --speculative-num-steps 4 --speculative-num-draft-tokens 6 --speculative-eagle-topk 1",
        );
        assert_eq!(s.algorithm.as_deref(), Some("NEXTN"));
        assert_eq!(
            (s.num_steps, s.eagle_topk, s.num_draft_tokens),
            (Some(4), Some(1), Some(6))
        );
        let v = stated_speculation(
            r#"--speculative-config '{"model":"lightseekorg/kimi-k2.5-eagle3-mla","method":"eagle3","num_speculative_tokens":3}'"#,
        );
        assert_eq!(v.algorithm.as_deref(), Some("EAGLE3"));
        assert_eq!(
            (v.num_steps, v.eagle_topk, v.num_draft_tokens),
            (Some(3), Some(1), Some(4))
        );
        assert!(!stated_speculation("TP_SIZE=8 DCP=1 MTP=EAGLE3 draft on").is_stated());
        assert!(!stated_speculation("--speculative-num-steps x").is_stated());
    }

    #[test]
    fn reads_the_vllm_environment_style() {
        let k = knobs(
            Engine::Vllm,
            "TP_SIZE=8 DCP=1 MTP=off GPU_MEM=0.94 KV_CACHE_DTYPE=fp8 MAX_MODEL_LEN=262144 VLLM_ENABLE_PCIE_ALLREDUCE=1 (cpp, 56KB cutoff) NCCL_PROTO=LL,LL128,Simple",
            "int4 native (W4A16 routed experts) per recipe; fp8 KV cache",
        );
        assert_eq!(k.kv_cache_dtype, Some(KvDtype::Fp8));
        assert_eq!(k.memory_fraction, Some((Engine::Vllm, 0.94)));
        assert_eq!(k.context_length, Some(262_144));
        assert_eq!(
            k.pcie_all_reduce,
            Some(PcieAllReduce {
                engine: Engine::Vllm,
                max_bytes: Some(56 * 1024)
            })
        );
        let nccl = knobs(
            Engine::Vllm,
            "pure NCCL allreduce (C++ PCIe AR cutoff 0), NCCL_PROTO=default",
            "int4 (native)",
        );
        assert!(nccl.disable_custom_all_reduce && nccl.pcie_all_reduce.is_none());
    }

    /// Option names come from the engines' tables: vLLM's spellings (with `_` for `-`) and
    /// SGLang's aliases are read the way the two engines read them.
    #[test]
    fn flag_names_come_from_the_engines_tables() {
        let k = knobs(
            Engine::Vllm,
            "--max_model_len 32768 --max-num-batched-tokens 4096 --enforce-eager VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1",
            "int4",
        );
        assert_eq!(
            (k.context_length, k.chunked_prefill_size),
            (Some(32768), Some(4096))
        );
        assert!(k.disable_cuda_graph && k.estimate_cudagraph_memory);
        let s = knobs(
            Engine::Sglang,
            "--context-length 8192 --mem-fraction-static 0.8",
            "",
        );
        assert_eq!(s.context_length, Some(8192));
        assert_eq!(s.memory_fraction, Some((Engine::Sglang, 0.8)));
    }

    #[test]
    fn reads_sglang_flags_and_the_wiki_words() {
        let k = knobs(
            Engine::Sglang,
            "--tp 8 --moe-runner-backend b12x",
            "nvfp4 (modelopt_fp4), bf16 KV cache",
        );
        assert_eq!(k.moe_runner_backend.as_deref(), Some("b12x"));
        assert_eq!(k.kv_cache_dtype, Some(KvDtype::Bf16));
        let k = knobs(
            Engine::Sglang,
            "--tp 8 moe backend b12x --enable-pcie-oneshot-allreduce(-fusion)",
            "nvfp4",
        );
        assert_eq!(k.moe_runner_backend.as_deref(), Some("b12x"));
        assert_eq!(k.pcie_all_reduce.map(|p| p.engine), Some(Engine::Sglang));
        let mut notes = Vec::new();
        let k = launch_knobs(
            Engine::Sglang,
            "InferenceX config dsr1-fp4-b200-sglang, TP=8 EP=8",
            "nvfp4",
            &mut notes,
        );
        assert_eq!(k.kv_cache_dtype, Some(KvDtype::Fp8));
        assert_eq!(
            (k.cuda_graph_max_bs, k.max_running_requests),
            (Some(256), Some(256))
        );
        assert_eq!(k.chunked_prefill_size, Some(16384));
        assert!(k.disable_radix_cache);
        assert_eq!(k.stream_interval, Some(10));
        assert!(notes[0].contains("dsr1-fp4-b200-sglang"), "{notes:?}");
    }

    #[test]
    fn the_vllm_run_scripts_moe_backend_word_names_the_runner() {
        let k = knobs(
            Engine::Vllm,
            "TP_SIZE=8 KV_CACHE_DTYPE=fp8 MOE_BACKEND=b12x B12X_MOE_FORCE_A16=1",
            "nvfp4",
        );
        assert_eq!(k.moe_runner_backend.as_deref(), Some("b12x"));
    }

    /// Issue 33: `--enable-prefix-caching` was a no-effect row on a `vllm serve` line while a record
    /// naming it changed the prediction. Both now read the same table rows into the same knob, and
    /// the engine's one rule (`prefix_cache`) decides what it does.
    #[test]
    fn prefix_caching_reads_alike_from_a_launch_line_and_a_record() {
        let base = "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4";
        for (more, want) in [
            ("", None),
            (" --enable-prefix-caching", Some(true)),
            (" --no-enable-prefix-caching", Some(false)),
        ] {
            let text = format!("{base}{more}");
            let l = crate::vllm_args::VllmLine::parse(&text).unwrap().unwrap();
            let from_line = l.knobs().unwrap();
            let from_record = launch_knobs(Engine::Vllm, &text, "", &mut Vec::new());
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
        let line = |t: &str| crate::vllm_args::VllmLine::parse(t).unwrap().unwrap();
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
