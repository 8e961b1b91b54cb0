//! Admission and the per-layout options against the cases of issues 21 and 23.
use super::*;
use crate::cost::memory;
use models::footprint::footprint;

fn user_gpu() -> u64 {
    97_887 << 20
}

fn defaults(spec: &ModelSpec, layout: &Layout) -> ServerOptions {
    let none = crate::engine::sglang::args::from_words(
        &[],
        crate::engine::sglang::args::Origin::CommandLine,
    )
    .unwrap();
    layout_options(&none, user_gpu(), layout, spec)
        .unwrap()
        .options
}

/// SGLang's default fraction follows the layout: 0.848 at TP8, far less with DP attention over
/// 8 ranks (3 × bs × dp and 1.5 × bs × dp MiB more reserved above 300), so GLM-5-NVFP4's
/// replicated attention does not fit there.
#[test]
fn each_layout_gets_its_own_fraction() {
    let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
    let tp8 = Layout::tp(8);
    let dpa = Layout {
        dp_attention: true,
        ..tp8
    };
    assert_eq!(defaults(&spec, &tp8).mem_fraction_static, 0.848);
    let f = defaults(&spec, &dpa).mem_fraction_static;
    assert_eq!(f, 0.66);
    let fp = footprint(&spec, &dpa).unwrap();
    let err = memory::checked_plan(&spec, &fp, user_gpu(), &defaults(&spec, &dpa))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--mem-fraction-static 0.66") && err.contains("static budget"),
        "{err}"
    );
}

/// Kimi-K2.5 INT4 at TP8 on the user's GPUs, as its server ran: 0.7715 (the vision-tower
/// adjustment), a KV pool of a few thousand tokens, and ~19 requests of 256 in / 100 out at once
/// (the server's log); the warning names the fraction, the budget and the admitted requests.
#[test]
fn kimi_k25_int4_is_kv_bound_with_the_admitted_requests() {
    let spec = ModelSpec::preset("kimi-k2.5").unwrap();
    let tp8 = Layout::tp(8);
    let opts = ServerOptions {
        disable_cuda_graph: true,
        ..defaults(&spec, &tp8)
    };
    assert!((opts.mem_fraction_static - 0.7715).abs() < 1e-4);
    let fp = footprint(&spec, &tp8).unwrap();
    let plan = memory::checked_plan(&spec, &fp, user_gpu(), &opts).unwrap();
    let admitted = admitted_requests(&plan, &tp8, Engine::Sglang, 256, 100);
    assert_eq!(admitted, plan.kv_tokens / 356);
    assert!(
        admitted < 64,
        "{admitted} requests of {} tokens",
        plan.kv_tokens
    );
    let w = kv_bound_warning(&spec, &plan, &tp8, &opts, 256, 100, 1000).unwrap();
    assert!(w.contains(&format!("about {admitted} of the 1000")), "{w}");
    assert!(w.contains("--mem-fraction-static 0.77"), "{w}");
    assert!(kv_bound_warning(&spec, &plan, &tp8, &opts, 256, 100, 4).is_none());
}

/// Admission: prompt + min(output, 4096) per request, the pool per DP replica, capped at
/// `max_running_requests`.
#[test]
fn admission_counts_the_clipped_output_and_the_replicas() {
    let spec = ModelSpec::preset("glm-4.7-fp8").unwrap();
    let tp8 = Layout::tp(8);
    let fp = footprint(&spec, &tp8).unwrap();
    let mut plan = memory::plan(&spec, &fp, user_gpu(), &defaults(&spec, &tp8));
    plan.kv_tokens = 100_000;
    plan.max_running_requests = 2048;
    assert_eq!(
        admitted_requests(&plan, &tp8, Engine::Sglang, 1000, 1000),
        50
    );
    assert_eq!(
        admitted_requests(&plan, &tp8, Engine::Sglang, 904, 100_000),
        20,
        "clipped at 4096"
    );
    plan.max_running_requests = 10;
    assert_eq!(
        admitted_requests(&plan, &tp8, Engine::Sglang, 1000, 1000),
        10
    );
    let dpa = Layout {
        dp_attention: true,
        ..tp8
    };
    assert_eq!(
        admitted_requests(&plan, &dpa, Engine::Sglang, 1000, 1000),
        80
    );
}

/// vLLM counts a request's whole context (no 4,096-token clip, nothing reserved at admission)
/// and its warning speaks vLLM's flags and scheduler, never SGLang's.
#[test]
fn a_vllm_kv_bound_warning_counts_whole_contexts_in_vllms_words() {
    let spec = ModelSpec::preset("glm-4.7-fp8").unwrap();
    let tp8 = Layout::tp(8);
    let fp = footprint(&spec, &tp8).unwrap();
    let sglang = defaults(&spec, &tp8);
    let mut plan = memory::plan(&spec, &fp, user_gpu(), &sglang);
    plan.kv_tokens = 100_000;
    plan.max_running_requests = 2048;
    // 904 + 100,000 a request: no request holds its whole output at once, where SGLang's clip
    // admits 20
    assert_eq!(
        admitted_requests(&plan, &tp8, Engine::Vllm, 904, 100_000),
        0
    );
    assert_eq!(admitted_requests(&plan, &tp8, Engine::Vllm, 1000, 1000), 50);
    assert_eq!(admitted_requests(&plan, &tp8, Engine::Vllm, 9000, 1000), 10);
    let vllm = ServerOptions {
        engine: Engine::Vllm,
        ..sglang
    };
    let w = kv_bound_warning(&spec, &plan, &tp8, &vllm, 9000, 1000, 64).unwrap();
    for said in [
        "--gpu-memory-utilization",
        "about 10 of the 64 requests",
        "(9000 + 1000 tokens)",
        "preempt",
        "--kv-cache-dtype fp8)",
        "--max-num-batched-tokens",
    ] {
        assert!(w.contains(said), "{said}: {w}");
    }
    for never in [
        "SGLang",
        "--mem-fraction-static",
        "--cuda-graph-max-bs",
        "fp8_e4m3",
    ] {
        assert!(!w.contains(never), "{never}: {w}");
    }
    assert!(kv_bound_warning(&spec, &plan, &tp8, &vllm, 9000, 1000, 10).is_none());
    // GLM-4.7's 8 KV heads fill TP 8: vLLM refuses any DCP there, so none is offered; an MLA
    // model's one latent head shards over the whole group, up to what the launch already runs
    assert!(!w.contains("--decode-context-parallel-size"), "{w}");
    let mla = ModelSpec::preset("glm-5-nvfp4").unwrap();
    let warn = |opts: &ServerOptions| kv_bound_warning(&mla, &plan, &tp8, opts, 9000, 1000, 64);
    let w = warn(&vllm).unwrap();
    assert!(
        w.contains(
            "--decode-context-parallel-size 8 (each GPU of the TP group holds 1/8 of every request's cache)"
        ),
        "{w}"
    );
    let at_8 = ServerOptions {
        decode_context_parallel: 8,
        ..vllm.clone()
    };
    assert!(
        !warn(&at_8)
            .unwrap()
            .contains("--decode-context-parallel-size")
    );
}
