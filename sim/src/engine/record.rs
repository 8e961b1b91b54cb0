//! A record's launch settings from its free-text `engine.flags` and `quant`: SGLang flags
//! (`--tp 8 --moe-runner-backend b12x`), the environment style of the rtx6kpro vLLM runs
//! (`KV_CACHE_DTYPE=fp8 GPU_MEM=0.94 VLLM_ENABLE_PCIE_ALLREDUCE=1 (cpp, 56KB cutoff)`), and the
//! InferenceX configs a record names. This is the shared loop of the engines' record readers: it
//! splits the text into `(key, argument)` words and hands each to every engine of the registry
//! ([`super::ServingEngine::read_record_word`]), each of which knows its own flag table (the rows
//! its launch-line reader takes) and its sources' own words, so a spelling either engine takes is
//! read whichever engine ran the record (the sources mix them). Words no engine knows are left
//! alone: this is a tolerant reader of what the sources wrote, not a launch-line parser.

use super::{Engine, LaunchKnobs};
use models::KvDtype;

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
    // a server command in the words (`python -m sglang.launch_server`, `vllm serve`, vLLM's
    // OpenAI server module): the launch line's own recognizer, so the two readers agree
    let words: Vec<String> = flags.split_whitespace().map(str::to_string).collect();
    k.launch_complete = super::command::launch_engine(&words).is_some();
    for e in Engine::ALL {
        if let Some((line, assumption)) = e.rules().named_launch(flags) {
            assumptions.push(assumption);
            text = format!("{line} {text}");
            k.launch_complete = true;
        }
    }
    let tokens: Vec<&str> = text.split_whitespace().collect();
    for (key, arg) in keyed(&tokens) {
        // the first engine whose table or words know the key reads it (SGLang's table first)
        Engine::ALL
            .iter()
            .any(|e| e.rules().read_record_word(key, arg, &text, &mut k));
    }
    // the rtx6kpro wiki's words for a run without custom all-reduce
    let lower = text.to_ascii_lowercase();
    if lower.contains("pure nccl") || lower.contains("ar cutoff 0") {
        k.disable_custom_all_reduce = true;
        k.pcie_all_reduce = None;
    }
    if k.moe_runner_backend.is_none() {
        k.moe_runner_backend = worded_moe_backend(&tokens);
    }
    if engine == Engine::Sglang && k.pcie_all_reduce.is_some_and(|p| p.engine == Engine::Vllm) {
        assumptions.push("a vLLM PCIe all-reduce knob on an SGLang record: ignored".into());
    }
    k
}

/// The value of an `nargs="+"` integer option `key` in a record's `text`, as written: its
/// `=value` (`arg`), or every word after it that is a number or part of a list (the record
/// reader hands each option one word; the text goes on with other settings). The engine's table
/// reads it (`sglang::args::int_list`); `None` when the option is not there or has no list.
pub fn ints_after(key: &str, arg: Option<&str>, text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let Some(at) = words.iter().position(|w| *w == key) else {
        return arg.map(str::to_string);
    };
    let list: Vec<&str> = words[at + 1..]
        .iter()
        .take_while(|w| w.chars().all(|c| c.is_ascii_digit() || ",[]".contains(c)))
        .copied()
        .collect();
    (!list.is_empty()).then(|| list.join(" "))
}

/// The model-config overrides of a record's text after `key` (vLLM's `--hf-overrides`, SGLang's
/// `--json-model-override-args`), however the source quoted the JSON object (one word or
/// several): `None` where the key is absent or followed by words, not an object (a record's
/// prose about the launch, "(--hf-overrides index-cache pattern FFFSSS... 78 chars)", which names
/// the config's own pattern); an error where the object cannot be read for sure (the record is
/// refused for it rather than priced without).
pub fn model_overrides_after(
    key: &str,
    text: &str,
) -> Option<Result<crate::options::ModelOverrides, String>> {
    let v = json_object_after(key, text)?;
    Some(v.and_then(|v| {
        crate::options::ModelOverrides::of_json(&v).map_err(|e| format!("{key}: {e}"))
    }))
}

/// The online quantization of a record's text after `key` (vLLM's `--quantization-config`) over
/// `base` (its `--quantization` shorthand's), as [`model_overrides_after`] reads its object:
/// `None` where the key is absent or not followed by an object, `Some(Ok(None))` for an object
/// that sets neither side, an error where it
/// cannot be read or priced for sure ([`crate::options::OnlineQuant::of_json`]).
pub fn online_quant_after(
    key: &str,
    text: &str,
    base: Option<crate::options::OnlineQuant>,
) -> Option<Result<Option<crate::options::OnlineQuant>, String>> {
    let v = json_object_after(key, text)?;
    Some(v.and_then(|v| {
        crate::options::OnlineQuant::of_json(&v, base).map_err(|e| format!("{key}: {e}"))
    }))
}

/// The JSON object a record's text holds after `key`, however the source quoted it: `None`
/// where the key is absent or followed by words, an error where the object does not close or
/// parse.
fn json_object_after(key: &str, text: &str) -> Option<Result<serde_json::Value, String>> {
    let at = text.find(key)? + key.len();
    let rest = text[at..].trim_start_matches([' ', '=', '\'', '"']);
    if !rest.starts_with('{') {
        return None;
    }
    let object = match json_object_prefix(rest) {
        Some(o) => o,
        None => return Some(Err(format!("{key}: its JSON object is not closed"))),
    };
    Some(serde_json::from_str(object).map_err(|e| format!("{key}: {e}")))
}

/// The JSON object `text` starts with (to its matching brace, strings respected).
fn json_object_prefix(text: &str) -> Option<&str> {
    if !text.starts_with('{') {
        return None;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[..=i]);
                }
            }
            _ => {}
        }
    }
    None
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

/// The MoE runner a record names in words: the rtx6kpro wiki's `moe backend b12x`, or a runner
/// backend of either engine's table before `MoE` (`cutlass MoE`, `b12x MoE,`); a word before
/// `MoE` that is no runner (`FP8 MoE`: a weight format) names none.
fn worded_moe_backend(tokens: &[&str]) -> Option<String> {
    fn bare(w: &str) -> &str {
        w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_')
    }
    if let Some(w) = tokens
        .windows(3)
        .find(|w| w[0] == "moe" && w[1] == "backend")
    {
        return Some(w[2].to_string());
    }
    tokens
        .windows(2)
        .filter(|w| bare(w[1]) == "MoE")
        .map(|w| bare(w[0]).to_ascii_lowercase())
        .find(|b| Engine::ALL.iter().any(|e| e.rules().is_moe_runner(b)))
}

/// Whether the token before `i` negates it: the sources write a flag they did not pass as
/// `(no --enable-pcie-oneshot-allreduce)` or `without --flag`.
fn negated(tokens: &[&str], i: usize) -> bool {
    i > 0 && {
        let before = tokens[i - 1].trim_start_matches('(').to_ascii_lowercase();
        before == "no" || before == "without"
    }
}

/// Every token as `(key, argument)`: `KEY=value` and `--flag=value` carry their own, otherwise the
/// next token is the argument (trimmed of the `,` / `;` the sources write between settings). A
/// flag the text says was not passed ([`negated`]) is no key.
fn keyed<'a>(tokens: &'a [&'a str]) -> impl Iterator<Item = (&'a str, Option<&'a str>)> + 'a {
    tokens
        .iter()
        .enumerate()
        .filter(|(i, _)| !negated(tokens, *i))
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

/// Why a record's text cannot be read for sure, if it states a numeric launch setting with a
/// value the engine's launch would refuse (`GPU_MEM=NaN`, `--max-num-seqs ${SEQS}`,
/// `--mem-fraction-static 1.2`): the setting would otherwise be left unread and the engine's
/// default priced in its place. `--flag value` and `--flag=value` are read, and a word as
/// `KEY=value` only (prose around the settings is not a setting); the record's own engine judges
/// a key its table knows (`--cpu-offload-gb 1.5` is a vLLM value, not an SGLang one), else the
/// first other engine whose table knows it.
pub fn unreadable_values(engine: Engine, flags: &str) -> Option<String> {
    let tokens: Vec<&str> = flags.split_whitespace().collect();
    (0..tokens.len())
        .filter(|i| !negated(&tokens, *i))
        .filter_map(|i| {
            let raw = tokens[i].trim_start_matches(['(', '\'', '"']);
            match raw.split_once('=') {
                Some((key, value)) => Some((key, value)),
                None if raw.starts_with('-') => {
                    Some((raw, tokens.get(i + 1).copied().unwrap_or("")))
                }
                None => None,
            }
        })
        .map(|(key, value)| (key, value.trim_matches(['\'', '"', ',', ';', ')'])))
        .find_map(|(key, value)| {
            std::iter::once(engine)
                .chain(Engine::ALL.into_iter().filter(|e| *e != engine))
                .find_map(|e| e.rules().check_record_value(key, value))?
                .err()
        })
}

/// The value of `NAME=value` in free text (a record's flags, an environment list), quotes and
/// trailing punctuation trimmed; the last one where it is set twice.
pub fn env_value<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.split_whitespace()
        .filter_map(|w| w.trim_start_matches(['(', '\'', '"']).split_once('='))
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches(['\'', '"', ',', ';', ')']))
        .next_back()
}

/// A fraction in (0, 1] (`--mem-fraction-static`, `GPU_MEM`).
pub(super) fn fraction(v: &str) -> Option<f64> {
    v.parse::<f64>().ok().filter(|f| *f > 0.0 && *f <= 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::PcieAllReduce;

    /// An `nargs="+"` option's words in a record's text, however the source wrote the list,
    /// and no further than the list goes.
    #[test]
    fn ints_after_an_option_are_its_list_only() {
        let key = "--cuda-graph-bs";
        for (text, list) in [
            (
                "--tp 8 --cuda-graph-bs 1 2 4 8 --mem-fraction-static 0.8",
                "1 2 4 8",
            ),
            ("--cuda-graph-bs 1,2,4,8, GPU_MEM=0.94", "1,2,4,8,"),
            ("--cuda-graph-bs [1, 2, 4, 8] (graphs to 8)", "[1, 2, 4, 8]"),
        ] {
            assert_eq!(ints_after(key, Some("1"), text).as_deref(), Some(list));
        }
        let inline = ints_after(key, Some("1,2,4"), "--cuda-graph-bs=1,2,4");
        assert_eq!(inline.as_deref(), Some("1,2,4"));
        assert_eq!(ints_after(key, Some("x"), "--cuda-graph-bs x"), None);
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
        assert!(k.disable_cuda_graph && k.estimate_cudagraph_memory == Some(true));
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

    /// The Qwen3.5 all-reduce A/B rows write their runner and the flag they did not pass in
    /// words: `cutlass MoE, NCCL all-reduce only (no --enable-pcie-oneshot-allreduce)` was read
    /// as the one-shot all-reduce on and the default runner, and `b12x MoE` as the default.
    #[test]
    fn a_runner_before_moe_and_a_flag_said_not_passed_are_read_as_written() {
        let nccl = knobs(
            Engine::Sglang,
            "--tp 4, cutlass MoE, NCCL all-reduce only (no --enable-pcie-oneshot-allreduce)",
            "nvfp4",
        );
        assert_eq!(nccl.moe_runner_backend.as_deref(), Some("cutlass"));
        assert_eq!(nccl.pcie_all_reduce, None);
        let oneshot = knobs(
            Engine::Sglang,
            "--tp 4, b12x MoE, --enable-pcie-oneshot-allreduce, no MTP",
            "nvfp4",
        );
        assert_eq!(oneshot.moe_runner_backend.as_deref(), Some("b12x"));
        assert_eq!(
            oneshot.pcie_all_reduce.map(|p| p.engine),
            Some(Engine::Sglang)
        );
        // a weight format before `MoE` is no runner; `without --flag` is not passed either
        let fp8 = knobs(
            Engine::Sglang,
            "--tp 8, FP8 MoE without --disable-cuda-graph",
            "fp8",
        );
        assert_eq!(fp8.moe_runner_backend, None);
        assert!(!fp8.disable_cuda_graph);
    }

    #[test]
    fn the_vllm_run_scripts_backend_words_name_the_runner_and_the_attention() {
        let k = knobs(
            Engine::Vllm,
            "TP_SIZE=8 KV_CACHE_DTYPE=fp8 ATTENTION_BACKEND=B12X_MLA_SPARSE MOE_BACKEND=b12x B12X_MOE_FORCE_A16=1",
            "nvfp4",
        );
        assert_eq!(k.moe_runner_backend.as_deref(), Some("b12x"));
        // its attention word too (it went unread until the nineteenth session)
        assert_eq!(k.attention_backend.as_deref(), Some("B12X_MLA_SPARSE"));
        // and its W4A16 switch, which takes b12x off its NVFP4 kernels (`cost::moe::MoeRunner`)
        assert!(k.b12x_moe_a16);
        let off = knobs(
            Engine::Vllm,
            "MOE_BACKEND=b12x B12X_MOE_FORCE_A16=0",
            "nvfp4",
        );
        assert!(!off.b12x_moe_a16);
    }

    /// InferenceX's `dsr1-fp4-b200-sglang` script polls for new requests every 10 decode steps
    /// below 16 streams and every 30 from 16 (`--scheduler-recv-interval`); a record's own flag
    /// is read as SGLang's and the config names it only where the record does not; other
    /// engines and configs set none.
    #[test]
    fn inferencex_configs_set_the_scheduler_read_interval_by_concurrency() {
        let cfg = "InferenceX config dsr1-fp4-b200-sglang, TP=8 EP=8";
        let rules = Engine::Sglang.rules();
        assert_eq!(rules.named_recv_interval(cfg, 4).map(|r| r.0), Some(10));
        assert_eq!(rules.named_recv_interval(cfg, 15).map(|r| r.0), Some(10));
        assert_eq!(rules.named_recv_interval(cfg, 16).map(|r| r.0), Some(30));
        assert!(
            rules
                .named_recv_interval(cfg, 64)
                .unwrap()
                .1
                .contains("30 from 16")
        );
        let h200 = "InferenceX config dsr1-fp8-h200-sglang";
        assert_eq!(rules.named_recv_interval(h200, 4), None);
        assert_eq!(Engine::Vllm.rules().named_recv_interval(cfg, 4), None);
        let own = launch_knobs(
            Engine::Sglang,
            "--tp 8 --scheduler-recv-interval 5",
            "nvfp4",
            &mut Vec::new(),
        );
        assert_eq!(own.scheduler_recv_interval, Some(5));
        let (o, _) = Engine::Sglang.server_options(&own, 8, false, 97_887 << 20);
        assert_eq!(o.scheduler_recv_interval, 5);
    }

    /// `run-kimi26-vllm`'s variables passed to the flags of the same name are read as them
    /// (they went unread until the twentieth session: the Kimi-K2.6 v3 page's 0.94 planned as
    /// vLLM's default 0.9).
    #[test]
    fn the_run_scripts_flag_variables_are_read_as_their_flags() {
        let k = knobs(
            Engine::Vllm,
            "TP_SIZE=8 DCP_SIZE=8 KIMI_DISABLE_MTP=1 GPU_MEMORY_UTILIZATION=0.90 MAX_MODEL_LEN=262144 MAX_NUM_BATCHED_TOKENS=4096 MAX_NUM_SEQS=32 MAX_CUDAGRAPH_CAPTURE_SIZE=512",
            "int4 native",
        );
        assert_eq!(k.memory_fraction, Some((Engine::Vllm, 0.90)));
        assert_eq!(k.chunked_prefill_size, Some(4096));
        assert_eq!(k.max_running_requests, Some(32));
        assert_eq!(k.cuda_graph_max_bs, Some(512));
        assert_eq!(k.kv_cache_dtype, None, "no script named, no dtype stated");
    }

    /// A record launched through `run-kimi26-vllm` (or `run-glm51-vllm`) ran every variable it
    /// does not set at the script's default, fp8 KV among them; its own words win.
    #[test]
    fn a_run_scripts_defaults_fill_what_the_record_leaves_out() {
        let mut said = Vec::new();
        let k = launch_knobs(
            Engine::Vllm,
            "run-kimi26-vllm: TP_SIZE=8 DCP_SIZE=8 MAX_NUM_SEQS=64",
            "int4 native",
            &mut said,
        );
        assert_eq!(k.kv_cache_dtype, Some(KvDtype::Fp8));
        assert_eq!(k.memory_fraction, Some((Engine::Vllm, 0.94)));
        assert_eq!(k.attention_backend.as_deref(), Some("TRITON_MLA"));
        assert_eq!(
            k.max_running_requests,
            Some(64),
            "the record's own word wins"
        );
        assert!(
            said.iter().any(|a| a.contains("run-kimi26-vllm")),
            "{said:?}"
        );
        let glm = knobs(
            Engine::Vllm,
            "/opt/vllm/scripts/run-glm51-vllm: TP_SIZE=8 KV_CACHE_DTYPE=bf16",
            "nvfp4",
        );
        assert_eq!(glm.kv_cache_dtype, Some(KvDtype::Bf16));
        assert_eq!(glm.moe_runner_backend.as_deref(), Some("b12x"));
        assert_eq!(glm.memory_fraction, Some((Engine::Vllm, 0.865)));
        // a name that only contains the script's is not it
        assert_eq!(
            knobs(Engine::Vllm, "my-run-kimi26-vllm-fork TP_SIZE=8", "int4").kv_cache_dtype,
            None
        );
    }

    /// A numeric setting a record states with a value its engine's launch refuses is refused,
    /// not read as the engine's default (`GPU_MEM=NaN` was left unread and priced at vLLM's
    /// 0.9); layout sizes (the record's `parallel` field states them), recorded rows, choices a
    /// fork extends and prose are not judged.
    #[test]
    fn a_stated_number_the_launch_refuses_is_unreadable() {
        let refused = |engine, flags: &str| unreadable_values(engine, flags);
        for (engine, flags, why) in [
            (
                Engine::Vllm,
                "TP_SIZE=8 GPU_MEM=NaN KV_CACHE_DTYPE=fp8",
                "GPU_MEM=NaN: must be a fraction",
            ),
            (
                Engine::Vllm,
                "--max-num-seqs ${SEQS} --max-model-len 128k",
                "--max-num-seqs ${SEQS}: is not an integer",
            ),
            (
                Engine::Vllm,
                "max_num_seqs=0",
                "max_num_seqs=0: must be at least 1",
            ),
            (
                Engine::Vllm,
                "--max-model-len 128q",
                "--max-model-len 128q: is not an integer",
            ),
            (
                Engine::Vllm,
                "-tp 8 --gpu-memory-utilization",
                "--gpu-memory-utilization: states no value",
            ),
            (
                Engine::Sglang,
                "--tp 8 --mem-fraction-static=1.2",
                "--mem-fraction-static 1.2: must be a fraction",
            ),
            (
                Engine::Sglang,
                "--cuda-graph-max-bs 8k",
                "--cuda-graph-max-bs 8k: is not an integer",
            ),
            (
                Engine::Sglang,
                "--max-running-requests --tp 8",
                "--max-running-requests --tp: is not an integer",
            ),
            // the record's own engine judges a row both tables hold: SGLang takes whole GiB
            (
                Engine::Sglang,
                "--cpu-offload-gb 1.5",
                "--cpu-offload-gb 1.5: is not an integer",
            ),
        ] {
            let got = refused(engine, flags);
            assert!(
                got.as_deref().is_some_and(|g| g.starts_with(why)),
                "{flags}: {got:?}"
            );
        }
        for (engine, flags) in [
            (
                Engine::Vllm,
                "TP_SIZE=8 DCP=1 MTP=off GPU_MEM=0.94 KV_CACHE_DTYPE=fp8 (cpp, 56KB cutoff)",
            ),
            (
                Engine::Vllm,
                "--max-num-batched-tokens 8K --max-model-len auto --gpu-memory-utilization=0.9,",
            ),
            (Engine::Vllm, "--cpu-offload-gb 1.5 --kv-cache-dtype fp8"),
            (
                Engine::Sglang,
                "--tp-size 4 (server line: --tp-size 4/8) --port 3x",
            ),
            (
                Engine::Sglang,
                "--nsa-prefill-backend b12x --cuda-graph-bs 1 2 4 8",
            ),
            (
                Engine::Sglang,
                "context_length of 128k, no --mem-fraction-static given",
            ),
        ] {
            assert_eq!(refused(engine, flags), None, "{flags}");
        }
    }

    proptest::proptest! {
        /// Any text is judged without a panic, and settings stated with values the launch takes
        /// are never refused, however the words around them run.
        #[test]
        fn stated_values_the_launch_takes_are_never_refused(
            noise in "[ -~\\PC]{0,80}",
            fraction in 0.01f64..=1.0,
            seqs in 1u32..100_000,
            k in 1u32..512,
        ) {
            let _ = unreadable_values(Engine::Vllm, &noise);
            let _ = unreadable_values(Engine::Sglang, &noise);
            let vllm = format!(
                "GPU_MEM={fraction} --max-num-seqs {seqs} --max-model-len {k}k --max-num-batched-tokens={k}K"
            );
            let sglang = format!("--mem-fraction-static {fraction} --max-running-requests={seqs} --cuda-graph-bs 1 2 {k}");
            proptest::prop_assert_eq!(unreadable_values(Engine::Vllm, &vllm), None);
            proptest::prop_assert_eq!(unreadable_values(Engine::Sglang, &sglang), None);
        }
    }
}
