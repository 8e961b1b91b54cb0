//! The layouts a command compares, shared by `sim sweep` and `sim advise`: every layout of the
//! machine unless the flags pick one, labelled with the a2a backend where it runs, and the note
//! on the GPUs a one-replica layout leaves idle (also `sim run`'s).

use super::args::{LayoutSelection, ServerArgs};
use super::setup::Setup;
use anyhow::Result;
use models::Layout;
use sim::cost::IterationModel;
use sim::layout::enumerate_layouts;
use sim::sweep::SweepLayout;

/// The layouts to sweep: every layout of the machine unless layout flags pick one. With several,
/// `--moe-a2a-backend` applies to those it can run ([`Setup::opts_ranking`]).
pub fn layouts(setup: &Setup, _server: &ServerArgs) -> Result<Vec<SweepLayout>> {
    let l = &setup.layout_args;
    let chosen: Vec<(Layout, Option<String>)> = match l
        .is_explicit()
        .then(|| l.selection(setup.machine.gpu_count, &setup.spec))
        .transpose()?
    {
        Some(LayoutSelection::One(one)) => vec![(one, None)],
        _ => enumerate_layouts(setup.machine.gpu_count, &setup.spec)
            .into_iter()
            .map(|c| (c.layout, c.rejected))
            // a vLLM server has no flags for experts EP over part of the TP group
            .filter(|(l, _)| setup.launch.can_launch(l))
            .collect(),
    };
    let many = chosen.len() > 1;
    Ok(chosen
        .into_iter()
        .map(|(layout, rejected)| {
            let model = match rejected {
                Some(why) => Err(why),
                None => if many {
                    setup.model_ranking(layout, setup.knobs)
                } else {
                    setup.model(layout, setup.knobs)
                }
                .map(|m| Box::new(m) as Box<dyn IterationModel>)
                .map_err(|e| e.to_string()),
            };
            SweepLayout::new(&setup.machine, layout, model)
        })
        .collect())
}

/// "N GPUs idle" for a layout that runs as one replica on part of the machine.
pub fn idle_note(idle_gpus: u32) -> String {
    match idle_gpus {
        0 => String::new(),
        1 => "1 GPU idle (one replica)".into(),
        n => format!("{n} GPUs idle (one replica)"),
    }
}
