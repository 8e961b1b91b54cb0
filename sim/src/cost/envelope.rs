//! A weight op's time tabulated by tokens ([`Envelope`]): at the efficiency curves' knots 2^k,
//! and where the op changes kernel between two of them.

use super::ENVELOPE_KNOTS;
use super::kernel::OpTime;

/// How far (relative) an op's time at a knot interval's midpoint may sit off the straight line
/// between the interval's ends before [`Envelope`] splits the interval. Not a fitted knob
/// but a numerical tolerance: a kernel switch inside an interval (b12x's static → dynamic MoE
/// kernel at 128 routed pairs, the W4A16 tensor-core decode cap, the tables' decode → prefill
/// rows) is a step, which puts the midpoint off the line by half the step whatever the step's
/// place, while the smooth part of these curves bends less than 2% inside one octave (the CUTLASS
/// NVFP4 MoE of GLM-5 at TP8: 212.1 µs at 12 tokens against 214.3 on the 8–16 line).
pub const SWITCH_TOLERANCE: f64 = 0.02;

/// A weight op's time tabulated at 2^k tokens (the efficiency curves' knots) and at the token
/// counts between two such knots where the op's kernel switches: an interval whose midpoint sits
/// off the line between its ends by more than [`SWITCH_TOLERANCE`] is split there, down to one
/// token. Linear in tokens between knots (exact where time is flat or proportional to tokens),
/// proportional to tokens beyond the last, made non-decreasing by a running maximum: the fitted
/// efficiency can rise faster than the work between two sizes (a GEMM at M = 16 measured a
/// little faster than at M = 1), and evaluating the roofline directly would then predict a
/// bigger batch cheaper than a smaller one. Without the split (the octave knots alone, before
/// the thirty-second session), a step between 2^k and 2^(k+1) tokens was spread linearly over
/// the octave: b12x's March build, static below 128 routed pairs (16 GLM-5 tokens) and 3.8×
/// dearer at 128, was priced at 10 tokens (an MTP verify of 5 tokens at two streams) 1.5× its
/// static kernel, 20% above the CUTLASS path it beats there.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// Token counts, ascending: 2^k and the split points.
    tokens: Vec<f64>,
    /// Running maximum of the op's time at each knot, seconds.
    s: Vec<f64>,
    memory_bound: Vec<bool>,
}

impl Envelope {
    /// No op (zero at every size): one knot, proportional beyond it.
    pub fn empty() -> Envelope {
        Envelope {
            tokens: vec![1.0],
            s: vec![0.0],
            memory_bound: vec![true],
        }
    }

    /// Tabulates `f` at 2^0 … 2^(ENVELOPE_KNOTS−1) tokens and at the split points between them.
    pub fn of(f: &dyn Fn(f64) -> OpTime) -> Envelope {
        let octaves: Vec<(f64, OpTime)> = (0..ENVELOPE_KNOTS)
            .map(|k| {
                let t = (1u64 << k) as f64;
                (t, f(t))
            })
            .collect();
        let mut knots = vec![octaves[0]];
        for w in octaves.windows(2) {
            split(f, w[0], w[1], &mut knots);
            knots.push(w[1]);
        }
        let mut run: f64 = 0.0;
        Envelope {
            tokens: knots.iter().map(|k| k.0).collect(),
            s: knots
                .iter()
                .map(|k| {
                    run = run.max(k.1.s);
                    run
                })
                .collect(),
            memory_bound: knots.iter().map(|k| k.1.memory_bound).collect(),
        }
    }

    /// The op's time at `tokens`: linear between the knots around it, proportional to tokens
    /// beyond the last, 0 without tokens.
    pub fn at(&self, tokens: f64) -> OpTime {
        if tokens <= 0.0 {
            return OpTime {
                s: 0.0,
                memory_bound: true,
            };
        }
        let t = tokens.max(1.0);
        // the last knot at or below t
        let i = self.tokens.partition_point(|&k| k <= t).saturating_sub(1);
        let s = match self.tokens.get(i + 1) {
            Some(&hi) => {
                let lo = self.tokens[i];
                self.s[i] + (self.s[i + 1] - self.s[i]) * (t - lo) / (hi - lo)
            }
            None => self.s[i] * t / self.tokens[i],
        };
        OpTime {
            s,
            memory_bound: self.memory_bound[i],
        }
    }

    /// The knots' token counts (2^k and the split points), ascending.
    pub fn knots(&self) -> &[f64] {
        &self.tokens
    }
}

/// Adds to `out`, ascending, the knots strictly between `a` and `b` at which `f` leaves the
/// line between them by more than [`SWITCH_TOLERANCE`] (integer token counts, bisected).
fn split(
    f: &dyn Fn(f64) -> OpTime,
    a: (f64, OpTime),
    b: (f64, OpTime),
    out: &mut Vec<(f64, OpTime)>,
) {
    if b.0 - a.0 < 2.0 {
        return;
    }
    let m = ((a.0 + b.0) / 2.0).floor();
    let fm = f(m);
    let line = a.1.s + (b.1.s - a.1.s) * (m - a.0) / (b.0 - a.0);
    if (fm.s - line).abs() <= SWITCH_TOLERANCE * fm.s.abs().max(line.abs()) {
        return;
    }
    split(f, a, (m, fm), out);
    out.push((m, fm));
    split(f, (m, fm), b, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(s: f64) -> OpTime {
        OpTime {
            s,
            memory_bound: true,
        }
    }

    /// A step at 16 routed pairs' worth of tokens (here 13 tokens) is priced at the step, not
    /// spread over 8–16 tokens; away from it the table is the octave envelope.
    #[test]
    fn a_step_inside_an_octave_is_kept() {
        let f = |t: f64| op(if t < 13.0 { 10.0 + t } else { 100.0 + t });
        let e = Envelope::of(&f);
        for t in [
            1.0, 2.0, 3.0, 8.0, 10.0, 12.0, 13.0, 15.0, 16.0, 40.0, 1000.0,
        ] {
            assert!((e.at(t).s - f(t).s).abs() < 1e-9, "{t}: {}", e.at(t).s);
        }
        // the octave knots alone would spread the step: 10 tokens at 18 + (116 − 18) / 4 = 42.5
        assert!(e.knots().contains(&12.0) && e.knots().contains(&13.0));
    }

    /// A curve that bends less than the tolerance inside every octave gets no knot beyond 2^k:
    /// linear between them, proportional beyond the last.
    #[test]
    fn a_smooth_curve_keeps_the_octave_knots() {
        let f = |t: f64| op(50.0 + 20.0 * t.powf(0.9));
        let e = Envelope::of(&f);
        assert_eq!(e.knots().len(), ENVELOPE_KNOTS);
        let line = |lo: f64, hi: f64, t: f64| f(lo).s + (f(hi).s - f(lo).s) * (t - lo) / (hi - lo);
        assert!((e.at(3.0).s - line(2.0, 4.0, 3.0)).abs() < 1e-9);
        assert!((e.at(100.0).s - line(64.0, 128.0, 100.0)).abs() < 1e-9);
        let last = (1u64 << (ENVELOPE_KNOTS - 1)) as f64;
        assert!((e.at(2.0 * last).s - 2.0 * f(last).s).abs() < 1e-6);
    }

    /// Non-decreasing in tokens, whatever the op does (a faster kernel above a switch).
    #[test]
    fn a_drop_is_held_at_the_running_maximum() {
        let f = |t: f64| op(if t < 20.0 { 100.0 } else { 60.0 + t });
        let e = Envelope::of(&f);
        let mut last = 0.0;
        for i in 1..400 {
            let s = e.at(i as f64 * 0.25).s;
            assert!(s >= last - 1e-12, "{i}: {s} < {last}");
            last = s;
        }
        assert_eq!(e.at(0.0).s, 0.0);
    }
}
