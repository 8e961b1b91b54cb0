//! MoE efficiency by shape: the knots of each measured expert slice ([`ShapeKnots`]) and how a
//! curve is read at a slice (interpolated in log(slice) between measured ones, flat outside).

use super::{EfficiencyCurve, Knot};
use serde::{Deserialize, Serialize};

/// The knots of one measured MoE shape. A grouped GEMM's efficiency depends on the expert slice
/// each GPU streams (`hidden × moe_inter / tp` sets its N and K, so how many tiles fill the
/// SMs), not only on tokens per expert: in the tables the NVFP4 TP8 slices of GLM-5 and Kimi-K2
/// (1.6–1.8 M elements) reach 56–65% of bandwidth where the TP1–TP2 slices (6–7 M) reach 70–76%.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeKnots {
    /// Elements of one expert's slice on one GPU: `hidden × moe_inter / tp`.
    pub slice_elements: f64,
    /// The measured shapes behind it (`model tpN epM`).
    pub measured: Vec<String>,
    /// Knots sorted by tokens per expert.
    pub knots: Vec<Knot>,
    pub rows: u32,
    pub median_abs_error: f64,
}

/// Where an MoE expert slice lies among the measured ones of its curve.
#[derive(Debug, Clone, PartialEq)]
pub enum ShapeCoverage {
    /// The curve has no per-shape knots (or no slice was given): the pooled knots.
    Pooled,
    /// A measured slice, or between two (interpolated in log(slice)).
    Inside,
    /// Below the smallest measured slice: that slice's knots, flat (optimistic for smaller tiles).
    BelowSmallest { smallest: f64, measured: String },
    /// Above the largest measured slice: that slice's knots, flat.
    AboveLargest { largest: f64, measured: String },
}

/// Linear interpolation in log2(tokens) of one knot field, clamped at the ends.
pub(super) fn knots_at(knots: &[Knot], tokens: u64, field: &impl Fn(&Knot) -> f64) -> f64 {
    let x = (tokens.max(1) as f64).log2();
    let first = &knots[0];
    if tokens <= first.tokens {
        return field(first);
    }
    for w in knots.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if tokens <= b.tokens {
            let (xa, xb) = ((a.tokens as f64).log2(), (b.tokens as f64).log2());
            let t = (x - xa) / (xb - xa);
            return field(a) + t * (field(b) - field(a));
        }
    }
    field(knots.last().expect("curve has knots"))
}

impl EfficiencyCurve {
    /// One knot field at `tokens` for an expert slice of `slice` elements: linear in
    /// log(slice) between the two measured slices around it, the nearest one's knots outside
    /// them, the pooled knots when the curve has no shapes or no slice is given.
    pub(super) fn at(&self, tokens: u64, slice: Option<f64>, field: impl Fn(&Knot) -> f64) -> f64 {
        let shapes = &self.shapes;
        let s = match slice {
            Some(s) if s > 0.0 && !shapes.is_empty() => s,
            _ => return knots_at(&self.knots, tokens, &field),
        };
        let (first, last) = (&shapes[0], &shapes[shapes.len() - 1]);
        if s <= first.slice_elements {
            return knots_at(&first.knots, tokens, &field);
        }
        for w in shapes.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            if s <= b.slice_elements {
                let t = (s / a.slice_elements).ln() / (b.slice_elements / a.slice_elements).ln();
                let (fa, fb) = (
                    knots_at(&a.knots, tokens, &field),
                    knots_at(&b.knots, tokens, &field),
                );
                return fa + t * (fb - fa);
            }
        }
        knots_at(&last.knots, tokens, &field)
    }

    /// Where `slice` lies among the curve's measured slices (within 1% counts as measured).
    pub fn shape_coverage(&self, slice: f64) -> ShapeCoverage {
        let (Some(first), Some(last)) = (self.shapes.first(), self.shapes.last()) else {
            return ShapeCoverage::Pooled;
        };
        if slice < first.slice_elements * 0.99 {
            ShapeCoverage::BelowSmallest {
                smallest: first.slice_elements,
                measured: first.measured.join(", "),
            }
        } else if slice > last.slice_elements * 1.01 {
            ShapeCoverage::AboveLargest {
                largest: last.slice_elements,
                measured: last.measured.join(", "),
            }
        } else {
            ShapeCoverage::Inside
        }
    }
}
