//! Which NCCL environment is faster, per size range: each variant's curve (e.g.
//! `NCCL_P2P_DISABLE=1`) against the defaults' curve of the same group and op, sizes merged into
//! runs where the same side wins by more than 5 % — the answer to "should this server export
//! the variable?", per message size.

use models::profile::{CollectiveCurve, CollectiveStatus};
use models::units::fmt_bytes;

/// Ratios within this of 1 count as a tie.
const TIE: f64 = 0.05;

/// One line per (group, op, variant) saying where the variant or the defaults are faster.
pub fn compare_variants(curves: &[CollectiveCurve]) -> Vec<String> {
    let mut out = Vec::new();
    for base in curves.iter().filter(|c| c.nccl_env.is_empty()) {
        for var in curves
            .iter()
            .filter(|c| !c.nccl_env.is_empty() && c.devices == base.devices && c.op == base.op)
        {
            if let Some(line) = compare_pair(base, var) {
                out.push(line);
            }
        }
    }
    out
}

/// Sizes where both curves are `ok`: (bytes, variant speed / defaults speed).
fn ratios(base: &CollectiveCurve, var: &CollectiveCurve) -> Vec<(u64, f64)> {
    base.points
        .iter()
        .filter(|p| p.status == CollectiveStatus::Ok && p.algbw_gb_per_s > 0.0)
        .filter_map(|p| {
            let q = var.points.iter().find(|q| q.bytes == p.bytes)?;
            (q.status == CollectiveStatus::Ok && q.algbw_gb_per_s > 0.0)
                .then(|| (p.bytes, q.algbw_gb_per_s / p.algbw_gb_per_s))
        })
        .collect()
}

fn compare_pair(base: &CollectiveCurve, var: &CollectiveCurve) -> Option<String> {
    let r = ratios(base, var);
    if r.is_empty() {
        return None;
    }
    let side = |x: f64| {
        if x > 1.0 + TIE {
            1
        } else if x < 1.0 - TIE {
            -1
        } else {
            0
        }
    };
    // Runs of consecutive sizes on the same side.
    let mut runs: Vec<(i32, u64, u64, f64, f64)> = Vec::new();
    for &(b, x) in &r {
        match runs.last_mut() {
            Some(run) if run.0 == side(x) => {
                run.2 = b;
                run.3 = run.3.min(x);
                run.4 = run.4.max(x);
            }
            _ => runs.push((side(x), b, b, x, x)),
        }
    }
    let label = super::env_label(&var.nccl_env);
    let parts: Vec<String> = runs
        .iter()
        .map(|&(s, lo, hi, min, max)| {
            let span = if lo == hi {
                fmt_bytes(lo)
            } else {
                format!("{} – {}", fmt_bytes(lo), fmt_bytes(hi))
            };
            match s {
                1 => format!("{label} faster at {span} ({min:.2}–{max:.2}×)"),
                -1 => format!(
                    "defaults faster at {span} ({:.2}–{:.2}×)",
                    1.0 / max,
                    1.0 / min
                ),
                _ => format!("within 5 % at {span}"),
            }
        })
        .collect();
    Some(format!(
        "{:?} on {:?}, {label} vs defaults: {}",
        base.op,
        base.devices,
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use models::profile::{CollectiveOp, CollectivePoint};

    fn curve(env: &[(&str, &str)], algbw: &[(u64, f64)]) -> CollectiveCurve {
        CollectiveCurve {
            op: CollectiveOp::AllReduce,
            devices: vec![0, 1],
            link_class: None,
            nccl_env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            points: algbw
                .iter()
                .map(|&(bytes, a)| CollectivePoint {
                    bytes,
                    time_us: crate::stats::missing(),
                    algbw_gb_per_s: a,
                    busbw_gb_per_s: a,
                    status: CollectiveStatus::Ok,
                })
                .collect(),
        }
    }

    #[test]
    fn size_ranges_name_the_faster_side() {
        let base = curve(
            &[],
            &[(8, 1.0), (1024, 1.0), (1 << 20, 10.0), (1 << 28, 20.0)],
        );
        let var = curve(
            &[("NCCL_P2P_DISABLE", "1")],
            &[(8, 1.5), (1024, 1.2), (1 << 20, 10.2), (1 << 28, 10.0)],
        );
        let lines = compare_variants(&[base, var]);
        assert_eq!(lines.len(), 1);
        let l = &lines[0];
        assert!(
            l.contains("NCCL_P2P_DISABLE=1 faster at 8 B – 1 KiB (1.20–1.50×)"),
            "{l}"
        );
        assert!(l.contains("within 5 % at 1 MiB"), "{l}");
        assert!(l.contains("defaults faster at 256 MiB (2.00–2.00×)"), "{l}");
    }

    #[test]
    fn no_variant_no_line() {
        let base = curve(&[], &[(8, 1.0)]);
        assert!(compare_variants(&[base]).is_empty());
    }
}
