//! CPU weight offload (vLLM's `--cpu-offload-gb` / `--offload-backend prefetch`, SGLang's
//! `--cpu-offload-gb` / `--offload-group-size`): read from either engine's launch line as its
//! source does it, taken off the GPU's memory (a larger KV pool), and priced every forward pass
//! from the host link: zero-copy reads of what the pass touches, whole-layer copies in line, or
//! copies ahead that only cost what the GPU's work does not hide.

use models::{Layout, ModelSpec};
use sim::cost::{IterationModel, Knobs, ServedModel, TimeBreakdown};
use sim::engine::Launch;
use sim::engine::sglang::args::from_launch_line;
use sim::engine::vllm::args::VllmLine;
use sim::machine::Machine;
use sim::options::{OffloadLayers, OffloadParams, OffloadTransfer};

const TP8: Layout = Layout {
    tp: 8,
    pp: 1,
    ep: 1,
    dp_attention: false,
};

fn served(machine: &str, model: &str, line: &str) -> ServedModel {
    let machine = Machine::resolve(machine).unwrap();
    let spec = ModelSpec::preset(model).unwrap();
    let launch = if line.starts_with("vllm") {
        Launch::Vllm(VllmLine::parse(line).unwrap().unwrap())
    } else {
        Launch::Sglang(from_launch_line(line).unwrap())
    };
    let (opts, _) = launch.options(&TP8, &machine, &spec).unwrap();
    ServedModel::new(&machine, &spec, TP8, &opts, Knobs::default()).unwrap()
}

fn step(m: &ServedModel, batch: u32) -> TimeBreakdown {
    m.steady_decode(batch, 1000).iteration.breakdown
}

const LLAMA: &str = "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 8 --max-model-len 8192";

/// A dense model's offloaded layers are read whole across the link every pass, in place: the
/// step gains their bytes at the link's zero-copy rate (less the HBM reads they no longer make),
/// and the GPU holds that much less weight, so the KV pool grows.
#[test]
fn zero_copy_reads_every_offloaded_byte_of_a_dense_model_each_pass() {
    let base = served("h100-x8", "llama-3.1-70b", LLAMA);
    let off = served(
        "h100-x8",
        "llama-3.1-70b",
        &format!("{LLAMA} --cpu-offload-gb 1.5"),
    );
    let plan = off.target().offload().expect("an offload plan");
    assert_eq!(plan.offload.transfer, OffloadTransfer::ZeroCopy);
    let o = &plan.per_gpu[0];
    let budget = 1.5 * (1u64 << 30) as f64;
    // filled parameter by parameter: at least the budget, over it by less than one layer
    assert!(
        o.total_bytes() >= budget && o.total_bytes() < budget * 1.3,
        "{o:?}"
    );
    assert_eq!(o.expert_bytes, 0.0);
    let (b0, b1) = (step(&base, 1), step(&off, 1));
    let want = o.total_bytes() / plan.link.zero_copy_bytes_per_s;
    assert!((b1.host_weight_s - want).abs() < 1e-9 * want, "{b1:?}");
    assert!(b1.weight_read_s < b0.weight_read_s);
    assert!(b1.total_s() > b0.total_s() + 0.8 * want);
    let (w0, w1) = (
        base.memory().weight_bytes_per_gpu as f64,
        off.memory().weight_bytes_per_gpu as f64,
    );
    assert!(
        ((w0 - w1) - o.total_bytes()).abs() < 0.02 * o.total_bytes(),
        "{w0} − {w1}"
    );
    assert!(off.memory().kv_tokens > base.memory().kv_tokens);
}

const KIMI: &str =
    "vllm serve moonshotai/Kimi-K2.5 -tp 8 --kv-cache-dtype fp8 --max-model-len 32768";

/// Routed experts read in place cross the link only where the pass's tokens go: a one-token step
/// reads a few of the offloaded experts, a wide batch nearly all; the dense bytes whole either way.
#[test]
fn zero_copy_reads_only_the_routed_experts_a_pass_touches() {
    let off = served(
        "rtx-pro-6000-x8-baremetal",
        "kimi-k2.5",
        &format!("{KIMI} --cpu-offload-gb 6 --cpu-offload-params experts"),
    );
    let plan = off.target().offload().unwrap();
    assert_eq!(
        plan.offload.params,
        OffloadParams {
            dense: false,
            expert_share: 1.0
        }
    );
    let o = &plan.per_gpu[0];
    assert_eq!(o.dense_bytes, 0.0);
    let all_s = o.expert_bytes / plan.link.zero_copy_bytes_per_s;
    let (one, wide) = (step(&off, 1).host_weight_s, step(&off, 256).host_weight_s);
    assert!(one > 0.0 && one < 0.1 * all_s, "{one} of {all_s}");
    assert!(
        wide > 0.6 * all_s && wide <= all_s * (1.0 + 1e-9),
        "{wide} of {all_s}"
    );
}

/// SGLang's `--cpu-offload-gb` copies each offloaded layer whole before it runs, every pass,
/// nothing overlapped: the same added time at one request as at many, every routed expert
/// included.
#[test]
fn sglang_copies_every_offloaded_byte_in_line_each_pass() {
    let off = served(
        "rtx-pro-6000-x8-baremetal",
        "kimi-k2.5",
        "python -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 --tp 8 --cpu-offload-gb 6 --kv-cache-dtype fp8_e4m3 --context-length 32768",
    );
    let plan = off.target().offload().unwrap();
    assert_eq!(plan.offload.transfer, OffloadTransfer::CopyInLine);
    let o = &plan.per_gpu[0];
    assert!(o.total_bytes() >= 6.0 * (1u64 << 30) as f64);
    let want = o.total_bytes() / plan.link.dma_bytes_per_s;
    for batch in [1, 64] {
        let h = step(&off, batch).host_weight_s;
        assert!((h - want).abs() < 1e-9 * want, "{batch}: {h} vs {want}");
    }
}

/// Copies ahead on a side stream cost only what the GPU's work does not hide: a pass takes the
/// longer of its work and its copies (vLLM's prefetch backend, which also holds `prefetch_step`
/// layers' worth of static buffers); SGLang's group offload, captured in a decode graph, copies
/// in line instead.
#[test]
fn copies_ahead_cost_only_what_the_pass_does_not_hide() {
    let line = format!(
        "{KIMI} --offload-group-size 30 --offload-num-in-group 1 --offload-prefetch-step 2"
    );
    let base = served("rtx-pro-6000-x8-baremetal", "kimi-k2.5", KIMI);
    let few = served("rtx-pro-6000-x8-baremetal", "kimi-k2.5", &line);
    let plan = few.target().offload().unwrap();
    assert_eq!(
        plan.offload.layers,
        OffloadLayers::Groups {
            group_size: 30,
            num_in_group: 1,
            prefetch_step: 2
        }
    );
    let o = &plan.per_gpu[0];
    // layers 29 and 59 of Kimi-K2.5's 61: two MoE layers, all their parameters
    let layer = o.total_bytes() / 2.0;
    assert!(o.expert_bytes > 0.8 * o.total_bytes());
    assert!(
        (o.buffer_bytes as f64 - 2.0 * layer).abs() < 0.01 * layer,
        "{o:?}"
    );
    let copy = o.total_bytes() / plan.link.dma_bytes_per_s;
    for batch in [1, 128] {
        let (b0, b1) = (step(&base, batch).total_s(), step(&few, batch).total_s());
        let want = b0.max(copy);
        assert!(
            (b1 - want).abs() < 0.01 * want,
            "{batch}: {b1} vs max({b0}, {copy})"
        );
    }
    let sglang = served(
        "rtx-pro-6000-x8-baremetal",
        "kimi-k2.5",
        "python -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 --tp 8 --offload-group-size 30 --offload-num-in-group 1 --kv-cache-dtype fp8_e4m3 --context-length 32768",
    );
    let plan = sglang.target().offload().unwrap();
    // SGLang's DeepSeek-family code moves the routed experts only
    assert_eq!(plan.per_gpu[0].dense_bytes, 0.0);
    let copy = plan.per_gpu[0].expert_bytes / plan.link.dma_bytes_per_s;
    let h = step(&sglang, 1).host_weight_s;
    assert!((h - copy).abs() < 1e-9 * copy, "{h} vs {copy}");
}

/// What either engine refuses is refused with its reason, the flag named; vLLM's switches are
/// read as its `create_offloader` reads them.
#[test]
fn offload_flags_are_read_as_each_engine_reads_them() {
    let vllm = |extra: &str| {
        VllmLine::parse(&format!("vllm serve x -tp 8 {extra}")).and_then(|l| l.unwrap().knobs())
    };
    for (bad, named) in [
        (
            "--offload-group-size 4 --offload-num-in-group 5",
            "--offload-num-in-group",
        ),
        (
            "--offload-group-size 4 --offload-prefetch-step 0",
            "--offload-prefetch-step",
        ),
        (
            "--cpu-offload-gb 4 --cpu-offload-params expert",
            "--cpu-offload-params",
        ),
        ("--cpu-offload-gb -1", "--cpu-offload-gb"),
        ("--offload-backend disk", "--offload-backend"),
    ] {
        let e = vllm(bad).expect_err(bad).to_string();
        assert!(e.contains(named), "{bad}: {e}");
    }
    let o = vllm("--cpu-offload-gb 2 --cpu-offload-params w13_weight")
        .unwrap()
        .weight_offload
        .unwrap();
    assert_eq!(
        o.layers,
        OffloadLayers::Budget {
            bytes_per_gpu: 2 << 30
        }
    );
    assert!((o.params.expert_share - 2.0 / 3.0).abs() < 1e-12 && !o.params.dense);
    // the prefetch backend wins where both are asked for, as vLLM's `auto` picks it
    let both = vllm("--cpu-offload-gb 2 --offload-group-size 8").unwrap();
    assert!(matches!(
        both.weight_offload.unwrap().layers,
        OffloadLayers::Groups { .. }
    ));
    // `uva` named keeps the budget
    let uva = vllm("--offload-backend uva --cpu-offload-gb 2 --offload-group-size 8").unwrap();
    assert!(matches!(
        uva.weight_offload.unwrap().layers,
        OffloadLayers::Budget { .. }
    ));
    let copy =
        VllmLine::parse("VLLM_WEIGHT_OFFLOADING_DISABLE_UVA=1 vllm serve x --cpu-offload-gb 2")
            .unwrap()
            .unwrap()
            .knobs()
            .unwrap();
    assert_eq!(
        copy.weight_offload.unwrap().transfer,
        OffloadTransfer::CopyInLine
    );
    assert!(vllm("").unwrap().weight_offload.is_none());

    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let sglang = |model: &str, extra: &str| {
        let spec = ModelSpec::preset(model).unwrap();
        from_launch_line(&format!(
            "python -m sglang.launch_server --model-path x --tp 8 {extra}"
        ))
        .map_err(|e| e.to_string())
        .and_then(|a| {
            Launch::Sglang(a)
                .options(&TP8, &machine, &spec)
                .map_err(|e| e.to_string())
        })
    };
    for (model, bad, named) in [
        (
            "kimi-k2.5",
            "--offload-group-size 8 --offload-mode sharded_gpu",
            "--offload-mode",
        ),
        (
            "kimi-k2.5",
            "--offload-group-size 8 --offload-mode shm_cpu",
            "--offload-mode",
        ),
        (
            "qwen3-235b-a22b-nvfp4",
            "--offload-group-size 8",
            "--offload-group-size",
        ),
        ("kimi-k2.5", "--cpu-offload-gb 2.5", "--cpu-offload-gb"),
    ] {
        let e = sglang(model, bad).expect_err(bad);
        assert!(e.contains(named), "{bad}: {e}");
    }
    let (o, _) = sglang("kimi-k2.5", "--cpu-offload-gb 3").unwrap();
    assert_eq!(
        o.weight_offload.unwrap().layers,
        OffloadLayers::Budget {
            bytes_per_gpu: 3 << 30
        }
    );
}

/// The host link's rate is the machine profile's pinned host→device measurement where it has
/// one; a preset's PCIe figures otherwise, said as assumed, which flags the prediction's machine
/// figure (and so its interval) as assumed.
#[test]
fn the_host_link_is_measured_where_the_profile_has_it_else_flagged_assumed() {
    let machine = Machine::resolve("../probe/profiles/h200-x1.json").unwrap();
    let spec = ModelSpec::preset("qwen3-30b-a3b").unwrap();
    let tp1 = Layout { tp: 1, ..TP8 };
    let line = VllmLine::parse("vllm serve Qwen/Qwen3-30B-A3B --cpu-offload-gb 10")
        .unwrap()
        .unwrap();
    let (opts, _) = line.server_options(&tp1, &machine).unwrap();
    let m = ServedModel::new(&machine, &spec, tp1, &opts, Knobs::default()).unwrap();
    let link = &m.target().offload().unwrap().link;
    // probe/profiles/h200-x1.json: pinned host-to-device, one GPU, 55.41 GB/s median
    assert!(
        (link.dma_bytes_per_s / 1e9 - 55.41).abs() < 0.01,
        "{link:?}"
    );
    assert!(link.source.starts_with("measured"));
    let flags = |m: &ServedModel| sim::uncertainty::Flag::from_notes(m.target().memory_notes());
    assert!(!flags(&m).contains(&"machine-figure-assumed".to_string()));
    let off = served(
        "rtx-3090-x8-pcie",
        "minimax-m2.5-int4-awq",
        "vllm serve mratsim/MiniMax-M2.5-BF16-INT4-AWQ -tp 8 --cpu-offload-gb 4",
    );
    assert!(flags(&off).contains(&"machine-figure-assumed".to_string()));
}

/// A record's words that turn offload on are refused, not read as an all-GPU run: the record
/// reader does not read them (a launch line does); a budget of 0 or an "off" group size is no
/// offload.
#[test]
fn a_record_that_offloads_is_refused_not_priced_on_the_gpu() {
    use sim::engine::launch::offload_words;
    assert_eq!(
        offload_words("vllm serve x -tp 8 --cpu-offload-gb 8 --enforce-eager").as_deref(),
        Some("--cpu-offload-gb 8")
    );
    assert_eq!(
        offload_words("--tp 8 --offload-group-size=4").as_deref(),
        Some("--offload-group-size 4")
    );
    assert_eq!(
        offload_words("--tp 8 --cpu-offload-gb 0 --offload-group-size -1"),
        None
    );
    assert_eq!(offload_words("vllm serve x -tp 8"), None);
}

/// A model that does not fit is told how much to hold on the host, in the engine's flag, and
/// that much is enough: the same launch with it fits.
#[test]
fn a_model_that_does_not_fit_is_told_the_offload_that_makes_it_fit() {
    let machine = Machine::resolve("rtx-pro-6000-x8-vm-hostbounce").unwrap();
    let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
    let dpa = Layout {
        dp_attention: true,
        ..TP8
    };
    let line = "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8 --dp 8 --enable-dp-attention";
    let options = |extra: &str| {
        let args = from_launch_line(&format!("{line} {extra}")).unwrap();
        Launch::Sglang(args)
            .options(&dpa, &machine, &spec)
            .unwrap()
            .0
    };
    let err = sim::cost::CostModel::new(&machine, &spec, dpa, &options(""), Knobs::default())
        .expect_err("GLM-5 NVFP4 at TP8 with DP attention does not fit this box");
    let text = err.to_string();
    let gib: u32 = text
        .split("or hold ")
        .nth(1)
        .and_then(|rest| rest.split(" GiB").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no offload hint: {text}"));
    let fits = sim::cost::CostModel::new(
        &machine,
        &spec,
        dpa,
        &options(&format!("--cpu-offload-gb {gib}")),
        Knobs::default(),
    );
    assert!(fits.is_ok(), "{gib} GiB: {:?}", fits.err());
}

/// A prefill pass's GEMMs read a host weight once per block of rows (measured on a lent H100:
/// `cost::offload::ZERO_COPY_ROWS_PER_READ`): a 4096-token pass of a dense model pays its
/// offloaded bytes that many times over, a one-token step once.
#[test]
fn a_prefill_pass_reads_its_host_weights_once_per_block_of_rows() {
    use sim::cost::IterationBatch;
    use sim::cost::PrefillChunk;
    use sim::cost::offload::zero_copy_reads;
    let off = served(
        "h100-x8",
        "llama-3.1-70b",
        &format!("{LLAMA} --cpu-offload-gb 1.5"),
    );
    let plan = off.target().offload().unwrap();
    let once = plan.per_gpu[0].total_bytes() / plan.link.zero_copy_bytes_per_s;
    let pass = |tokens: u32| {
        let batch = IterationBatch {
            decode_context_tokens: Vec::new(),
            prefill: vec![PrefillChunk {
                new_tokens: tokens,
                cached_tokens: 0,
            }],
        };
        off.iteration(&batch).breakdown.host_weight_s
    };
    assert!((pass(1) - once).abs() < 1e-9 * once);
    let h = pass(4096);
    let want = once * zero_copy_reads(4096.0);
    assert!((h - want).abs() < 1e-9 * want, "{h} vs {want}");
    assert!(h > 15.0 * once);
}
