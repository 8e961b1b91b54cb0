//! How long a rotation of PP micro-batches takes, shared by the serving replay's reading of a
//! split and the doctor's costing of a logged one, so the two agree.
//!
//! SGLang's `event_loop_pp` (`managers/scheduler_pp_mixin.py` @ `00ff98d3`) runs every stage
//! through the micro-batches in the same order; the first stage schedules micro-batch `i`'s next
//! batch only after it has received and processed the outputs of that micro-batch's previous
//! batch from the last stage (`_pp_commit_send_output_work_and_preprocess_output_tensors`, then
//! `_pp_process_batch_result`). So with `L` micro-batches over `pp` stages, turn `t` has stage
//! `s` running micro-batch `(t - s) mod L`, and a turn lasts as long as its slowest stage plus
//! the activation hop. With `L = pp` every turn holds every micro-batch: a rotation takes `pp`
//! times the largest micro-batch's stage step, so an uneven split costs as if every
//! micro-batch were the largest (the small ones wait in the pipeline), not the sum of the steps.

/// Seconds for each of the micro-batches (`stage_s[i]`: micro-batch `i`'s per-stage step, the
/// slowest of its stages) to take one step through `pp` lockstep stages, with `hop_s` per turn.
pub fn rotation_s(stage_s: &[f64], pp: usize, hop_s: f64) -> f64 {
    let l = stage_s.len();
    if l == 0 {
        return 0.0;
    }
    let in_turn = pp.clamp(1, l);
    (0..l)
        .map(|t| {
            let slowest = (0..in_turn)
                .map(|s| stage_s[(t + l - s) % l])
                .fold(0.0, f64::max);
            slowest + if pp > 1 { hop_s } else { 0.0 }
        })
        .sum()
}

/// [`rotation_s`] of decode micro-batches of `running[i]` requests at `context_tokens` each, as
/// `model` costs their steps (each stage's time, the slowest taken; one hop per turn).
pub fn split_rotation_s(
    model: &dyn crate::cost::IterationModel,
    running: &[u32],
    context_tokens: u32,
) -> f64 {
    let mut hop_s = 0.0f64;
    let stage_s: Vec<f64> = running
        .iter()
        .map(|&n| {
            let c = model.iteration(&crate::cost::IterationBatch {
                decode_context_tokens: vec![context_tokens.max(1); n.max(1) as usize],
                prefill: Vec::new(),
            });
            hop_s = hop_s.max(c.pp_hop_s);
            c.stage_s.iter().copied().fold(0.0, f64::max)
        })
        .collect();
    let pp = model.layout().pp.max(1) as usize;
    rotation_s(&stage_s, pp, hop_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rotation_is_paced_by_the_largest_micro_batch() {
        // two stages, two micro-batches of 30 ms and 10 ms per stage: both turns hold both
        assert!((rotation_s(&[0.030, 0.010], 2, 0.001) - 2.0 * 0.031).abs() < 1e-12);
        // three micro-batches over two stages (--pp-async-batch-depth 1): turns (a,c), (b,a), (c,b)
        let r = rotation_s(&[0.030, 0.010, 0.020], 2, 0.0);
        assert!((r - (0.030 + 0.030 + 0.020)).abs() < 1e-12);
        // without PP the steps follow one another
        assert!((rotation_s(&[0.030], 1, 0.005) - 0.030).abs() < 1e-12);
    }
}
