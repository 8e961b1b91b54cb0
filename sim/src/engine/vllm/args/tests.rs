use super::*;
use crate::machine::Machine;
use models::Layout;

const KIMI: &str = r#"VLLM_ENABLE_PCIE_ALLREDUCE=1 NCCL_DEBUG=WARN vllm serve moonshotai/Kimi-K2.6 \
  -tp 8 --decode-context-parallel-size 4 --gpu-memory-utilization 0.94 \
  --max_model_len 262144 --max-num-seqs 128 --max-num-batched-tokens 4096 \
  --kv-cache-dtype fp8 --compilation-config '{"cudagraph_mode": "FULL_AND_PIECEWISE", "max_cudagraph_capture_size": 256}' \
  --speculative-config '{"method": "eagle3", "model": "lightseekorg/kimi-k2.5-eagle3-mla", "num_speculative_tokens": 3}' \
  --trust-remote-code --port 8000 --some-new-flag x"#;

fn line(text: &str) -> VllmLine {
    VllmLine::parse(text).unwrap().expect("a vLLM line")
}

#[test]
fn reads_a_vllm_serve_line_as_vllm_reads_it() {
    let l = line(KIMI);
    assert_eq!(l.model.as_deref(), Some("moonshotai/Kimi-K2.6"));
    let s = l.sizes(true).unwrap();
    assert_eq!((s.tp, s.pp, s.ep), (Some(8), Some(1), Some(1)));
    let k = l.knobs().unwrap();
    assert_eq!(k.decode_context_parallel, Some(4));
    assert_eq!(k.memory_fraction, Some((Engine::Vllm, 0.94)));
    assert_eq!(k.context_length, Some(262_144));
    assert_eq!(
        (
            k.max_running_requests,
            k.chunked_prefill_size,
            k.cuda_graph_max_bs
        ),
        (Some(128), Some(4096), Some(256))
    );
    assert_eq!(k.kv_cache_dtype, Some(models::KvDtype::Fp8));
    assert_eq!(
        k.pcie_all_reduce.map(|p| p.max_bytes),
        Some(Some(56 * 1024))
    );
    let spec = l.speculative().unwrap().unwrap();
    assert_eq!(
        (spec.algorithm.as_str(), spec.num_draft_tokens),
        ("EAGLE3", 4)
    );
    assert_eq!(
        spec.draft_model_path.as_deref(),
        Some("lightseekorg/kimi-k2.5-eagle3-mla")
    );
    let warn = l.not_modelled_line().unwrap();
    assert!(
        warn.contains("--port 8000") && warn.contains("NCCL_DEBUG=WARN"),
        "{warn}"
    );
    assert!(
        warn.contains("unknown to shardwise, ignored: --some-new-flag x"),
        "{warn}"
    );
}

#[test]
fn the_openai_server_module_takes_model_and_expert_parallel_dp() {
    let l = line(
        "python -m vllm.entrypoints.openai.api_server --model zai-org/GLM-4.7-FP8 -dp 8 --enable-expert-parallel --enforce-eager",
    );
    assert_eq!(l.model.as_deref(), Some("zai-org/GLM-4.7-FP8"));
    let s = l.sizes(true).unwrap();
    assert_eq!(
        (s.tp, s.ep, s.enable_dp_attention),
        (Some(8), Some(8), true)
    );
    assert!(l.knobs().unwrap().disable_cuda_graph);
}

/// DP ranks without `--enable-expert-parallel`: a MoE model's run in lockstep with the experts
/// sliced by TP over all of them (`FusedMoEParallelConfig.make` flattens TP across DP), which is
/// attention DP with TP-sliced experts; a dense model's are independent servers, refused; TP
/// inside each DP rank is refused in vLLM's words, with or without EP.
#[test]
fn dp_ranks_are_attention_dp_for_a_moe_model_and_servers_for_a_dense_one() {
    let s = line("vllm serve m -dp 8").sizes(true).unwrap();
    assert_eq!(
        (s.tp, s.ep, s.dp, s.enable_dp_attention),
        (Some(8), Some(1), Some(8), true)
    );
    let pp = line("vllm serve m -dp 4 -pp 2").sizes(true).unwrap();
    assert_eq!((pp.tp, pp.pp, pp.ep), (Some(4), Some(2), Some(1)));
    let dense = line("vllm serve m -dp 2")
        .sizes(false)
        .unwrap_err()
        .to_string();
    assert!(dense.contains("independent servers"), "{dense}");
    for (text, tries) in [
        ("vllm serve m -dp 4 -tp 2", "try -dp 8 (attention"),
        (
            "vllm serve m -dp 4 -tp 2 --enable-expert-parallel",
            "try -dp 8 --enable-expert-parallel (attention",
        ),
    ] {
        let e = line(text).sizes(true).unwrap_err().to_string();
        assert!(
            e.contains(tries) && !e.contains("dp-attention"),
            "{text}: {e}"
        );
    }
    assert!(line("vllm serve m -dp 2").dp_without_ep());
    assert!(!line("vllm serve m -dp 2 --enable-expert-parallel").dp_without_ep());
}

/// The line's own DCP must divide its TP (vLLM refuses to start otherwise): refused with the
/// sizes that would run, never run silently at DCP 1.
#[test]
fn a_dcp_that_does_not_divide_the_lines_tp_is_refused() {
    for (text, says) in [
        (
            "vllm serve m -tp 4 --decode-context-parallel-size 8",
            "--decode-context-parallel-size 8: must divide --tensor-parallel-size 4",
        ),
        ("vllm serve m -tp 4 -dcp 8", "use a DCP of 2 or 4"),
        ("vllm serve m -tp 8 -dcp 3", "use a DCP of 2"),
        ("vllm serve m -dcp 2", "use a DCP of 1"),
    ] {
        let e = line(text).sizes(true).unwrap_err().to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{text}: {e}");
    }
    for ok in ["vllm serve m -tp 8 -dcp 8", "vllm serve m -tp 8 -dcp 2"] {
        assert!(line(ok).sizes(true).is_ok(), "{ok}");
    }
}

#[test]
fn bad_values_are_one_line_errors_and_sglang_lines_are_not_vllm() {
    for (text, says) in [
        ("vllm serve m --gpu-memory-utilization 1.5", "fraction"),
        ("vllm serve m -tp 0", "at least 1"),
        ("vllm serve m --kv-cache-dtype fp4", "not one of"),
        ("vllm serve m --compilation-config {cudagraph", "JSON"),
        ("vllm serve m --enforce-eager=1", "no value"),
    ] {
        let e = VllmLine::parse(text).unwrap_err().to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{text}: {e}");
    }
    assert!(
        VllmLine::parse("python -m sglang.launch_server --tp 8")
            .unwrap()
            .is_none()
    );
    assert!(!is_vllm_line(
        "python -m sglang.launch_server --model-path vllm --tp 8"
    ));
    assert!(is_vllm_line("vllm serve m"));
}

#[test]
fn nccl_environment_is_read_as_for_sglang() {
    // NCCL's P2P settings are modelled (machine::nccl_env), its protocol is refused
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let l = line("NCCL_P2P_DISABLE=1 vllm serve m -tp 8");
    assert!(l.server_options(&Layout::tp(8), &machine).is_ok());
    let l = line("NCCL_PROTO=LL vllm serve m -tp 8");
    let e = l.server_options(&Layout::tp(8), &machine).unwrap_err();
    assert!(e.to_string().contains("NCCL_PROTO"), "{e}");
}

/// `method: mtp` drafts with the checkpoint's own MTP layers, whatever `model` names (the
/// rtx6kpro GLM-5.1 runs name the target itself); a separate draft keeps its path.
#[test]
fn an_mtp_method_drafts_with_the_checkpoints_own_layers() {
    let spec = |cfg: &str| {
        let line =
            format!("vllm serve lukealonso/GLM-5.1-NVFP4-MTP -tp 8 --speculative-config '{cfg}'");
        VllmLine::parse(&line)
            .unwrap()
            .unwrap()
            .speculative()
            .unwrap()
            .unwrap()
    };
    let own = spec(
        r#"{"model": "lukealonso/GLM-5.1-NVFP4-MTP", "method": "mtp", "num_speculative_tokens": 3}"#,
    );
    assert_eq!(
        (own.algorithm.as_str(), own.draft_model_path),
        ("NEXTN", None)
    );
    let deepseek = spec(r#"{"method": "deepseek_mtp", "num_speculative_tokens": 1}"#);
    assert_eq!(deepseek.draft_model_path, None);
    let eagle = spec(r#"{"model": "x/eagle3", "method": "eagle3", "num_speculative_tokens": 2}"#);
    assert_eq!(eagle.draft_model_path.as_deref(), Some("x/eagle3"));
}

/// The `try:` line's speculative flags (`ServingEngine::speculative_flags`) read back as the
/// options they were written from: vLLM's spelling round-trips.
#[test]
fn speculative_flags_read_back_as_written() {
    use crate::engine::ServingEngine;
    use crate::engine::draft::recipe_draft;
    let back = |s: &SpeculativeOptions| {
        let flags = crate::engine::vllm::Vllm.speculative_flags(s);
        let l = line(&format!("vllm serve zai-org/GLM-5.1 -tp 8 {flags}"));
        l.speculative().unwrap().unwrap()
    };
    let mtp = SpeculativeOptions {
        num_steps: 2,
        num_draft_tokens: 3,
        ..recipe_draft("MTP", None)
    };
    let got = back(&mtp);
    assert_eq!(
        (got.num_steps, got.num_draft_tokens, got.draft_model_path),
        (2, 3, None)
    );
    let eagle = recipe_draft("EAGLE3", Some("lightseekorg/kimi-k2.5-eagle3-mla"));
    let got = back(&eagle);
    assert_eq!(
        (
            got.algorithm.as_str(),
            got.num_steps,
            got.draft_model_path.as_deref()
        ),
        ("EAGLE3", 3, Some("lightseekorg/kimi-k2.5-eagle3-mla"))
    );
}

#[test]
fn moe_backend_names_the_moe_runner() {
    let l = line("vllm serve lukealonso/GLM-5.1-NVFP4-MTP -tp 8 --moe-backend b12x");
    assert_eq!(
        l.knobs().unwrap().moe_runner_backend.as_deref(),
        Some("b12x")
    );
    assert!(!l.not_modelled().iter().any(|f| f.contains("moe-backend")));
}

/// The fork's B12X verify switch on a launch line: `0` the extend kernel, `1` the decode kernel;
/// unset, a launch line names no build, so the route is not known.
#[test]
fn the_b12x_verify_switch_is_read_from_the_environment() {
    let glm = |env: &str| {
        let text = format!(
            "{env} vllm serve lukealonso/GLM-5.2-NVFP4 -tp 8 --attention-backend B12X_MLA_SPARSE"
        );
        line(&text).knobs().unwrap().b12x_mla_verify
    };
    use crate::b12x_build::B12xMlaVerify::{Decode, Extend};
    assert_eq!(glm("VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE=0"), Some(Extend));
    assert_eq!(glm("VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE=1"), Some(Decode));
    assert_eq!(glm("NCCL_DEBUG=WARN"), None);
}

/// What vLLM's argparse refuses in a human-readable integer is refused with its reason (a
/// decimal with a binary suffix names the decimal spelling), never read as something else.
#[test]
fn human_readable_integers_vllm_refuses_are_refused_with_the_reason() {
    for (value, says) in [
        ("1.5K", "did you mean 1.5k"),
        ("1k5", "K/M/G/T (×1024) suffix"),
        ("-2", "must be at least 1"),
        ("0", "must be at least 1"),
        ("128 k", "suffix"),
        ("1e5", "suffix"),
        (".5k", "suffix"),
        ("5.k", "suffix"),
        ("99999999999999999999", "suffix"),
        ("5000000000", "implausibly large"),
        ("4.3g", "implausibly large"),
        ("9999999T", "implausibly large"),
    ] {
        let text = format!("vllm serve x -tp 8 --max-model-len '{value}'");
        let e = VllmLine::parse(&text).unwrap_err().to_string();
        assert!(
            e.contains("--max-model-len") && e.contains(says),
            "{value}: {e}"
        );
    }
    // `auto` only where vLLM takes it
    let e = VllmLine::parse("vllm serve x --max-num-batched-tokens auto")
        .unwrap_err()
        .to_string();
    assert!(e.contains("is not an integer or"), "{e}");
}

/// A config dataclass's JSON takes vLLM's human-readable numbers outside its strings
/// (`--compilation-config '{"max_cudagraph_capture_size": 1K}'` is 1,024); inside a string, or in
/// `--speculative-config` (plain `json.loads`), they stay text and are not numbers.
#[test]
fn compilation_config_json_takes_human_readable_numbers() {
    let cc = |json: &str| {
        line(&format!("vllm serve x -tp 8 --compilation-config '{json}'"))
            .knobs()
            .map(|k| k.cuda_graph_max_bs)
    };
    assert_eq!(
        cc(r#"{"max_cudagraph_capture_size": 1K}"#).unwrap(),
        Some(1024)
    );
    assert_eq!(
        cc(r#"{"max_cudagraph_capture_size":0.5k}"#).unwrap(),
        Some(500)
    );
    assert_eq!(
        cc(r#"{"max_cudagraph_capture_size": 256}"#).unwrap(),
        Some(256)
    );
    for refused in [
        r#"{"max_cudagraph_capture_size": 1.5K}"#,
        r#"{"max_cudagraph_capture_size": 1kb}"#,
    ] {
        let e = VllmLine::parse(&format!("vllm serve x --compilation-config '{refused}'"))
            .and_then(|l| l.map(|l| l.knobs()).transpose())
            .err()
            .map(|e| e.to_string());
        assert!(
            e.is_some_and(|e| e.contains("--compilation-config")),
            "{refused}"
        );
    }
    let expand = |t: &str| super::expand_human_numbers(t).unwrap();
    assert_eq!(
        expand(r#"{"a": "8k", "b": 8k, "c8k": -2M}"#),
        r#"{"a": "8k", "b": 8000, "c8k": -2097152}"#
    );
    assert_eq!(
        expand(r#"{"e": "x\"1k", "f": 1t}"#),
        r#"{"e": "x\"1k", "f": 1000000000000}"#
    );
    assert_eq!(expand("x1k 1k_ 12"), "x1k 1k_ 12");
}

mod human_int {
    use crate::engine::sglang::args::{HumanInt, human_int};
    use proptest::prelude::*;

    proptest! {
        /// Plain integers, with Python's `_` separators, read as themselves.
        #[test]
        fn plain_integers_read_as_themselves(n in any::<u32>(), sep in any::<bool>()) {
            let mut text = n.to_string();
            if sep && text.len() > 1 {
                text.insert(1, '_');
            }
            prop_assert_eq!(human_int(&text, false), Ok(HumanInt::Value(i64::from(n))));
            prop_assert_eq!(human_int(&format!(" {text} "), true), Ok(HumanInt::Value(i64::from(n))));
        }

        /// `k m g t` multiply by powers of 1000 (a decimal truncated as Python's `int(float)`),
        /// `K M G T` by powers of 1024.
        #[test]
        fn suffixes_multiply_as_vllm_s(n in 0u32..100_000, frac in 0u32..10, i in 0usize..4) {
            let (dec, bin) = (["k", "m", "g", "t"][i], ["K", "M", "G", "T"][i]);
            let whole = i64::from(n);
            prop_assert_eq!(
                human_int(&format!("{n}{bin}"), false),
                Ok(HumanInt::Value(whole << (10 * (i + 1))))
            );
            prop_assert_eq!(
                human_int(&format!("{n}{dec}"), false),
                Ok(HumanInt::Value(whole * 1000i64.pow(i as u32 + 1)))
            );
            let decimal = format!("{n}.{frac}");
            let want = (decimal.parse::<f64>().unwrap() * 1000f64.powi(i as i32 + 1)) as i64;
            prop_assert_eq!(human_int(&format!("{decimal}{dec}"), false), Ok(HumanInt::Value(want)));
            let binary_decimal = format!("{decimal}{bin}");
            prop_assert!(human_int(&binary_decimal, false).is_err());
        }

        /// Any text is read or refused, never a panic; what is read is an integer vLLM would
        /// read too (here: the text holds a digit), and `auto` comes back only where it is taken.
        #[test]
        fn any_text_is_read_or_refused(text in "\\PC{0,12}", auto in any::<bool>()) {
            match human_int(&text, auto) {
                Ok(HumanInt::Value(_)) => prop_assert!(text.chars().any(|c| c.is_ascii_digit())),
                Ok(HumanInt::Auto) => prop_assert!(auto),
                Err(e) => prop_assert!(!e.is_empty()),
            }
        }
    }
}

/// vLLM's dotted config arguments read as vLLM reads them: `--speculative-config.method mtp
/// --speculative-config.num_speculative_tokens 3` turns MTP 3 on (before, "unknown, ignored":
/// the server was priced without speculation), `-cc.max_cudagraph_capture_size=64` sets the
/// graph limit, a dotted value replaces a JSON value given earlier, the `-sc` / `-cc` aliases
/// name the flags, and a dotted argument of a flag that takes no JSON is refused.
#[test]
fn dotted_config_arguments_read_as_vllm_merges_them() {
    let l = line(
        "vllm serve zai-org/GLM-5 -tp 8 --speculative-config.method mtp \
         --speculative-config.num_speculative_tokens 3 -cc.max_cudagraph_capture_size=64",
    );
    let spec = l.speculative().unwrap().expect("MTP is on");
    assert_eq!(spec.num_draft_tokens, 4);
    assert_eq!(l.knobs().unwrap().cuda_graph_max_bs, Some(64));
    let warn = l.not_modelled_line().unwrap_or_default();
    assert!(!warn.contains("speculative"), "{warn}");
    // the dotted object comes after the JSON and replaces it
    let l = line(
        "vllm serve zai-org/GLM-5 -tp 8 -sc '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}' \
         -sc.num_speculative_tokens=2",
    );
    assert_eq!(l.speculative().unwrap().unwrap().num_draft_tokens, 3);
    let l = line("vllm serve x -tp 8 -sc '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'");
    assert_eq!(l.speculative().unwrap().unwrap().num_draft_tokens, 2);
    for (text, says) in [
        ("vllm serve x --max-model-len.x 3", "takes no JSON config"),
        ("vllm serve x -tp 8 -cc.mode", "expects a value"),
    ] {
        let e = VllmLine::parse(text).unwrap_err().to_string();
        assert!(e.contains(says), "{text}: {e}");
    }
}

mod launch_words {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any line of vLLM-like words, dotted config arguments and human-readable numbers
        /// among them, is read or refused with a one-line error, never a panic; what is read
        /// answers every reader without one.
        #[test]
        fn any_launch_words_are_read_or_refused(
            words in proptest::collection::vec(
                prop_oneof![
                    Just("-tp".to_string()),
                    Just("8".to_string()),
                    Just("--max-model-len".to_string()),
                    Just("--kv-cache-memory-bytes".to_string()),
                    Just("--speculative-config".to_string()),
                    "(-sc|-cc|--speculative-config|--compilation-config|--max-model-len)\\.[a-z_]{1,8}(\\.[a-z_]{1,6})?\\+?(=[0-9a-zA-Z.,\"{}:]{0,8})?",
                    "[0-9]{1,4}(\\.[0-9])?[kKmMgGtT]?",
                    "\\{\"[a-z_]{1,8}\": ?[0-9a-z\"]{1,5}\\}",
                    "auto|-1|mtp|True",
                ],
                0..14,
            )
        ) {
            let text = format!("vllm serve m {}", words.join(" "));
            if let Ok(Some(l)) = VllmLine::parse(&text) {
                let _ = l.knobs();
                let _ = l.speculative();
                let _ = (l.sizes(true), l.sizes(false));
                let _ = l.not_modelled_line();
            }
        }
    }
}

/// `--config FILE` (a YAML file of flags both engines read) is refused on either engine's line:
/// its flags are not on the line, and a server priced without them would run on defaults it
/// does not use.
#[test]
fn a_yaml_config_file_of_flags_is_refused_not_ignored() {
    for text in [
        "vllm serve m -tp 8 --config serve.yaml",
        "python -m sglang.launch_server --model-path m --tp 8 --config=serve.yaml",
    ] {
        let e = match VllmLine::parse(text) {
            Err(e) => e.to_string(),
            Ok(_) => crate::engine::sglang::args::from_launch_line(text)
                .unwrap_err()
                .to_string(),
        };
        assert!(
            e.contains("--config serve.yaml") && e.contains("put them on the launch line"),
            "{text}: {e}"
        );
    }
}

/// `--optimization-level` in every spelling vLLM's parser takes (`-O0`, `-O=0`, `-O 0`): level 0
/// runs without CUDA graphs unless the compilation config names a mode (the level only fills
/// unset fields), level 1's piecewise graphs are said not to be priced as such, and a level
/// vLLM does not have is refused. Before, `-O0` was "unknown, ignored" and priced with graphs.
#[test]
fn optimization_levels_read_in_every_spelling() {
    for o in [
        "-O0",
        "-O=0",
        "-O 0",
        "--optimization-level 0",
        "--optimization-level=0",
    ] {
        let l = line(&format!("vllm serve x -tp 8 {o}"));
        assert!(l.knobs().unwrap().disable_cuda_graph, "{o}");
        assert!(
            l.not_modelled_line().is_none(),
            "{o}: {:?}",
            l.not_modelled_line()
        );
    }
    for o in ["-O2", "-O3", "-O 3"] {
        assert!(
            !line(&format!("vllm serve x {o}"))
                .knobs()
                .unwrap()
                .disable_cuda_graph,
            "{o}"
        );
    }
    let full = line(r#"vllm serve x -O0 -cc '{"cudagraph_mode": "FULL"}'"#);
    assert!(!full.knobs().unwrap().disable_cuda_graph);
    let piecewise = line("vllm serve x -O1");
    assert!(!piecewise.knobs().unwrap().disable_cuda_graph);
    assert!(piecewise.not_modelled_line().unwrap().contains("piecewise"));
    let e = VllmLine::parse("vllm serve x -O9").unwrap_err().to_string();
    assert!(
        e.contains("--optimization-level 9") && e.contains("0, 1, 2, 3"),
        "{e}"
    );
}

/// A cpp-backend cutoff below one decode row's message is priced as stated but said: the fork
/// still sends single-row messages to its custom kernel (`VLLM_CPP_AR_IGNORE_CUTOFF_MAX_ROWS`).
/// The usual 56KB says nothing, nor does the b12x backend, which ignores the variable.
#[test]
fn a_cpp_cutoff_below_one_row_is_said_not_modelled_for_single_rows() {
    let serve = "vllm serve moonshotai/Kimi-K2.6 -tp 8";
    let note = |env: &str| line(&format!("{env} {serve}")).not_modelled_line();
    let zero = note("VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_CPP_AR_1STAGE_NCCL_CUTOFF=0").unwrap();
    assert!(
        zero.contains("VLLM_CPP_AR_1STAGE_NCCL_CUTOFF=0") && zero.contains("single-row"),
        "{zero}"
    );
    assert!(note("VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_CPP_AR_1STAGE_NCCL_CUTOFF=56KB").is_none());
    assert!(
        note("VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ALLREDUCE_BACKEND=b12x VLLM_CPP_AR_1STAGE_NCCL_CUTOFF=0")
            .is_none()
    );
}
