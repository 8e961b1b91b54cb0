//! A `vllm serve` line with every modelled flag goes through `run`, `advise` and `predict` as
//! vLLM, and each modelled flag moves the prediction the way vLLM's behaviour says it should.

use crate::common;

use models::{Layout, ModelSpec};
use sim::cost::{IterationModel, Knobs, ServedModel};
use sim::engine::vllm::args::VllmLine;
use sim::machine::Machine;

const MACHINE: &str = "rtx-pro-6000-x8-baremetal";
const BASE: &str = "vllm serve moonshotai/Kimi-K2-Thinking -tp 8 --gpu-memory-utilization 0.94 --kv-cache-dtype fp8 --max-model-len 65536";

/// Every modelled flag and environment setting of the vLLM table.
const FULL: &str = r#"VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 vllm serve moonshotai/Kimi-K2-Thinking --tensor-parallel-size 8 --pipeline-parallel-size 1 --data-parallel-size 1 --enable-expert-parallel --decode-context-parallel-size 2 --gpu-memory-utilization 0.92 --max-model-len 131072 --max-num-seqs 256 --max-num-batched-tokens 4096 --kv-cache-dtype fp8 --compilation-config '{"cudagraph_mode": "FULL_AND_PIECEWISE", "max_cudagraph_capture_size": 256}' --speculative-config '{"method": "eagle3", "model": "lightseekorg/kimi-k2.5-eagle3-mla", "num_speculative_tokens": 2}' --disable-custom-all-reduce --quantization compressed-tensors --port 8000"#;

/// The served model of `line` (speculative where its `--speculative-config` says so).
fn cost(line: &str) -> ServedModel {
    let machine = Machine::resolve(MACHINE).unwrap();
    let spec = ModelSpec::preset("kimi-k2-thinking-int4").unwrap();
    let l = VllmLine::parse(line).unwrap().unwrap();
    let s = l.sizes(true).unwrap();
    let layout = Layout {
        tp: s.tp.unwrap(),
        pp: s.pp.unwrap(),
        ep: s.ep.unwrap(),
        dp_attention: s.enable_dp_attention,
    };
    let (opts, _) = l.server_options(&layout, &machine).unwrap();
    ServedModel::new(&machine, &spec, layout, &opts, Knobs::default()).unwrap()
}

fn kv(line: &str) -> u64 {
    cost(line).memory().kv_tokens
}

fn tok_s(line: &str, streams: u32, context: u32) -> f64 {
    cost(line).steady_decode(streams, context).tok_per_s
}

#[test]
fn each_modelled_flag_moves_the_prediction_as_vllm_would() {
    let with = |more: &str| format!("{BASE} {more}");
    // memory: the share of the card, the profiling run's tokens, the KV dtype, DCP, graphs
    assert!(kv(&with("--gpu-memory-utilization 0.9")) < kv(BASE));
    assert!(kv(&with("--max-num-batched-tokens 32768")) < kv(BASE));
    let bf16 = kv(&with("--kv-cache-dtype bfloat16"));
    assert!((kv(BASE) as f64 / bf16 as f64 - 2.0).abs() < 0.01);
    assert!(kv(&with("-dcp 8")) > 7 * kv(BASE));
    assert!(
        kv(&format!(
            "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 {BASE}"
        )) < kv(BASE)
    );
    // --max-model-len beyond the pool: vLLM refuses to start
    let long = cost(&with(
        "--max-model-len 262144 --gpu-memory-utilization 0.85",
    ));
    assert!(
        long.memory()
            .notes
            .iter()
            .any(|n| n.contains("refuses to start"))
    );
    // scheduling and graphs
    assert!(tok_s(&with("--max-num-seqs 32"), 128, 1024) < tok_s(BASE, 128, 1024));
    assert!(tok_s(&with("--enforce-eager"), 1, 1024) < tok_s(BASE, 1, 1024));
    let few_graphs = r#"--compilation-config '{"cudagraph_capture_sizes": [1, 2, 4, 8]}'"#;
    assert!(tok_s(&with(few_graphs), 16, 1024) < tok_s(BASE, 16, 1024));
    let no_graphs = r#"--compilation-config '{"cudagraph_mode": "NONE"}'"#;
    assert!(tok_s(&with(no_graphs), 1, 1024) < tok_s(BASE, 1, 1024));
    // all-reduce: the community PCIe kernel beats NCCL on small messages, unless disabled
    let pcie = format!("VLLM_ENABLE_PCIE_ALLREDUCE=1 {BASE}");
    assert!(tok_s(&pcie, 1, 1024) > tok_s(BASE, 1, 1024));
    assert_eq!(
        tok_s(&format!("{pcie} --disable-custom-all-reduce"), 1, 1024),
        tok_s(BASE, 1, 1024)
    );
    // DCP: collectives at short context; at long context d× the requests fit (the records'
    // DCP 1 run skips 8 × 128k streams: KV budget exceeded)
    assert!(tok_s(&with("-dcp 8"), 1, 1024) < tok_s(BASE, 1, 1024));
    let long_ctx = with("--max-model-len 262144");
    assert!(tok_s(&format!("{long_ctx} -dcp 8"), 8, 131_072) > tok_s(&long_ctx, 8, 131_072));
    // layouts: pipeline stages and expert parallelism change the step
    assert_ne!(tok_s(&with("-tp 4 -pp 2"), 1, 1024), tok_s(BASE, 1, 1024));
    assert_ne!(
        tok_s(&with("--enable-expert-parallel"), 8, 1024),
        tok_s(BASE, 8, 1024)
    );
    let spec = r#"--speculative-config '{"method": "eagle3", "model": "lightseekorg/kimi-k2.5-eagle3-mla", "num_speculative_tokens": 3}'"#;
    assert_ne!(tok_s(&with(spec), 1, 1024), tok_s(BASE, 1, 1024));
}

/// The bench_serving workload the command-line tests run.
const WORKLOAD: [&str; 10] = [
    "--dataset-name",
    "random",
    "--random-input-len",
    "1000",
    "--random-output-len",
    "100",
    "--num-prompts",
    "32",
    "--max-concurrency",
    "8",
];

#[test]
fn a_line_with_every_flag_runs_through_run_advise_and_predict_as_vllm() {
    let common = ["--machine", MACHINE, "--server-args", FULL];
    let workload = WORKLOAD;
    for cmd in ["run", "advise"] {
        let args: Vec<&str> = [cmd]
            .iter()
            .chain(&common)
            .chain(&workload)
            .copied()
            .collect();
        let (code, out, err) = common::sim_output(&args);
        assert_eq!(code, 0, "{cmd}: {err}");
        assert!(out.contains("vLLM"), "{cmd} says which engine: {out}");
        assert!(
            err.contains("--port 8000"),
            "{cmd} lists the recorded flag: {err}"
        );
    }
    let (code, out, err) = common::sim_output(
        &[
            &["predict"][..],
            &common,
            &["--batch", "4", "--context", "8192"],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "predict: {err}");
    assert!(
        err.contains("engine: vLLM") && out.contains("KV tokens"),
        "{out}\n{err}"
    );
    // a vLLM line is never read as SGLang: SGLang's flags beside it are refused
    let (code, _, err) = common::sim_output(&[
        "predict",
        "--machine",
        MACHINE,
        "--server-args",
        BASE,
        "--mem-fraction-static",
        "0.8",
        "--batch",
        "1",
        "--context",
        "1000",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("vLLM launch line") && err.lines().count() == 1,
        "{err}"
    );
}

/// `sim run --format json` of a `vllm serve` line names its engine and gives the layout's flags
/// in vLLM's spelling under an engine-neutral key (issue 33: it printed `"sglang_flags": "--tp 8"`
/// and no engine); an SGLang run keeps SGLang's spelling under the same key.
#[test]
fn a_run_says_its_engine_and_the_flags_in_its_spelling() {
    let run = |line: &str| {
        let mut args = vec!["run", "--machine", MACHINE, "--server-args", line];
        args.extend(WORKLOAD);
        args.extend(["--format", "json"]);
        let (code, out, err) = common::sim_output(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let v = run(&format!("{BASE} -dcp 2"));
    assert_eq!(v["engine"], "vllm");
    assert_eq!(v["flags"], "-tp 8 -dcp 2");
    assert_eq!(v["schema_version"], 2);
    assert!(v.get("sglang_flags").is_none(), "{v}");
    let s = run("python -m sglang.launch_server --model-path moonshotai/Kimi-K2-Thinking --tp 8");
    assert_eq!(s["engine"], "sglang");
    assert_eq!(s["flags"], "--tp 8");
    // predict says the same
    let line = format!("{BASE} -dcp 2");
    let (code, out, err) = common::sim_output(&[
        "predict",
        "--machine",
        MACHINE,
        "--server-args",
        &line,
        "--batch",
        "4",
        "--context",
        "8192",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let p: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(p["engine"], "vllm");
    assert_eq!(p["layouts"][0]["flags"], "-tp 8 -dcp 2");
}

/// `sim run --output-file` of a `vllm serve` line writes the line bench_serving would against
/// that server: `--backend vllm` and the model the line serves, asked of the engine's launch (it
/// wrote `sglang` and the model's preset name, read from SGLang's flags only).
#[test]
fn a_vllm_runs_bench_line_names_the_vllm_backend_and_the_served_model() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("runs.jsonl");
    let file = file.to_str().unwrap();
    let mut args = vec!["run", "--machine", MACHINE, "--server-args", BASE];
    args.extend(WORKLOAD);
    args.extend(["--output-file", file]);
    let (code, _, err) = common::sim_output(&args);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(file).unwrap();
    let line: serde_json::Value = serde_json::from_str(&text.replace("Infinity", "null")).unwrap();
    assert_eq!(line["backend"], "vllm", "{line}");
    assert_eq!(
        line["server_info"]["model_path"], "moonshotai/Kimi-K2-Thinking",
        "{line}"
    );
}

#[test]
fn advise_engine_vllm_ranks_vllm_layouts_without_a_line() {
    let mut args = vec![
        "advise",
        "--engine",
        "vllm",
        "--machine",
        MACHINE,
        "--model",
        "kimi-k2-thinking-int4",
    ];
    args.extend(WORKLOAD);
    let (code, out, err) = common::sim_output(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("vLLM flags") && out.contains("try: vllm serve moonshotai/Kimi-K2-Thinking -"),
        "{out}"
    );
    assert!(
        !out.contains("--ep-size"),
        "no SGLang flags in a vLLM ranking: {out}"
    );
}

#[test]
fn a_vllm_server_log_is_read_as_vllm_not_as_sglang() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("vllm.log");
    std::fs::write(
        &log,
        "(EngineCore_DP0 pid=7) INFO 05-14 10:00:00 [kv_cache_utils.py:1087] GPU KV cache size: 478,992 tokens\n\
         (APIServer pid=1) INFO 05-14 10:01:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 92.4 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%\n",
    )
    .unwrap();
    let (code, _, err) = common::sim_output(&[
        "validate",
        "--machine",
        MACHINE,
        "--model",
        "kimi-k2-thinking-int4",
        "--server-log",
        log.to_str().unwrap(),
    ]);
    // read by the vLLM reader (`sim::server_log::vllm`): without its start the launch is unknown
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no `non-default args` line") && err.contains("vLLM server's start"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `--block-size` (issue 33's demonstration of a vLLM flag made modelled in vLLM's folder and
/// the cost effect): vLLM's argparse takes only its `BlockSize` values; a request holds whole
/// blocks, so larger blocks waste more of the cache per request and admit fewer at a context
/// that is no multiple of the block. A record's flag text reads it alike.
#[test]
fn block_size_is_read_alike_and_costs_whole_blocks() {
    use models::Layout;
    use sim::engine::vllm::args::VllmLine;
    use sim::machine::Machine;
    let line = |t: &str| VllmLine::parse(t).unwrap().expect("a vLLM line");
    let base = "vllm serve zai-org/GLM-4.7-FP8 -tp 8 --max-model-len 8192";
    let err = VllmLine::parse(&format!("{base} --block-size 7")).unwrap_err();
    assert!(err.to_string().contains("is not one of 1, 8, 16"), "{err}");
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let spec = models::ModelSpec::resolve("glm-4.7-fp8").unwrap();
    let layout = Layout::tp(8);
    let fp = models::footprint::footprint(&spec, &layout).unwrap();
    let capacity = |more: &str, context: u64| {
        let l = line(&format!("{base}{more}"));
        let (o, notes) = l.server_options(&layout, &machine).unwrap();
        let from_record =
            sim::engine::Engine::Vllm.record_knobs(&format!("{base}{more}"), "", &mut Vec::new());
        assert_eq!(
            from_record.kv_page_tokens,
            l.knobs().unwrap().kv_page_tokens
        );
        let plan = sim::cost::memory::plan(&spec, &fp, machine.memory_bytes(), &o);
        assert_eq!(plan.kv_tokens % u64::from(o.page_size), 0, "whole blocks");
        let n = sim::cost::memory::max_requests_at_context(&plan, &layout, context);
        (o.page_size, n, plan.kv_tokens, notes)
    };
    let (default_block, n16, kv16, _) = capacity("", 1000);
    assert_eq!(default_block, sim::engine::vllm::VLLM_BLOCK_SIZE);
    let (block, n256, kv256, notes) = capacity(" --block-size 256", 1000);
    assert_eq!(block, 256);
    assert!(
        notes.iter().any(|n| n.contains("blocks of 256")),
        "{notes:?}"
    );
    // 1000 tokens hold 63 blocks of 16 (1008) or 4 of 256 (1024): the pool's tokens over those
    assert_eq!(n16, kv16 / 1008);
    assert_eq!(n256, kv256 / 1024);
    assert!(n256 < n16, "{n256} vs {n16}");
    // at a whole number of blocks nothing is wasted
    assert_eq!(capacity(" --block-size 256", 1024).1, kv256 / 1024);
}

/// `--max-cudagraph-capture-size` and `--cudagraph-capture-sizes` (issue 33: a vLLM flag made
/// modelled in vLLM's folder alone): the largest captured decode batch, the neutral CUDA-graph
/// limit; a larger decode runs without a graph (`config/vllm.py` `_set_cudagraph_sizes`), so it
/// pays every kernel launch. vLLM refuses the setting given both as a flag and in
/// `--compilation-config`, and a maximum other than the largest size. A record reads it alike.
#[test]
fn cudagraph_capture_flags_bound_the_graphed_decode_batch() {
    let with = |more: &str| format!("{BASE} {more}");
    let graph_max = |more: &str| {
        let l = VllmLine::parse(&with(more)).unwrap().unwrap();
        let from_record = sim::engine::Engine::Vllm.record_knobs(&with(more), "", &mut Vec::new());
        assert_eq!(
            from_record.cuda_graph_max_bs,
            l.knobs().unwrap().cuda_graph_max_bs
        );
        let machine = Machine::resolve(MACHINE).unwrap();
        let (o, _) = l.server_options(&Layout::tp(8), &machine).unwrap();
        assert!(
            l.not_modelled_line()
                .is_none_or(|w| !w.contains("cudagraph")),
            "{more}"
        );
        o.cuda_graph_max_bs
    };
    assert_eq!(graph_max(""), 512);
    assert_eq!(graph_max("--max-cudagraph-capture-size 64"), 64);
    assert_eq!(
        graph_max("--cudagraph-capture-sizes 1 2 4 8 16 32 64 --max-num-seqs 256"),
        64
    );
    assert_eq!(
        graph_max("--cudagraph-capture-sizes 1 2 4 64 --max-cudagraph-capture-size 64"),
        64
    );
    // a decode above the limit pays its launches; one within it does not change
    let capped = with("--max-cudagraph-capture-size 64");
    assert!(tok_s(&capped, 128, 1024) < tok_s(BASE, 128, 1024));
    assert_eq!(tok_s(&capped, 32, 1024), tok_s(BASE, 32, 1024));
    let listed = with("--cudagraph-capture-sizes 1 2 4 8 16 32 64");
    assert_eq!(tok_s(&listed, 128, 1024), tok_s(&capped, 128, 1024));
    // what vLLM refuses
    for (more, says) in [
        (
            r#"--max-cudagraph-capture-size 64 --compilation-config '{"max_cudagraph_capture_size": 64}'"#,
            "mutually exclusive",
        ),
        (
            "--cudagraph-capture-sizes 1 2 4 --max-cudagraph-capture-size 8",
            "largest capture size (4)",
        ),
        (
            "--cudagraph-capture-sizes 1 two 4",
            "not a list of integers",
        ),
        ("--cudagraph-capture-sizes 0 4", "at least 1"),
    ] {
        let err = VllmLine::parse(&with(more))
            .map_err(|e| e.to_string())
            .and_then(|l| l.unwrap().knobs().map(|_| ()).map_err(|e| e.to_string()))
            .unwrap_err();
        assert!(err.contains(says), "{more}: {err}");
    }
}

/// The b12x fork's all-reduce + residual add + RMSNorm kernel: with the `b12x` PCIe backend,
/// the fusion pass on and a stated cap, a one-token decode step drops each block's own add +
/// RMSNorm kernel (two a layer); two streams (two tokens) keep them, and so does a line without
/// the pass, the cap or the `b12x` backend. An unreadable cap is refused.
#[test]
fn the_forks_fused_all_reduce_rms_norm_saves_two_kernels_a_layer_at_one_token() {
    let pcie = "VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ALLREDUCE_BACKEND=b12x";
    let cap = "VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE=84KB";
    let pass = "-cc.pass_config.fuse_allreduce_rms=True";
    let fused = format!("{pcie} {cap} {BASE} {pass}");
    let l = VllmLine::parse(&fused).unwrap().unwrap();
    assert_eq!(
        l.knobs().unwrap().fused_add_rms_norm_max_bytes,
        Some(84 * 1024)
    );
    let json = format!(
        r#"{pcie} {cap} {BASE} --compilation-config '{{"pass_config": {{"fuse_allreduce_rms": true}}}}'"#
    );
    let l = VllmLine::parse(&json).unwrap().unwrap();
    assert_eq!(
        l.knobs().unwrap().fused_add_rms_norm_max_bytes,
        Some(84 * 1024)
    );
    for unfused in [
        format!("{pcie} {BASE} {pass}"),
        format!("{pcie} {cap} {BASE}"),
        format!("VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ALLREDUCE_BACKEND=cpp {cap} {BASE} {pass}"),
    ] {
        let l = VllmLine::parse(&unfused).unwrap().unwrap();
        assert_eq!(
            l.knobs().unwrap().fused_add_rms_norm_max_bytes,
            None,
            "{unfused}"
        );
        assert!(
            (tok_s(&unfused, 1, 0) / tok_s(&format!("{pcie} {BASE}"), 1, 0) - 1.0).abs() < 1e-9
        );
    }
    let plain = format!("{pcie} {BASE} {pass}");
    let spec = ModelSpec::preset("kimi-k2-thinking-int4").unwrap();
    let saved_s = 1.0 / tok_s(&plain, 1, 0) - 1.0 / tok_s(&fused, 1, 0);
    // two small kernels (≈ 3.4 µs each, the assumed floor) on each of the model's layers
    let want_s = 2.0 * 3.4e-6 * spec.num_layers as f64;
    assert!(
        (saved_s / want_s - 1.0).abs() < 0.05,
        "{saved_s} vs {want_s}"
    );
    assert!((tok_s(&fused, 2, 0) / tok_s(&plain, 2, 0) - 1.0).abs() < 1e-9);
    let bad = format!("{pcie} VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE=84QB {BASE} {pass}");
    let err = VllmLine::parse(&bad)
        .unwrap()
        .unwrap()
        .knobs()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE"),
        "{err}"
    );
}

/// A vLLM log's `non-default args` list a negated switch as `False` (argparse's
/// `BooleanOptionalAction` defaults to `None`): `'enable_prefix_caching': False` and
/// `'enable_chunked_prefill': False` are the negations a launch gave, read back as
/// `--no-enable-prefix-caching` / `--no-enable-chunked-prefill`, not dropped as defaults; a
/// plain switch's `False` is still its default and left out.
#[test]
fn a_logged_false_of_a_negatable_switch_is_its_negation() {
    use sim::engine::vllm::args::{VllmLine, dump};
    let args = dump::parse(
        "{'model': 'x/y', 'tensor_parallel_size': 4, 'enable_prefix_caching': False, \
         'enable_chunked_prefill': False, 'enforce_eager': False}",
    )
    .unwrap();
    let line = &args.launch_line;
    assert!(line.contains("--no-enable-prefix-caching"), "{line}");
    assert!(line.contains("--no-enable-chunked-prefill"), "{line}");
    assert!(!line.contains("enforce-eager"), "{line}");
    let knobs = VllmLine::parse(line).unwrap().unwrap().knobs().unwrap();
    assert_eq!(knobs.prefix_caching, Some(false));
    assert_eq!(knobs.chunked_prefill, Some(false));
}
