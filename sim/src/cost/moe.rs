//! Routing statistics of a MoE layer: how many experts a batch touches, and how unevenly the work
//! lands on expert-parallel ranks.
//!
//! Routing is taken as uniform: each token picks `k` distinct experts of `E` at random (what the
//! kernel measurements assumed, "balanced routing"). Then an expert is untouched by `T` tokens
//! with probability `(1 − k/E)^T`, so `E·(1 − (1 − k/E)^T)` experts are expected to be touched.
//! Under EP each rank holds `m = E/ep` experts; the slowest rank sets the pace, and its load is
//! modelled as the expected maximum of `ep` roughly normal counts: mean + z(ep)·σ, with z(n) the
//! expected maximum of n standard normals (Blom's approximation) and σ the binomial spread.
//! Real routers are skewed, so this is a lower bound on imbalance (EPLB would move towards it).

/// Expected maximum of `n` independent standard normal draws (Blom: Φ⁻¹((n − 0.375)/(n + 0.25))).
pub fn expected_max_z(n: u32) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let n = n as f64;
    inverse_normal_cdf((n - 0.375) / (n + 0.25))
}

/// Φ⁻¹(p) for 0 < p < 1 (Abramowitz & Stegun 26.2.23, |error| < 4.5e-4).
fn inverse_normal_cdf(p: f64) -> f64 {
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    let (q, sign) = if p < 0.5 { (p, -1.0) } else { (1.0 - p, 1.0) };
    let t = (-2.0 * q.ln()).sqrt();
    let num = 2.515517 + 0.802853 * t + 0.010328 * t * t;
    let den = 1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t;
    sign * (t - num / den)
}

/// Routing of one MoE layer over an expert-parallel group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Routing {
    /// Routed experts `E`.
    pub experts: f64,
    /// Experts per token `k`.
    pub top_k: f64,
    /// Expert-parallel ranks (1 = experts sliced by TP, every rank sees every expert).
    pub ep: u32,
    /// [`expected_max_z`] of `ep`, precomputed.
    z: f64,
}

impl Routing {
    /// Routing of `experts` experts, top-`top_k`, over `ep` ranks.
    pub fn new(experts: u32, top_k: u32, ep: u32) -> Self {
        Routing {
            experts: experts.max(1) as f64,
            top_k: top_k.clamp(1, experts.max(1)) as f64,
            ep: ep.max(1),
            z: expected_max_z(ep.max(1)),
        }
    }

    /// Probability that a given expert is touched by `tokens` tokens.
    fn touched_probability(&self, tokens: f64) -> f64 {
        if tokens <= 0.0 {
            return 0.0;
        }
        1.0 - (1.0 - self.top_k / self.experts).powf(tokens)
    }

    /// Expected distinct experts touched by `tokens` tokens: `E·(1 − (1 − k/E)^T)`.
    pub fn expected_touched(&self, tokens: f64) -> f64 {
        self.experts * self.touched_probability(tokens)
    }

    /// Experts held by one rank.
    pub fn experts_per_rank(&self) -> f64 {
        self.experts / self.ep as f64
    }

    /// Expected touched experts on the busiest rank (all of them when `ep == 1`).
    pub fn max_touched_per_rank(&self, tokens: f64) -> f64 {
        let m = self.experts_per_rank();
        let q = self.touched_probability(tokens);
        let mean = m * q;
        (mean + self.z * (m * q * (1.0 - q)).sqrt()).min(m)
    }

    /// Expected (token, expert) pairs on the busiest rank: `T·k/ep` plus the binomial tail.
    pub fn max_pairs_per_rank(&self, tokens: f64) -> f64 {
        let pairs = tokens * self.top_k;
        let p = 1.0 / self.ep as f64;
        let most = tokens * self.top_k.min(self.experts_per_rank());
        (pairs * p + self.z * (pairs * p * (1.0 - p)).sqrt()).min(most)
    }

    /// Busiest rank's work over the average rank's (1.0 = balanced), by (token, expert) pairs.
    pub fn pair_imbalance(&self, tokens: f64) -> f64 {
        let mean = tokens * self.top_k / self.ep as f64;
        if mean <= 0.0 {
            1.0
        } else {
            self.max_pairs_per_rank(tokens) / mean
        }
    }

    /// Expected tokens with at least one of their experts on a given rank.
    pub fn tokens_per_rank(&self, tokens: f64) -> f64 {
        let miss = (1.0 - 1.0 / self.ep as f64).powf(self.top_k);
        tokens * (1.0 - miss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_max_of_normals_matches_tables() {
        // exact values: n=2 0.564, n=4 1.029, n=8 1.424
        assert!((expected_max_z(2) - 0.564).abs() < 0.05);
        assert!((expected_max_z(4) - 1.029).abs() < 0.05);
        assert!((expected_max_z(8) - 1.424).abs() < 0.05);
        assert_eq!(expected_max_z(1), 0.0);
    }

    #[test]
    fn touched_experts_follow_the_formula() {
        let r = Routing::new(256, 8, 1);
        assert!((r.expected_touched(1.0) - 8.0).abs() < 1e-9);
        let t64 = 256.0 * (1.0 - (1.0f64 - 8.0 / 256.0).powi(64));
        assert!((r.expected_touched(64.0) - t64).abs() < 1e-9);
        assert!(r.expected_touched(1e6) <= 256.0);
        // TP: every rank holds a slice of all experts, so the busiest rank touches them all
        assert!((r.max_touched_per_rank(64.0) - t64).abs() < 1e-9);
    }

    #[test]
    fn ep_ranks_are_imbalanced_at_small_batches() {
        let r = Routing::new(256, 8, 8);
        // one token, 8 experts on 8 ranks: the busiest rank gets about 2.4 (multinomial max)
        let busiest = r.max_touched_per_rank(1.0);
        assert!((2.0..3.0).contains(&busiest), "{busiest}");
        assert!(r.pair_imbalance(1.0) > 2.0);
        assert!(r.pair_imbalance(4096.0) < 1.1);
        assert!(r.max_pairs_per_rank(4096.0) >= 4096.0);
    }
}
