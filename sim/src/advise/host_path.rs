//! `sim advise --question p2p` on a machine without working P2P (issue 34, the user's VM): the
//! layout simulated over host paths of every plausible latency and bandwidth, for each state and
//! path — `off` (NCCL's SHM ring through mapped host memory), `routed` with NCCL's P2P ring,
//! `routed` with the engine's one-shot custom all-reduce — at one stream and at the load asked,
//! eager and with CUDA graphs. Nothing is fitted to a throughput: the two figures are machine
//! facts `probe run --quick` prints on its `host path:` lines
//! ([`models::profile::host_path`]); the sweep says which values would reproduce a measured
//! throughput (`--observed`), and so which probe line decides.
//!
//! Why the range is plausible (public reports, none fitted): an all-reduce through the host in a
//! KVM guest can fall to a few GB/s — NCCL all_reduce_perf averaging ~2 GB/s bus bandwidth in an
//! Unraid (KVM) guest with the IOMMU on (tinygrad/open-gpu-kernel-modules#6, 2024-10-19), P2P
//! slower than SHM on 8 PCIe GPUs (NVIDIA/nccl#1817, 6.1 GB/s average), NCCL's maintainer on P2P
//! through the CPU being far slower than SHM and PCIe speeds unseen inside a VM (NVIDIA/nccl#428)
//! — and peer copies in a Proxmox guest with the IOMMU on can arrive zeroed (IO_PAGE_FAULT,
//! tinygrad/open-gpu-kernel-modules#18), which probe's data check classifies `off`. IOTLB misses
//! on 4 KiB pages alone cost a NIC up to ~20% at 200 Gb/s (Intel/AMD, recovered with huge
//! pages): a 10× slower path needs more than that, which is why the sweep goes to 1 GB/s and
//! the probe, not a guess, says where the machine is.
//!
//! Arithmetic the sweep confirms for GLM-5 TP8 (hidden 6144, 78 layers, two bf16 all-reduces a
//! layer): a ring moves 2·(7/8)·12,288 B ≈ 21.5 KB a rank per all-reduce, ≈3.35 MB per token of
//! a forward (prefill or decode), so a host path of b GB/s costs ≈3.35/b ms per token: 516 total
//! tok/s needs b ≳ 1.7 GB/s before any compute or latency. One stream at ~11 tok/s with CUDA
//! graphs is ~91 ms a step against ~19 ms with P2P: ~0.46 ms per 12 KB all-reduce, a latency —
//! 14 ring steps of ~33 µs (NCCL, SHM or P2P) or two ~230 µs round trips (the one-shot kernel).

use crate::cost::{CostModel, Knobs};
use crate::machine::Machine;
use crate::options::ServerOptions;
use crate::workload::Workload;
use models::profile::P2pState;
use models::profile::host_path::HostPathFigures;
use models::{Layout, ModelSpec};
use serde::{Deserialize, Serialize};

/// Host-path bandwidths swept, GB/s: from the ~1 GB/s a VM's bounced P2P showed the user to the
/// ~37 GB/s a healthy Gen5 host-staged copy reaches.
pub const SWEEP_GB_PER_S: [f64; 5] = [1.0, 2.0, 4.0, 8.0, 37.0];
/// Host-path latencies swept, µs: the published ~14 µs host-staged copy up to the ~500 µs a
/// transfer would take if each one waited on a polling thread or an exit to the hypervisor.
pub const SWEEP_LATENCY_US: [f64; 4] = [14.0, 40.0, 150.0, 500.0];

/// A state and the all-reduce path run over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SweptPath {
    /// P2P off: NCCL's SHM ring; the host path is the mapped-kernel staging.
    OffShm,
    /// P2P routed, `--disable-custom-all-reduce`: NCCL's P2P ring over the routed peer copy.
    RoutedNccl,
    /// P2P routed, the one-shot custom all-reduce (`--enable-pcie-oneshot-allreduce`) below its
    /// cutoff, NCCL's ring above.
    RoutedCustom,
}

impl SweptPath {
    pub const ALL: [SweptPath; 3] = [
        SweptPath::OffShm,
        SweptPath::RoutedNccl,
        SweptPath::RoutedCustom,
    ];

    pub fn label(self) -> &'static str {
        match self {
            SweptPath::OffShm => "off, NCCL SHM",
            SweptPath::RoutedNccl => "routed, NCCL P2P",
            SweptPath::RoutedCustom => "routed, custom AR",
        }
    }

    fn state(self) -> P2pState {
        match self {
            SweptPath::OffShm => P2pState::Off,
            _ => P2pState::Routed,
        }
    }

    /// The `probe run --quick` line whose two figures index this path's rows.
    pub fn probe_line(self) -> &'static str {
        match self {
            SweptPath::OffShm => {
                "`host path: SHM` (mapped host memory: one-shot latency µs, GB/s at the largest size)"
            }
            _ => "`host path: peer copy` (slowest pair: small-copy µs, best GB/s)",
        }
    }
}

/// A throughput the user measured: output tok/s at a client concurrency (`--observed 64:225`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Observed {
    pub concurrency: u32,
    pub output_tok_s: f64,
}

impl std::str::FromStr for Observed {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "`{s}`: --observed takes CONCURRENCY:OUTPUT_TOK_S, e.g. 64:225 (a whole number of streams ≥ 1, a throughput > 0)"
            )
        };
        let (c, t) = s.split_once(':').ok_or_else(bad)?;
        let concurrency: u32 = c.trim().parse().map_err(|_| bad())?;
        let output_tok_s: f64 = t.trim().parse().map_err(|_| bad())?;
        if concurrency == 0 || !(output_tok_s.is_finite() && output_tok_s > 0.0) {
            return Err(bad());
        }
        Ok(Observed {
            concurrency,
            output_tok_s,
        })
    }
}

/// One host path, one state and path: output tok/s at one stream and at the load, eager and with
/// CUDA graphs (`None` where it could not run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    pub path: SweptPath,
    pub latency_us: f64,
    pub gb_per_s: f64,
    pub one_eager: Option<f64>,
    pub one_graphs: Option<f64>,
    pub load_eager: Option<f64>,
    pub load_graphs: Option<f64>,
}

impl SweepRow {
    /// Output tok/s at `concurrency` (1 or the load's), eager or with graphs.
    pub fn at(&self, one: bool, eager: bool) -> Option<f64> {
        match (one, eager) {
            (true, true) => self.one_eager,
            (true, false) => self.one_graphs,
            (false, true) => self.load_eager,
            (false, false) => self.load_graphs,
        }
    }
}

/// The sweep and what it says about the observations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostPathSweep {
    /// The load's client concurrency (the `load_*` columns).
    pub concurrency: u32,
    pub rows: Vec<SweepRow>,
    /// Per path and observation: which host paths bracket it (one line each).
    pub brackets: Vec<String>,
    /// Per state and path, the one host path that gives both observations (one stream and
    /// the load), where both were given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub joints: Vec<Joint>,
    /// The `probe run --quick` lines that decide, and how to read them.
    pub deciding: Vec<String>,
}

/// What the sweep simulates: the box, the layout and flags, the load (`--question p2p`'s).
pub struct SweepQuestion<'a> {
    /// The box with working P2P where known, else the machine itself: each variant replaces
    /// every pair's path.
    pub base: &'a Machine,
    pub spec: &'a ModelSpec,
    pub layout: Layout,
    pub opts: &'a ServerOptions,
    pub knobs: Knobs,
    pub workload: &'a Workload,
    /// The one-shot kernel's cutoff for a PCIe group of more than two GPUs, bytes.
    pub oneshot_bytes: u64,
    /// Throughputs the user measured (`--observed`), for the brackets.
    pub observed: &'a [Observed],
}

/// The layout over every swept host path, each state and path, at one stream and at the load.
pub fn sweep(q: &SweepQuestion<'_>) -> HostPathSweep {
    let (base, observed) = (q.base, q.observed);
    let load = q.workload.max_concurrency.unwrap_or(q.workload.num_prompts);
    let one = Workload {
        max_concurrency: Some(1),
        num_prompts: 2,
        ..q.workload.clone()
    };
    let mut rows = Vec::new();
    for path in SweptPath::ALL {
        for &latency_us in &SWEEP_LATENCY_US {
            for &gb_per_s in &SWEEP_GB_PER_S {
                let figures = HostPathFigures {
                    latency_us,
                    gb_per_s,
                };
                let p = crate::p2p_variant::with_host_path(
                    &base.profile,
                    path.state(),
                    figures,
                    "sim advise --question p2p, host-path sweep",
                );
                let m = Machine::from_profile(&format!("{}, {}", base.name(), path.label()), p);
                let run = |w: &Workload, eager: bool| {
                    let m = m.as_ref().ok()?;
                    let o = path_options(q, path, eager);
                    let cm = CostModel::new(m, q.spec, q.layout, &o, q.knobs).ok()?;
                    crate::serving::simulate(&cm, &o, w)
                        .ok()
                        .map(|r| r.output_throughput)
                };
                rows.push(SweepRow {
                    path,
                    latency_us,
                    gb_per_s,
                    one_eager: run(&one, true),
                    one_graphs: run(&one, false),
                    load_eager: run(q.workload, true),
                    load_graphs: run(q.workload, false),
                });
            }
        }
    }
    let brackets = observed
        .iter()
        .flat_map(|o| {
            SweptPath::ALL
                .iter()
                .map(|&p| bracket_line(&rows, p, o, load))
                .collect::<Vec<_>>()
        })
        .collect();
    let one = observed.iter().find(|o| o.concurrency == 1);
    let many = observed.iter().find(|o| o.concurrency == load && load > 1);
    let joints: Vec<Joint> = match (one, many) {
        (Some(a), Some(b)) => SweptPath::ALL
            .iter()
            .map(|&p| joint(&rows, p, a.output_tok_s, b.output_tok_s))
            .collect(),
        _ => Vec::new(),
    };
    HostPathSweep {
        concurrency: load,
        deciding: deciding_lines(&joints),
        joints,
        rows,
        brackets,
    }
}

/// The one host path of a state and path that gives both observations, one stream and the
/// load, where there is one (`None` for the figures: no host path of the sweep gives both).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Joint {
    pub path: SweptPath,
    pub latency_us: Option<f64>,
    pub gb_per_s: Option<f64>,
    /// The CUDA-graph gain at the load at the swept row nearest that host path.
    pub graph_gain: Option<f64>,
}

/// Log-linear interpolation of `pts` (x ascending) at `x`, `None` outside them.
fn interp(pts: &[(f64, f64)], x: f64) -> Option<f64> {
    pts.windows(2).find_map(|w| {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        (x0 <= x && x <= x1).then(|| {
            let f = (x.ln() - x0.ln()) / (x1.ln() - x0.ln());
            (y0.ln() + f * (y1.ln() - y0.ln())).exp()
        })
    })
}

/// The host path that gives `one` tok/s at one stream (with CUDA graphs where eager is
/// CPU-bound below it, eager otherwise) and `many` at the load (eager): the latency the one
/// stream needs at a bandwidth and the bandwidth the load needs at a latency, iterated to their
/// crossing.
fn joint(rows: &[SweepRow], path: SweptPath, one: f64, many: f64) -> Joint {
    let mine: Vec<&SweepRow> = rows.iter().filter(|r| r.path == path).collect();
    let eager_reaches = mine.iter().any(|r| r.one_eager.is_some_and(|t| t >= one));
    // latency the one stream needs, by bandwidth; bandwidth the load needs, by latency
    let lat_at_gb: Vec<(f64, f64)> = SWEEP_GB_PER_S
        .iter()
        .filter_map(|&gb| {
            let pts: Vec<(f64, f64)> = mine
                .iter()
                .filter(|r| r.gb_per_s == gb)
                .filter_map(|r| r.at(true, eager_reaches).map(|t| (r.latency_us, t)))
                .collect();
            crossing(&pts, one).map(|(_, _, l)| (gb, l))
        })
        .collect();
    let gb_at_lat: Vec<(f64, f64)> = SWEEP_LATENCY_US
        .iter()
        .filter_map(|&l| {
            let pts: Vec<(f64, f64)> = mine
                .iter()
                .filter(|r| r.latency_us == l)
                .filter_map(|r| r.load_eager.map(|t| (r.gb_per_s, t)))
                .collect();
            crossing(&pts, many).map(|(_, _, b)| (l, b))
        })
        .collect();
    let mut gb = SWEEP_GB_PER_S[SWEEP_GB_PER_S.len() / 2];
    let mut found = None;
    for _ in 0..8 {
        let Some(l) = interp(&lat_at_gb, gb) else {
            break;
        };
        let Some(b) = interp(&gb_at_lat, l) else {
            break;
        };
        found = Some((l, b));
        gb = b;
    }
    let graph_gain = found.and_then(|(l, b)| {
        let near = |r: &&&SweepRow| (r.latency_us / l).ln().abs() + (r.gb_per_s / b).ln().abs();
        mine.iter()
            .min_by(|a, b| near(a).total_cmp(&near(b)))
            .and_then(|r| r.load_graphs.zip(r.load_eager).map(|(g, e)| g / e))
    });
    Joint {
        path,
        latency_us: found.map(|f| f.0),
        gb_per_s: found.map(|f| f.1),
        graph_gain,
    }
}

/// The question's options for `path`, eager or with CUDA graphs.
fn path_options(q: &SweepQuestion<'_>, path: SweptPath, eager: bool) -> ServerOptions {
    let custom = path == SweptPath::RoutedCustom;
    ServerOptions {
        disable_cuda_graph: eager,
        disable_custom_all_reduce: !custom,
        pcie_custom_all_reduce_max_bytes: custom.then_some(q.oneshot_bytes),
        ..q.opts.clone()
    }
}

/// Where along one axis (bandwidth at a latency, or latency at a bandwidth) the predictions
/// pass `want`: the two grid values around it and the log-interpolated crossing.
fn crossing(points: &[(f64, f64)], want: f64) -> Option<(f64, f64, f64)> {
    points.windows(2).find_map(|w| {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        let (lo, hi) = (y0.min(y1), y0.max(y1));
        (lo <= want && want <= hi && hi > lo).then(|| {
            let f = (want.ln() - y0.ln()) / (y1.ln() - y0.ln());
            (x0, x1, (x0.ln() + f * (x1.ln() - x0.ln())).exp())
        })
    })
}

/// One line: where `path`'s predictions bracket the observation, eager and with graphs. One
/// stream is bound by latency, so it is bracketed along the latencies at each bandwidth; the
/// load along the bandwidths at each latency, with the CUDA-graph gain of the rows around it.
fn bracket_line(rows: &[SweepRow], path: SweptPath, o: &Observed, load: u32) -> String {
    let one = o.concurrency == 1;
    if !one && o.concurrency != load {
        return format!(
            "{}: {} streams not simulated (the sweep runs 1 and --max-concurrency {load})",
            path.label(),
            o.concurrency
        );
    }
    let mine: Vec<&SweepRow> = rows.iter().filter(|r| r.path == path).collect();
    let (fixed, along): (&[f64], &str) = if one {
        (&SWEEP_GB_PER_S, "µs")
    } else {
        (&SWEEP_LATENCY_US, "GB/s")
    };
    let mut parts = Vec::new();
    for eager in [true, false] {
        let mut hits = Vec::new();
        for &v in fixed {
            let line: Vec<&&SweepRow> = mine
                .iter()
                .filter(|r| {
                    if one {
                        r.gb_per_s == v
                    } else {
                        r.latency_us == v
                    }
                })
                .collect();
            let pts: Vec<(f64, f64)> = line
                .iter()
                .filter_map(|r| {
                    let x = if one { r.latency_us } else { r.gb_per_s };
                    r.at(one, eager).map(|t| (x, t))
                })
                .collect();
            let Some((a, b, x)) = crossing(&pts, o.output_tok_s) else {
                continue;
            };
            let at = if one {
                format!("{v:.0} GB/s")
            } else {
                format!("{v:.0} µs")
            };
            let gains: Vec<f64> = line
                .iter()
                .filter(|r| !one && (r.gb_per_s == a || r.gb_per_s == b))
                .filter_map(|r| r.load_graphs.zip(r.load_eager).map(|(g, e)| g / e))
                .collect();
            let gain = if gains.is_empty() {
                String::new()
            } else {
                let lo = gains.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = gains.iter().copied().fold(0.0, f64::max);
                format!(", graph gain {lo:.2}–{hi:.2}×")
            };
            hits.push(format!("at {at}: {a:.0}–{b:.0} {along} (≈{x:.1}{gain})"));
        }
        let mode = if eager { "eager" } else { "graphs" };
        parts.push(if hits.is_empty() {
            let v: Vec<f64> = mine.iter().filter_map(|r| r.at(one, eager)).collect();
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            format!("{mode}: no host path brackets it (all {lo:.1}–{hi:.1})")
        } else {
            format!("{mode}: {}", hits.join(", "))
        });
    }
    format!(
        "{} at {} stream(s), observed {:.0} tok/s — {}",
        path.label(),
        o.concurrency,
        o.output_tok_s,
        parts.join("; ")
    )
}

/// The measurement that decides: the `probe run --quick` lines, how each settles the rows, and
/// the host path per state and path that would reproduce the observations.
fn deciding_lines(joints: &[Joint]) -> Vec<String> {
    let mut out = vec![
        "decides: one `probe run --quick` in the machine: its `P2P state:` line picks the rows (off: SHM; routed: NCCL P2P or custom AR)".to_string(),
        format!(
            "then the {} or the {} line gives the latency and bandwidth the rows are indexed by; the row nearest both is the prediction",
            SweptPath::OffShm.probe_line(),
            SweptPath::RoutedNccl.probe_line()
        ),
    ];
    for j in joints {
        out.push(match (j.latency_us, j.gb_per_s) {
            (Some(l), Some(b)) => format!(
                "{}: both observations at ≈{l:.0} µs and ≈{b:.1} GB/s (graph gain there {}): {} printing about that says this state and path explain them; a bandwidth several times higher says the missing time is elsewhere",
                j.path.label(),
                j.graph_gain.map_or("—".into(), |g| format!("{g:.2}×")),
                j.path.probe_line()
            ),
            _ => format!(
                "{}: no host path of the sweep gives both observations (the latency one stream needs leaves the load below it at every bandwidth, or the reverse): this state and path do not explain them",
                j.path.label()
            ),
        });
    }
    out.push("check: NCCL's all_reduce busbw at 1 MiB on all GPUs (the NCCL table) is about the host path's GB/s for a ring (SHM or P2P); far above it, the interconnect is not what is slow".into());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observed_reads_concurrency_and_throughput_and_refuses_the_rest() {
        let o: Observed = "64:225".parse().unwrap();
        assert_eq!((o.concurrency, o.output_tok_s), (64, 225.0));
        for bad in ["64", "0:225", "64:-1", "x:1", "64:NaN", "64:inf", "1.5:10"] {
            let e = bad.parse::<Observed>().unwrap_err();
            assert!(e.contains("CONCURRENCY:OUTPUT_TOK_S"), "{bad}: {e}");
        }
    }

    #[test]
    fn crossing_finds_the_interval_and_interpolates_in_logs() {
        let pts = [(1.0, 100.0), (2.0, 200.0), (4.0, 300.0)];
        let (a, b, x) = crossing(&pts, 150.0).unwrap();
        assert_eq!((a, b), (1.0, 2.0));
        assert!(x > 1.0 && x < 2.0, "{x}");
        assert!(crossing(&pts, 50.0).is_none());
        assert!(crossing(&pts, 400.0).is_none());
        assert!((interp(&pts, 2.0).unwrap() - 200.0).abs() < 1e-9);
        assert!(interp(&pts, 8.0).is_none());
    }
}
