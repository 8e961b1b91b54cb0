use super::flags;
use super::*;
use models::{KvDtype, ModelSpec};

/// A launch line with every flag of issue 13, as a user pastes it.
pub(crate) const LAUNCH_LINE: &str = r#"CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 SGLANG_ENABLE_JIT_DEEPGEMM=0 \
python3 -m sglang.launch_server \
    --model-path nvidia/GLM-5-NVFP4 --trust-remote-code \
    --host 0.0.0.0 --port 30000 \
    --tensor-parallel-size 8 --pipeline-parallel-size 1 \
    --expert-parallel-size 1 --data-parallel-size 1 \
    --quantization modelopt_fp4 --kv-cache-dtype fp8_e4m3 \
    --attention-backend flashinfer --moe-runner-backend flashinfer_cutlass \
    --nsa-decode-backend trtllm --nsa-prefill-backend trtllm --fp8-gemm-backend cutlass \
    --chunked-prefill-size -1 --max-total-tokens 300000 --context-length 32768 \
    --disable-radix-cache --enable-mixed-chunk --schedule-policy lpm \
    --cuda-graph-max-bs 128 --mem-frac 0.85 \
    --reasoning-parser glm45 --tool-call-parser glm45 2>&1 | tee server.log"#;

fn entry<'a>(a: &'a SglangArgs, given: &str) -> &'a FlagEntry {
    a.entries
        .iter()
        .find(|e| e.given == given)
        .unwrap_or_else(|| panic!("{given} not in {:?}", a.entries))
}

fn glm5() -> ModelSpec {
    ModelSpec::preset("glm-5-nvfp4").unwrap()
}

fn rtx_tp8() -> DefaultsContext {
    DefaultsContext {
        gpu_memory_bytes: 97_887 << 20,
        tp: 8,
        pp: 1,
        dp_attention_size: 1,
    }
}

#[test]
fn a_real_launch_line_is_read_as_argparse_reads_it() {
    let a = from_launch_line(LAUNCH_LINE).unwrap();
    assert_eq!(
        a.env[0],
        ("CUDA_VISIBLE_DEVICES".into(), "0,1,2,3,4,5,6,7".into())
    );
    assert_eq!(
        a.command.as_deref(),
        Some("python3 -m sglang.launch_server")
    );
    assert_eq!(a.model_path(), Some("nvidia/GLM-5-NVFP4"));
    let s = a.sizes();
    assert_eq!(
        (s.tp, s.pp, s.ep, s.dp),
        (Some(8), Some(1), Some(1), Some(1))
    );
    assert_eq!(entry(&a, "--mem-frac").class, FlagClass::Modelled);
    assert!(
        entry(&a, "--mem-frac")
            .note
            .as_deref()
            .unwrap()
            .contains("--mem-fraction-static")
    );
    assert_eq!(entry(&a, "--host").class, FlagClass::Recorded);
    assert_eq!(entry(&a, "--trust-remote-code").value, None);
    let nsa = entry(&a, "--nsa-decode-backend");
    assert_eq!(nsa.class, FlagClass::Modelled);
    assert_eq!(nsa.dest.as_deref(), Some("nsa_decode_backend"));
    assert_eq!(entry(&a, "--fp8-gemm-backend").class, FlagClass::Unknown);
    assert_eq!(
        entry(&a, "--fp8-gemm-backend").dest.as_deref(),
        Some("fp8_gemm_runner_backend")
    );
    let line = a.not_modelled_line().unwrap();
    for f in [
        "--host 0.0.0.0",
        "--port 30000",
        "--fp8-gemm-backend cutlass",
        "--reasoning-parser glm45",
    ] {
        assert!(line.contains(f), "{f} missing from: {line}");
    }
    assert!(!line.contains("--kv-cache-dtype"), "{line}");
    assert!(!line.contains("--nsa-decode-backend"), "{line}");

    let r = a.server_options(&rtx_tp8(), &glm5()).unwrap();
    let o = &r.options;
    assert_eq!(o.kv_cache_dtype, Some(KvDtype::Fp8));
    assert_eq!(o.mem_fraction_static, 0.85);
    assert_eq!(o.context_length, Some(32768));
    assert_eq!(o.max_total_tokens, Some(300_000));
    // Chunked prefill off: a whole prompt up to the context length at once.
    assert_eq!(o.chunked_prefill_size, 32768);
    assert!(o.disable_radix_cache && o.enable_mixed_chunk);
    assert_eq!(o.schedule_policy, "lpm");
    assert_eq!(o.cuda_graph_max_bs, 128);
    assert_eq!(o.quantization.as_deref(), Some("modelopt_fp4"));
    assert_eq!(o.moe_runner_backend.as_deref(), Some("flashinfer_cutlass"));
    assert_eq!(o.attention_backend.as_deref(), Some("flashinfer"));
    assert_eq!(o.moe_a2a_backend, None);
}

#[test]
fn absent_flags_take_sglangs_defaults_for_the_gpu_and_layout() {
    let a = from_launch_line("python -m sglang.launch_server --model zai-org/GLM-4.7-FP8 --tp 8")
        .unwrap();
    let r = a
        .server_options(&rtx_tp8(), &ModelSpec::preset("glm-4.7-fp8").unwrap())
        .unwrap();
    // What the user's server printed for the same GPU and layout.
    assert_eq!(r.options.mem_fraction_static, 0.848);
    assert_eq!(r.options.chunked_prefill_size, 8192);
    assert_eq!(r.options.cuda_graph_max_bs, 512);
    assert_eq!(r.options.page_size, 1);
    assert_eq!(
        r.notes,
        [
            "SGLang's defaults for 97887 MiB GPUs at TP8: --chunked-prefill-size 8192, --cuda-graph-max-bs 512, --mem-fraction-static 0.848"
        ]
    );
    // And TP2 of the same GPUs: a smaller graph batch, a larger static share.
    let tp2 = DefaultsContext { tp: 2, ..rtx_tp8() };
    let r2 = a
        .server_options(&tp2, &ModelSpec::preset("glm-4.7-fp8").unwrap())
        .unwrap();
    assert_eq!(r2.options.cuda_graph_max_bs, 256);
    assert!(r2.options.mem_fraction_static > 0.848);
}

/// Splits `server_args=ServerArgs(k=v, …)` into pairs at top-level commas (what the server-log
/// parser hands over; written here only to feed the test).
fn dump_pairs(line: &str) -> Vec<(String, String)> {
    let body = &line[line.find("ServerArgs(").unwrap() + 11..line.rfind(')').unwrap()];
    let (mut out, mut cur, mut depth, mut quote) = (Vec::new(), String::new(), 0i32, None);
    for c in body.chars() {
        match (quote, c) {
            (Some(q), _) => {
                cur.push(c);
                if c == q {
                    quote = None;
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.push(c);
            }
            (None, '(' | '[' | '{') => {
                depth += 1;
                cur.push(c);
            }
            (None, ')' | ']' | '}') => {
                depth -= 1;
                cur.push(c);
            }
            (None, ',') if depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.iter()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[test]
fn the_users_server_args_dump_is_read() {
    let log = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/observations/logs/glm47-fp8-tp8-calibration.log"
    ))
    .unwrap();
    let line = log.lines().nth(1).unwrap();
    let pairs = dump_pairs(line);
    assert_eq!(pairs.len(), 319);
    let a = from_pairs(&pairs).unwrap();
    assert_eq!(a.model_path(), Some("zai-org/GLM-4.7-FP8"));
    assert_eq!(a.sizes().tp, Some(8));
    assert_eq!(a.sizes().nnodes, Some(1));
    let r = a
        .server_options(&rtx_tp8(), &ModelSpec::preset("glm-4.7-fp8").unwrap())
        .unwrap();
    let o = &r.options;
    assert_eq!(o.mem_fraction_static, 0.848);
    assert_eq!(o.chunked_prefill_size, 8192);
    assert_eq!(o.max_prefill_tokens, 16384);
    assert!(o.disable_cuda_graph);
    assert_eq!(o.cuda_graph_max_bs, 512);
    assert_eq!(o.kv_cache_dtype, None);
    assert_eq!(o.moe_a2a_backend, None);
    assert_eq!(o.attention_backend.as_deref(), Some("flashinfer"));
    assert_eq!(o.schedule_policy, "fcfs");
    assert_eq!(o.page_size, 1);
    assert_eq!(o.context_length, None);
    assert_eq!(o.speculative, None);
    // Every value of the dump was SGLang's own: nothing is left to defaults.
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    let unknown = a
        .entries
        .iter()
        .filter(|e| e.class == FlagClass::Unknown)
        .count();
    let modelled = a
        .entries
        .iter()
        .filter(|e| e.class == FlagClass::Modelled)
        .count();
    assert!(modelled >= 25, "{modelled}");
    assert!(unknown > 200, "{unknown}");
    let warn = a.not_modelled_line().unwrap();
    // The first set unknowns are named, the rest counted, so the warning stays readable.
    assert!(warn.contains("tokenizer_worker_num=1"), "{warn}");
    assert!(!warn.contains("nsa_decode_backend='fa3'"), "{warn}");
    // `cuda_graph_bs` (the list SGLang generated up to its `cuda_graph_max_bs`),
    // `nsa_prefill_backend`, `nsa_decode_backend` and `scheduler_recv_interval` are modelled,
    // and the five offload fields (`cpu_offload_gb=0`, `offload_group_size=-1`, …: off)
    assert!(warn.contains("60 more set"), "{warn}");
    let sizes = a.ints(&flags::CUDA_GRAPH_BS).unwrap();
    assert_eq!(sizes.iter().max(), Some(&512));
    assert_eq!(r.options.cuda_graph_max_bs, 512);
    assert!(!warn.contains("lora_paths=None"), "{warn}");
    assert!(warn.len() < 2_000, "{}", warn.len());
    assert!(
        !a.not_modelled()
            .iter()
            .any(|e| e.spelled() == "nsa_decode_backend='fa3'")
    );
    assert_eq!(r.options.nsa.decode.as_deref(), Some("fa3"));
}

#[test]
fn bad_modelled_values_are_one_line_errors_naming_the_flag() {
    for (line, want) in [
        ("--tp 0", "--tp 0: must be at least 1"),
        ("--tp eight", "--tp eight: is not an integer"),
        ("--tp $TP", "shell variables are not expanded"),
        ("--mem-fraction-static 1.5", "must be a fraction"),
        (
            "--kv-cache-dtype fp8",
            "--kv-cache-dtype fp8: is not one of auto, fp8_e5m2, fp8_e4m3",
        ),
        ("--kv-cache-dtype fp4_e2m1", "FP4 KV cache is not modelled"),
        ("--chunked-prefill-size 0", "or -1 to disable"),
        ("--disable-radix-cache=true", "takes no value"),
        ("--moe-a2a-backend deepepp", "one of none, deepep"),
        ("--context-length", "expects an integer"),
        (
            "--nsa-prefill-backend flashmla",
            "--nsa-prefill-backend flashmla: is not one of flashmla_sparse",
        ),
        (
            "--nsa-decode-backend flashmla",
            "--nsa-decode-backend flashmla: is not one of flashmla_sparse",
        ),
        (
            "--scheduler-recv-interval 0",
            "--scheduler-recv-interval 0: must be at least 1",
        ),
    ] {
        let e = from_launch_line(line).unwrap_err().to_string();
        assert!(e.contains(want), "{line}: {e}");
        assert!(!e.contains('\n'));
    }
    // A flag shardwise does not know is never an error, whatever its value.
    let a = from_launch_line("--tp 2 --fp8-gemm-backend whatever --cuda-graph-bs 1 2 4 8").unwrap();
    assert_eq!(
        entry(&a, "--cuda-graph-bs").value.as_deref(),
        Some("1 2 4 8")
    );
    assert!(from_launch_line("--pp 2").unwrap().sizes().pp.is_none());
}

#[test]
fn speculative_flags_follow_sglang() {
    let model = glm5();
    let spec = |line: &str| {
        from_launch_line(line)
            .and_then(|a| a.server_options(&rtx_tp8(), &model))
            .map(|r| r.options.speculative.unwrap())
    };
    let s = spec("--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --speculative-accept-length 2.6").unwrap();
    assert_eq!((s.num_steps, s.eagle_topk, s.num_draft_tokens), (3, 1, 4));
    assert_eq!(s.accept_length, Some(2.6));
    // topk 1: SGLang forces num_steps + 1 draft tokens.
    let s = spec(
        "--speculative-algorithm NEXTN --speculative-num-steps 2 --speculative-num-draft-tokens 8",
    )
    .unwrap();
    assert_eq!(s.num_draft_tokens, 3);
    // Nothing but the algorithm: SGLang's choice for the architecture.
    let s = spec("--speculative-algorithm EAGLE --speculative-draft-model-path x/y").unwrap();
    assert_eq!((s.num_steps, s.eagle_topk, s.num_draft_tokens), (5, 4, 8));
    assert_eq!(s.draft_model_path.as_deref(), Some("x/y"));
    let e = spec("--speculative-algorithm EAGLE --speculative-eagle-topk 2").unwrap_err();
    assert!(e.to_string().contains("--speculative-num-steps"), "{e}");
    let e = spec("--speculative-accept-length 2").unwrap_err();
    assert!(
        e.to_string().contains("needs --speculative-algorithm"),
        "{e}"
    );
    let e = spec(
        "--speculative-algorithm EAGLE --speculative-num-steps 1 --speculative-accept-length 3",
    )
    .unwrap_err();
    assert!(e.to_string().contains("draft tokens"), "{e}");
}

#[test]
fn node_flags_are_recorded_and_typed() {
    let a = from_launch_line("sglang serve --model-path x/y --tp 16 --nnodes 2 --node-rank 1 --dist-init-addr 10.0.0.1:5000").unwrap();
    assert_eq!(a.command.as_deref(), Some("sglang serve"));
    let s = a.sizes();
    assert_eq!((s.nnodes, s.node_rank), (Some(2), Some(1)));
    assert_eq!(s.dist_init_addr.as_deref(), Some("10.0.0.1:5000"));
    assert_eq!(entry(&a, "--nnodes").class, FlagClass::Recorded);
    assert!(from_launch_line("--nnodes two").is_err());
}

#[test]
fn the_same_flag_two_ways_must_agree() {
    let cli = from_words(&["--tp".into(), "8".into()], Origin::CommandLine).unwrap();
    let line = from_launch_line("python -m sglang.launch_server --tensor-parallel-size 4").unwrap();
    let e = cli.clone().merge(line).unwrap_err().to_string();
    assert!(
        e.contains("--tp 8 (command line)")
            && e.contains("--tensor-parallel-size 4 (--server-args)"),
        "{e}"
    );
    let same = from_launch_line("--tp-size 8 --mem-fraction-static 0.80").unwrap();
    let m = cli.merge(same).unwrap();
    assert_eq!(m.sizes().tp, Some(8));
    let f = from_words(
        &["--mem-fraction-static".into(), "0.8".into()],
        Origin::CommandLine,
    )
    .unwrap();
    assert!(f.merge(from_launch_line("--mem-frac 0.8").unwrap()).is_ok());
}

#[test]
fn repeated_flags_keep_the_last_and_lines_without_a_command_are_refused() {
    let a = from_launch_line("--tp 2 --tp 4").unwrap();
    assert_eq!(a.sizes().tp, Some(4));
    assert!(
        a.entries[1]
            .note
            .as_deref()
            .unwrap()
            .contains("overrides --tp 2")
    );
    assert!(from_launch_line("").is_err());
    assert!(from_launch_line("echo hello").is_err());
    let a = from_launch_line("cd /srv && python -m sglang.launch_server --port 1 stray").unwrap();
    assert_eq!(a.entries.last().unwrap().given, "stray");
}

#[test]
fn try_flags_list_modelled_values_canonically() {
    let a = from_launch_line(
        "--tp 8 --mem-frac 0.9 --moe-a2a-backend deepep --disable-cuda-graph --host h",
    )
    .unwrap();
    assert_eq!(
        a.modelled_flags(),
        [
            "--disable-cuda-graph",
            "--host h",
            "--mem-fraction-static 0.9",
            "--moe-a2a-backend deepep"
        ]
    );
}

#[test]
fn recorded_flags_may_differ_between_client_and_server() {
    let cli = from_words(&["--host".into(), "127.0.0.1".into()], Origin::CommandLine).unwrap();
    let m = cli
        .merge(from_launch_line("--host 0.0.0.0 --nnodes 1").unwrap())
        .unwrap();
    assert_eq!(m.get(&flags::HOST).unwrap().spelled, "--host 127.0.0.1");
    let cli = from_words(&["--nnodes".into(), "2".into()], Origin::CommandLine).unwrap();
    assert!(cli.merge(from_launch_line("--nnodes 1").unwrap()).is_err());
}

/// The GLM-5 launch line the RTX PRO 6000 community runs (rtx6kpro models/glm5.md, "Docker run
/// with MTP + b12x"): the community checkpoint, the b12x MoE and the one-shot PCIe all-reduce.
#[test]
fn the_community_glm5_launch_line_is_read() {
    let line = "python3 -m sglang.launch_server --model-path festr2/GLM-5-NVFP4-MTP \
        --tensor-parallel-size 8 --quantization modelopt_fp4 --kv-cache-dtype bf16 \
        --cuda-graph-max-bs 32 --max-running-requests 64 --mem-fraction-static 0.85 \
        --enable-pcie-oneshot-allreduce --enable-pcie-oneshot-allreduce-fusion \
        --attention-backend flashinfer --fp4-gemm-backend b12x --moe-runner-backend b12x \
        --speculative-algorithm NEXTN --speculative-num-steps 4 \
        --speculative-num-draft-tokens 6 --speculative-eagle-topk 1";
    let a = from_launch_line(line).unwrap();
    let model = ModelSpec::resolve(a.model_path().unwrap()).unwrap();
    assert_eq!(model.name, "glm-5-nvfp4");
    let r = a.server_options(&rtx_tp8(), &model).unwrap();
    assert_eq!(r.options.moe_runner_backend.as_deref(), Some("b12x"));
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("b12x build not stated, taken as the newest modelled")),
        "{:?}",
        r.notes
    );
    assert_eq!(r.options.pcie_custom_all_reduce_max_bytes, Some(48 * 1024));
    let four = DefaultsContext { tp: 4, ..rtx_tp8() };
    let r4 = a.server_options(&four, &model).unwrap();
    assert_eq!(
        r4.options.pcie_custom_all_reduce_max_bytes,
        Some(120 * 1024)
    );
    let off = from_launch_line(&format!("{line} --disable-custom-all-reduce")).unwrap();
    let r = off.server_options(&rtx_tp8(), &model).unwrap();
    assert_eq!(r.options.pcie_custom_all_reduce_max_bytes, None);
}

/// An `nargs="+"` value reads alike however either engine's line or dump writes it; a word that
/// is no count makes it no list (the row's reader then refuses it).
#[test]
fn int_lists_read_alike_from_words_and_dumps() {
    for text in ["1 2 4 8", "[1, 2, 4, 8]", "1,2,4,8", " [1,2, 4 ,8] "] {
        assert_eq!(int_list(text), Some(vec![1, 2, 4, 8]), "{text}");
    }
    for text in ["", "[]", "1 two 4", "1 -2", "1.5", "4294967296"] {
        assert_eq!(int_list(text), None, "{text}");
    }
}

/// `--cuda-graph-bs` (issue 33: an SGLang flag made modelled in SGLang's folder alone): its
/// largest size is the graph limit over `--cuda-graph-max-bs` (`server_args.py`), which sets the
/// largest decode replayed as a graph and the graph memory the default
/// `--mem-fraction-static` reserves (its cost: `tests/launch_line.rs`). Read alike from a
/// launch line, a dump and a record.
#[test]
fn cuda_graph_bs_sets_the_graph_limit_as_sglang_does() {
    let model = ModelSpec::preset("glm-4.7-fp8").unwrap();
    let base = "python -m sglang.launch_server --model-path zai-org/GLM-4.7-FP8 --tp 8";
    let opts = |more: &str| {
        let a = from_launch_line(&format!("{base} {more}")).unwrap();
        assert!(
            a.not_modelled_line()
                .is_none_or(|w| !w.contains("--cuda-graph-bs")),
            "{more}"
        );
        a.server_options(&rtx_tp8(), &model).unwrap()
    };
    let default = opts("");
    let listed =
        opts("--cuda-graph-bs 1 2 4 8 16 32 --cuda-graph-max-bs 256 --disable-radix-cache");
    assert_eq!(listed.options.cuda_graph_max_bs, 32);
    assert!(
        listed.options.disable_radix_cache,
        "the list ends at the next option"
    );
    assert!(
        listed
            .notes
            .iter()
            .any(|n| n.contains("overridden by --cuda-graph-bs")),
        "{:?}",
        listed.notes
    );
    // less graph memory reserved: a larger static share
    assert!(default.options.cuda_graph_max_bs > 32);
    assert!(listed.options.mem_fraction_static > default.options.mem_fraction_static);
    // the server's dump and a record's text say the same
    let dump = from_pairs(&[("cuda_graph_bs".into(), "[1, 2, 4, 8, 16, 32]".into())]).unwrap();
    assert_eq!(
        dump.ints(&flags::CUDA_GRAPH_BS),
        Some(vec![1, 2, 4, 8, 16, 32])
    );
    let record = crate::engine::Engine::Sglang.record_knobs(
        "--cuda-graph-max-bs 256 --cuda-graph-bs 1 2 4 8 16 32 --tp 8",
        "",
        &mut Vec::new(),
    );
    assert_eq!(record.cuda_graph_max_bs, Some(32));
    // what SGLang's argparse refuses
    for (more, says) in [
        ("--cuda-graph-bs 0 4", "at least 1"),
        ("--cuda-graph-bs two", "integers"),
        ("--cuda-graph-bs", "integers"),
    ] {
        let err = from_launch_line(&format!("{base} {more}")).unwrap_err();
        assert!(err.to_string().contains(says), "{more}: {err}");
    }
}

/// An all-to-all MoE backend makes SGLang run the experts expert-parallel over the whole TP
/// group (`ServerArgs._handle_a2a_moe`: `ep_size = tp_size`, whatever `--ep-size` says): the
/// SGLang cookbook's DP-attention lines name `--moe-a2a-backend deepep` and no `--ep-size`; a
/// backend shardwise has not read the rule for keeps the size given.
#[test]
fn an_all_to_all_backend_sets_the_expert_parallel_size_to_tp() {
    let ep = |line: &str| from_launch_line(line).unwrap().sizes().ep;
    let cookbook = "--model-path zai-org/GLM-5.2-FP8 --tp 8 --dp 8 --enable-dp-attention --moe-a2a-backend deepep";
    assert_eq!(ep(cookbook), Some(8));
    assert_eq!(ep(&format!("{cookbook} --ep-size 4")), Some(8));
    assert_eq!(ep("--tp 4 --moe-a2a-backend mooncake"), Some(4));
    assert_eq!(ep("--tp 8 --moe-a2a-backend none"), None);
    assert_eq!(ep("--tp 8 --ep-size 2 --moe-a2a-backend pplx"), Some(2));
    assert_eq!(ep("--tp 8 --ep-size 2"), Some(2));
    // no --tp: every layout is ranked, each with the backend where it runs
    assert_eq!(ep("--moe-a2a-backend deepep"), None);
}
