//! A launch line's model-config overrides (vLLM's `--hf-overrides`, SGLang's
//! `--json-model-override-args`): an `index_topk_pattern` of `F` / `S` letters makes the `S`
//! layers reuse the previous layer's DSA top-k, so they run no indexer and hold no index keys
//! (transformers' `GlmMoeDsaConfig`, vLLM's and SGLang's DSA models read it so). The GLM-5.1
//! pattern is the one the rtx6kpro GLM-5.1 DCP page launches with
//! (local-inference-lab/rtx6kpro `models/glm5.1/glm51-vllm-dcp-nccl2127-noxml-2026-05-04.md`).

use models::{Layout, ModelSpec};
use sim::cost::{CostModel, IterationBatch, IterationModel, Knobs};
use sim::engine::vllm::args::VllmLine;
use sim::machine::Machine;

const PATTERN: &str =
    "FFSFSSSFSSFFFSSSFFFSFSSSSSSFFSFFSFFSSFFFFFFSFFFFFSFFSSSSSSFSFFFSFSSSFSFFSFFSSS";
const BASE: &str = "vllm serve lukealonso/GLM-5.1-NVFP4-MTP --tensor-parallel-size 8 --kv-cache-dtype fp8 --attention-backend B12X_MLA_SPARSE --max-model-len 131072";

/// The cost model of a vLLM line for `model`, or its one-line error.
fn model(line: &str, model: &str) -> Result<CostModel, String> {
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let spec = ModelSpec::preset(model).unwrap();
    let l = VllmLine::parse(line).map_err(|e| e.to_string())?.unwrap();
    let (opts, _) = l
        .server_options(&Layout::tp(8), &machine)
        .map_err(|e| e.to_string())?;
    CostModel::new(&machine, &spec, Layout::tp(8), &opts, Knobs::default())
        .map_err(|e| e.to_string())
}

/// One stream's decode step at 100K cached tokens.
fn step_s(cm: &CostModel) -> f64 {
    cm.iteration(&IterationBatch {
        decode_context_tokens: vec![100_000],
        prefill: Vec::new(),
    })
    .latency_s
}

#[test]
fn an_index_topk_pattern_runs_the_indexer_on_its_f_layers_only() {
    let plain = model(BASE, "glm-5.1-nvfp4").unwrap();
    let shared = model(
        &format!("{BASE} --hf-overrides '{{\"index_topk_pattern\": \"{PATTERN}\"}}'"),
        "glm-5.1-nvfp4",
    )
    .unwrap();
    // 38 of 78 layers skip the indexer's scoring of 100K keys: the step is shorter, and the
    // index-key cache (one per own-indexer layer) leaves room for more tokens
    assert!(step_s(&shared) < 0.97 * step_s(&plain));
    assert!(shared.memory().kv_tokens > plain.memory().kv_tokens);
    assert!(
        shared
            .memory_notes()
            .iter()
            .any(|n| n.contains("40 of 78 layers"))
    );
    // the same letters as an indexer_types list read alike
    let types: Vec<&str> = PATTERN
        .chars()
        .map(|c| if c == 'F' { "\"full\"" } else { "\"shared\"" })
        .collect();
    let listed = model(
        &format!(
            "{BASE} --hf-overrides '{{\"indexer_types\": [{}]}}'",
            types.join(",")
        ),
        "glm-5.1-nvfp4",
    )
    .unwrap();
    assert_eq!(step_s(&listed), step_s(&shared));
}

#[test]
fn a_bad_pattern_is_refused_and_other_keys_are_said() {
    let short = model(
        &format!("{BASE} --hf-overrides '{{\"index_topk_pattern\": \"FFS\"}}'"),
        "glm-5.1-nvfp4",
    )
    .unwrap_err();
    assert!(
        short.contains("3 letters") && short.contains("78 layers"),
        "{short}"
    );
    let letter = model(
        &format!(
            "{BASE} --hf-overrides '{{\"index_topk_pattern\": \"{}\"}}'",
            "X".repeat(78)
        ),
        "glm-5.1-nvfp4",
    )
    .unwrap_err();
    assert!(letter.contains("neither F"), "{letter}");
    let not_json = model(&format!("{BASE} --hf-overrides not-json"), "glm-5.1-nvfp4").unwrap_err();
    assert!(not_json.contains("JSON object"), "{not_json}");
    let other = model(
        &format!("{BASE} --hf-overrides '{{\"rope_theta\": 1000000}}'"),
        "glm-5.1-nvfp4",
    )
    .unwrap();
    assert!(
        other
            .memory_notes()
            .iter()
            .any(|n| n.contains("not modelled: rope_theta=1000000")),
        "{:?}",
        other.memory_notes()
    );
    // a model without a DSA indexer: the pattern changes nothing, and says so
    let kimi = "vllm serve moonshotai/Kimi-K2-Thinking --tensor-parallel-size 8";
    let ignored = model(
        &format!("{kimi} --hf-overrides '{{\"index_topk_pattern\": \"FS\"}}'"),
        "kimi-k2-thinking-int4",
    )
    .unwrap();
    assert!(ignored.memory_notes().iter().any(|n| n.contains("ignored")));
}

#[test]
fn sglangs_json_model_override_args_read_as_vllms_hf_overrides() {
    use sim::engine::sglang::args::{DefaultsContext, from_launch_line};
    let spec = ModelSpec::preset("glm-5.1-nvfp4").unwrap();
    let ctx = DefaultsContext {
        gpu_memory_bytes: Machine::resolve("rtx-pro-6000-x8-baremetal")
            .unwrap()
            .memory_bytes(),
        tp: 8,
        pp: 1,
        dp_attention_size: 1,
    };
    let base = "python -m sglang.launch_server --model-path lukealonso/GLM-5.1-NVFP4-MTP --tp 8";
    let options = |more: &str| {
        from_launch_line(&format!("{base} {more}"))
            .map_err(|e| e.to_string())?
            .server_options(&ctx, &spec)
            .map(|r| r.options)
            .map_err(|e| e.to_string())
    };
    let o = options(&format!(
        "--json-model-override-args '{{\"index_topk_pattern\": \"{PATTERN}\"}}'"
    ))
    .unwrap();
    assert_eq!(
        o.model_overrides.index_topk_pattern.as_deref(),
        Some(PATTERN)
    );
    // SGLang's default `{}` overrides nothing
    let none = options("--json-model-override-args '{}'").unwrap();
    assert_eq!(none.model_overrides, Default::default());
    let bad = options("--json-model-override-args '{oops'").unwrap_err();
    assert!(bad.contains("not JSON"), "{bad}");
}

/// The rtx6kpro GLM-5.1 vLLM port's pattern has 79 letters, the 78 layers and the MTP layer
/// (local-inference-lab/rtx6kpro `models/glm5.1/vllm-b12x-nsa-mtp-port-2026-05-02.md`, its
/// `HF_OVERRIDES`): read as the 78 layers' and the same own-indexer count.
#[test]
fn a_pattern_with_the_mtp_layers_letter_reads_the_main_layers() {
    let with_mtp = format!("{PATTERN}F");
    let a = model(
        &format!("{BASE} --hf-overrides '{{\"index_topk_pattern\": \"{with_mtp}\"}}'"),
        "glm-5.1-nvfp4",
    )
    .unwrap();
    assert!(
        a.memory_notes()
            .iter()
            .any(|n| n.contains("40 of 78 layers"))
    );
    let two_more = format!("{PATTERN}FF");
    let err = model(
        &format!("{BASE} --hf-overrides '{{\"index_topk_pattern\": \"{two_more}\"}}'"),
        "glm-5.1-nvfp4",
    )
    .unwrap_err();
    assert!(
        err.contains("80 letters") && err.contains("79 with its MTP"),
        "{err}"
    );
}

/// vLLM holds a Gated-DeltaNet state in the model's dtype unless the config names
/// `mamba_ssm_dtype` (Qwen3.5: float32) or the launch gives `--mamba-ssm-cache-dtype`; SGLang
/// keeps float32. So Qwen3-Next's 256-request decode step under vLLM streams half the state
/// bytes of the same launch with `--mamba-ssm-cache-dtype float32`, and Qwen3.5's does not move.
#[test]
fn vllm_holds_an_unstated_gated_deltanet_state_in_the_models_dtype() {
    let step = |line: &str, preset: &str| {
        let machine = Machine::resolve("b200-x8").unwrap();
        let spec = ModelSpec::preset(preset).unwrap();
        let l = VllmLine::parse(line).unwrap().unwrap();
        let (opts, _) = l.server_options(&Layout::tp(4), &machine).unwrap();
        let cm = CostModel::new(&machine, &spec, Layout::tp(4), &opts, Knobs::default()).unwrap();
        let notes = cm.memory_notes().join(" ");
        let s = cm
            .iteration(&IterationBatch {
                decode_context_tokens: vec![2560; 256],
                prefill: Vec::new(),
            })
            .latency_s;
        (s, notes)
    };
    let next = "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 4";
    let (bf16, said) = step(next, "qwen3-next-80b-a3b");
    let (fp32, _) = step(
        &format!("{next} --mamba-ssm-cache-dtype float32"),
        "qwen3-next-80b-a3b",
    );
    assert!(bf16 < 0.97 * fp32, "{bf16} vs {fp32}");
    assert!(said.contains("2-byte values"), "{said}");
    let q35 = "vllm serve nvidia/Qwen3.5-397B-A17B-NVFP4 --tensor-parallel-size 4";
    let (stated, _) = step(q35, "qwen3.5-397b-a17b-nvfp4");
    let (given, _) = step(
        &format!("{q35} --mamba-ssm-cache-dtype float32"),
        "qwen3.5-397b-a17b-nvfp4",
    );
    assert_eq!(stated, given);
}
