//! `sim advise --question scale`: the question built from the machine (one box vs all boxes vs
//! a server per box) and answered.

use super::AdviseError;
use crate::cost::IterationModel;
use crate::layout::enumerate_layouts;
use crate::scale::{ScaleAnswer, ScaleQuestion, scale_question};
use crate::scenario::Scenario;
use crate::workload::Workload;
use models::Layout;

/// Answers `--question scale` on `setup`'s machine; `top`, the layout the ranking put first,
/// is the server over all boxes it weighs (else the best of every feasible layout).
pub fn answer(
    setup: &Scenario,
    workload: &Workload,
    draws: u32,
    top: Option<Layout>,
) -> Result<ScaleAnswer, AdviseError> {
    let m = &setup.machine;
    if m.node_count() < 2 {
        return Err(AdviseError::ScaleOneBox {
            machine: m.name().to_string(),
            gpus: m.gpu_count,
            nodes_flag: crate::engine::Engine::Sglang.flag(crate::engine::Knob::Nodes),
        });
    }
    let feasible = |gpus: u32| -> Vec<Layout> {
        enumerate_layouts(gpus, &setup.spec)
            .into_iter()
            .filter(|c| c.is_feasible() && setup.launch.can_launch(&c.layout))
            .map(|c| c.layout)
            .collect()
    };
    let network_notes: Vec<String> = m
        .notes()
        .iter()
        .filter(|n| n.contains("nodes") || n.contains("NIC"))
        .cloned()
        .collect();
    let extra_flags = |l: &Layout| setup.launch.other_flags_on(l);
    let opts_for = |l: Layout| setup.opts_ranking(l);
    let q = ScaleQuestion {
        spec: &setup.spec,
        opts_for: &opts_for,
        workload,
        knobs: setup.knobs,
        nodes: m.node_count(),
        gpus_per_node: m.gpus_per_node(),
        one_box: feasible(m.gpus_per_node()),
        all_boxes: top
            .filter(|l| l.gpus() == m.gpu_count)
            .map_or_else(|| feasible(m.gpu_count), |l| vec![l]),
        comm_spread: crate::advise::comm_spread(&m.profile),
        draws,
        seed: workload.seed,
        notes: network_notes,
        extra_flags: &extra_flags,
    };
    let build = |l: Layout, k| {
        setup
            .model_ranking(l, k)
            .map(|m| Box::new(m) as Box<dyn IterationModel>)
            .map_err(|e| e.to_string())
    };
    let mut ans = scale_question(&q, &build).map_err(|e| AdviseError::failed("scale", e))?;
    // Which curves the server over all boxes was costed with (measured, hierarchical, modelled).
    if let Some(p) = ans
        .by_concurrency
        .iter()
        .find(|p| p.concurrency == ans.concurrency)
        && let Ok(cm) = setup.model_ranking(p.all_boxes_layout, setup.knobs)
    {
        ans.notes.extend(
            cm.target()
                .comm_notes()
                .iter()
                .map(|n| format!("{}: {n}", p.all_boxes_layout.short_name())),
        );
    }
    Ok(ans)
}
