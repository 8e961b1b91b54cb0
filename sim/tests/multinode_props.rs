//! Invariants across boxes (proptest): a faster network (every inter-node curve's times scaled
//! down, latency and bandwidth alike) or more NICs per box never makes an iteration slower or
//! steady decode throughput lower, for every layout of 2 × 8 GPUs and the one-box layouts on it.

use models::profile::{LinkClass, MachineProfile, NicInfo};
use models::{Layout, ModelSpec};
use proptest::prelude::*;
use sim::advise::steady_tok_s;
use sim::cost::{CostModel, IterationBatch, IterationModel, Knobs, PrefillChunk};
use sim::layout::enumerate_layouts;
use sim::machine::Machine;
use sim::options::ServerOptions;
use sim::presets::machine_preset;
use std::sync::OnceLock;

const MACHINES: [&str; 2] = ["rtx-pro-6000-x8x2-400gbe", "h200-x8x2-ib-ndr"];

fn spec() -> &'static ModelSpec {
    static S: OnceLock<ModelSpec> = OnceLock::new();
    S.get_or_init(|| ModelSpec::preset("kimi-k2.5-nvfp4").unwrap())
}

/// Feasible layouts of all 16 GPUs, then those of one box.
fn layouts() -> &'static Vec<Layout> {
    static L: OnceLock<Vec<Layout>> = OnceLock::new();
    L.get_or_init(|| {
        [16, 8]
            .into_iter()
            .flat_map(|g| enumerate_layouts(g, spec()))
            .filter(|c| c.is_feasible())
            .map(|c| c.layout)
            .collect()
    })
}

/// `p` with every inter-node curve `factor` × as fast to finish and `nics` NICs per node.
fn network(p: &MachineProfile, factor: f64, nics: u32) -> MachineProfile {
    let mut p = p.clone();
    for c in p
        .collectives
        .iter_mut()
        .filter(|c| c.link_class == Some(LinkClass::NET))
    {
        for pt in &mut c.points {
            pt.time_us.median *= factor;
            pt.time_us.p10 *= factor;
            pt.time_us.p90 *= factor;
            pt.algbw_gb_per_s /= factor;
            pt.busbw_gb_per_s /= factor;
        }
    }
    for node in &mut p.nodes {
        let nic = node.nics[0].clone();
        node.nics = (0..nics)
            .map(|i| NicInfo {
                name: format!("mlx5_{i}"),
                ..nic.clone()
            })
            .collect();
    }
    p
}

fn batch(decode: u32, ctx: u32, prefill: u32) -> IterationBatch {
    IterationBatch {
        decode_context_tokens: vec![ctx; decode as usize],
        prefill: if prefill > 0 {
            vec![PrefillChunk {
                new_tokens: prefill,
                cached_tokens: 0,
            }]
        } else {
            Vec::new()
        },
    }
}

/// Asserts that `fast` is no slower than `slow` on `b`, stage by stage.
fn no_slower(slow: &CostModel, fast: &CostModel, b: &IterationBatch, opts: &ServerOptions) {
    let (s, f) = (slow.iteration(b), fast.iteration(b));
    let le = |x: f64, y: f64| x <= y * (1.0 + 1e-9) + 1e-12;
    let l = slow.layout();
    assert!(
        le(f.latency_s, s.latency_s),
        "{l}: {} > {}",
        f.latency_s,
        s.latency_s
    );
    for (a, b) in f.stage_s.iter().zip(&s.stage_s) {
        assert!(le(*a, *b), "{l}: stage {a} > {b}");
    }
    assert!(le(f.pp_hop_s, s.pp_hop_s), "{l}: hop");
    assert!(le(f.breakdown.comm_s(), s.breakdown.comm_s()), "{l}: comm");
    let ctx = b.decode_context_tokens.first().copied().unwrap_or(1024);
    let n = b.decode_context_tokens.len().max(1) as u32;
    let mut scratch = IterationBatch::default();
    let (ts, tf) = (
        steady_tok_s(slow, opts, n, ctx, &mut scratch),
        steady_tok_s(fast, opts, n, ctx, &mut scratch),
    );
    assert!(tf >= ts * (1.0 - 1e-9), "{l}: steady {tf} < {ts}");
}

fn build(m: &Machine, l: Layout, opts: &ServerOptions) -> Option<CostModel> {
    CostModel::new(m, spec(), l, opts, Knobs::default()).ok()
}

#[test]
fn every_layout_is_no_slower_on_a_network_twice_as_fast() {
    let opts = ServerOptions::default();
    for name in MACHINES {
        let p = machine_preset(name).unwrap();
        let nics = p.nodes[0].nics.len() as u32;
        let slow = Machine::from_profile(name, p.clone()).unwrap();
        let fast = Machine::from_profile(name, network(&p, 0.5, nics)).unwrap();
        let mut costed = 0;
        for &l in layouts() {
            let (Some(s), Some(f)) = (build(&slow, l, &opts), build(&fast, l, &opts)) else {
                continue;
            };
            costed += 1;
            for b in [batch(1, 2048, 0), batch(64, 4096, 0), batch(8, 1024, 4096)] {
                no_slower(&s, &f, &b, &opts);
            }
        }
        assert!(costed > 10, "{name}: only {costed} layouts costed");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_faster_network_or_more_nics_is_never_slower(
        mi in 0usize..2, li in 0usize..64,
        factor in 0.05f64..1.0, extra_nics in 0u32..8,
        decode in 0u32..300, ctx in 1u32..60_000, prefill in 0u32..9000,
        a2a in any::<bool>(),
    ) {
        prop_assume!(decode > 0 || prefill > 0);
        let name = MACHINES[mi];
        let p = machine_preset(name).unwrap();
        let nics = p.nodes[0].nics.len() as u32;
        let l = layouts()[li % layouts().len()];
        let opts = ServerOptions {
            moe_a2a_backend: (a2a && l.ep == l.tp && l.tp > 1).then(|| "deepep".to_string()),
            ..ServerOptions::default()
        };
        let slow = Machine::from_profile(name, p.clone()).unwrap();
        let fast = Machine::from_profile(name, network(&p, factor, nics + extra_nics)).unwrap();
        let (Some(s), Some(f)) = (build(&slow, l, &opts), build(&fast, l, &opts)) else {
            return Ok(());
        };
        no_slower(&s, &f, &batch(decode, ctx, prefill), &opts);
    }
}
