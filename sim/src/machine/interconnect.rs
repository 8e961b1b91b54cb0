//! Picks the measured curve for a collective on a GPU group, or derives one, saying how.
//!
//! Order of preference for `op` on a group of n GPUs whose worst internal link is class C:
//! 1. a curve measured on exactly those GPUs (default NCCL environment before tuned ones);
//! 2. a curve measured on n GPUs whose worst link is C;
//! 3. a curve measured on n GPUs with the nearest link class (slower classes preferred when tied);
//! 4. the same op on another group size m, rescaled by the ring model: size-dependent part × busbw
//!    factor(n)/factor(m); latency by NCCL's ring form `base + nsteps · hop` fitted on the two
//!    smallest sizes measured for the op ([`super::nccl_model`]), else × (n−1)/(m−1) steps;
//! 5. another op on the group: all-gather or reduce-scatter ≈ half an all-reduce (ring all-reduce
//!    = reduce-scatter + all-gather), all-reduce ≈ two all-gathers, all-to-all ≈ all-gather of the
//!    same buffer (each rank moves (n−1)/n of it either way); send/recv from the pair's P2P or
//!    host-staged link curve, else a 2-GPU all-gather of twice the bytes;
//! 6. no collective measured but the pairs' links were (`probe import p2p`, a probe run without
//!    NCCL): where the pairs bounce through host memory and the profile measured the mapped-kernel
//!    host staging, NCCL's SHM ring as NCCL runs it ([`super::shm_ring`]); else an alpha–beta ring
//!    over the group's measured links, each pair by the mode it really uses, the slowest pair's
//!    latency and bandwidth for every step;
//! 7. nothing measured: an alpha–beta ring over the GPU's datasheet link (NVLink, else PCIe).

use super::curve::CommCurve;
use super::nccl_model::{RingLatency, ring_steps};
use super::placement::link_rank;
use super::shm_figures;
use models::GpuSpec;
use models::profile::{
    CollectiveCurve, CollectiveOp, CollectiveStatus, Direction, LinkClass, MachineProfile,
    PairClass, PairLink, TransferMode,
};

/// The size a one-figure link curve's latency point is put at (a small copy, latency-bound).
const SMALL_COPY_BYTES: f64 = 4096.0;

/// Bytes per second one direction of a PCIe link of `gen` × `lanes` carries in practice
/// (≈ 80% of the raw rate after encoding and protocol overhead; Gen5 x16 ≈ 50 GB/s, in line with
/// the 53–56 GB/s P2P figures in data/observations/README.md).
fn pcie_bytes_per_s(pcie_gen: u32, lanes: u32) -> f64 {
    let per_lane_gt = match pcie_gen {
        0..=3 => 8.0,
        4 => 16.0,
        5 => 32.0,
        _ => 64.0,
    };
    per_lane_gt * lanes.max(1) as f64 / 8.0 * 1e9 * 0.8
}

/// Latency per ring step when nothing is measured: NVLink ≈ 3 µs, PCIe ≈ 8 µs per hop (NCCL's
/// small-message all-reduce on 8 GPUs is ~20–25 µs on both kinds of box, 7 steps of the ring).
fn default_step_latency_s(gpu: &GpuSpec) -> f64 {
    if gpu.nvlink_gb_per_s.is_some() {
        3e-6
    } else {
        8e-6
    }
}

pub(super) fn curve_points(c: &CollectiveCurve) -> Vec<(f64, f64)> {
    c.points
        .iter()
        .filter(|p| p.status == CollectiveStatus::Ok)
        .map(|p| (p.bytes as f64, p.time_us.median * 1e-6))
        .collect()
}

pub(super) fn devices_label(devs: &[u32]) -> String {
    let v: Vec<String> = devs.iter().map(|d| d.to_string()).collect();
    v.join(",")
}

pub(super) fn op_name(op: CollectiveOp) -> &'static str {
    match op {
        CollectiveOp::AllReduce => "all_reduce",
        CollectiveOp::AllGather => "all_gather",
        CollectiveOp::ReduceScatter => "reduce_scatter",
        CollectiveOp::AllToAll => "all_to_all",
        CollectiveOp::SendRecv => "send_recv",
    }
}

/// Resolves communication curves for GPU groups from one set of measured curves (a node's, or
/// the one-GPU-per-node curves of a network).
pub struct Interconnect<'a> {
    /// The measured collective curves searched.
    pub collectives: &'a [CollectiveCurve],
    /// The measured GPU pairs (for send/recv from link curves).
    pub links: &'a [PairLink],
    /// The GPU, for the datasheet fallback.
    pub gpu: &'a GpuSpec,
    /// Link class between two devices.
    pub class_of: &'a dyn Fn(u32, u32) -> LinkClass,
    /// The profile whose host staging and NCCL lines cost host-staged groups (`None`: none).
    pub staging: Option<&'a MachineProfile>,
}

impl Interconnect<'_> {
    /// The worst link class inside a group.
    pub fn worst_class(&self, devices: &[u32]) -> LinkClass {
        let mut worst = LinkClass::X;
        for (i, &a) in devices.iter().enumerate() {
            for &b in &devices[i + 1..] {
                let c = (self.class_of)(a, b);
                if link_rank(c) > link_rank(worst) {
                    worst = c;
                }
            }
        }
        worst
    }

    /// The curve of `op` over `devices` (see the module docs for the order of preference).
    pub fn curve(&self, op: CollectiveOp, devices: &[u32]) -> CommCurve {
        if devices.len() <= 1 {
            return CommCurve::free();
        }
        self.resolve(op, devices)
            .unwrap_or_else(|| self.datasheet(op, devices))
    }

    /// Steps 1–6: a curve from what was measured, `None` when nothing applies.
    pub fn resolve(&self, op: CollectiveOp, devices: &[u32]) -> Option<CommCurve> {
        if self.mixed_p2p(devices) {
            // some pairs with P2P, some without (an `NCCL_P2P_LEVEL` below the widest path): no
            // curve of another group says what this one does; its ring over its own links does
            return self.measured_links(op, devices);
        }
        self.measured(op, devices)
            .or_else(|| self.other_size(op, devices))
            .or_else(|| self.other_op(op, devices))
            .or_else(|| self.measured_links(op, devices))
    }

    /// Whether the group's pairs are in more than one P2P state.
    fn mixed_p2p(&self, devices: &[u32]) -> bool {
        let states: std::collections::BTreeSet<_> = self
            .links
            .iter()
            .filter(|l| devices.contains(&l.src) && devices.contains(&l.dst))
            .filter_map(models::profile::P2pState::of_link)
            .collect();
        states.len() > 1
    }

    /// Step 6: a ring over the group's measured pair links.
    fn measured_links(&self, op: CollectiveOp, devices: &[u32]) -> Option<CommCurve> {
        let n = devices.len();
        let (mut step_s, mut bytes_per_s, mut staged) = (0.0_f64, f64::INFINITY, false);
        for i in 0..n {
            let (a, b) = (devices[i], devices[(i + 1) % n]);
            let (lat, bw, host) = self.link_figures(a, b)?;
            step_s = step_s.max(lat);
            bytes_per_s = bytes_per_s.min(bw);
            staged |= host;
        }
        if let Some(fig) = staged
            .then(|| {
                self.staging
                    .and_then(|p| shm_figures::from_profile(p, devices))
            })
            .flatten()
        {
            return Some(fig.curve(
                op,
                n as u32,
                format!(
                    "derived: no {} measured, GPUs {} bounce through host memory: {}",
                    op_name(op),
                    devices_label(devices),
                    fig.describe()
                ),
            ));
        }
        let routed = devices.iter().enumerate().any(|(i, &a)| {
            self.links.iter().any(|l| {
                (l.src, l.dst) == (a, devices[(i + 1) % n])
                    && models::profile::P2pState::of_link(l)
                        == Some(models::profile::P2pState::Routed)
            })
        });
        let how = match (staged, routed) {
            (true, _) => "host-staged",
            (false, true) => "routed P2P (peer copies through the host)",
            _ => "P2P",
        };
        Some(CommCurve::alpha_beta(
            step_s * ring_steps(op, n as u32),
            bytes_per_s / op.busbw_factor(n as u32).max(1e-9),
            format!(
                "derived: no {} measured, ring over the measured {how} links of GPUs {} ({:.1} µs, {:.1} GB/s per step, slowest pair)",
                op_name(op),
                devices_label(devices),
                step_s * 1e6,
                bytes_per_s / 1e9
            ),
        ))
    }

    /// One pair's measured small-copy latency (s), one-way bandwidth (B/s) and whether it is
    /// host-staged: the mode the pair really uses, from its largest measured size.
    fn link_figures(&self, a: u32, b: u32) -> Option<(f64, f64, bool)> {
        let link = self
            .links
            .iter()
            .find(|l| (l.src, l.dst) == (a, b))
            .or_else(|| self.links.iter().find(|l| (l.src, l.dst) == (b, a)))?;
        // a routed pair keeps NCCL's P2P transport: its peer copies (through the host) are the
        // path; only an `off` pair is staged by NCCL's SHM transport
        let host = models::profile::P2pState::of_link(link) == Some(models::profile::P2pState::Off)
            || (matches!(link.classification, Some(PairClass::HostBounce))
                && !link
                    .curves
                    .iter()
                    .any(|c| c.mode == TransferMode::CopyEngine));
        let mode = if host {
            TransferMode::HostStaged
        } else {
            TransferMode::CopyEngine
        };
        let curve = link
            .curves
            .iter()
            .find(|c| c.mode == mode && c.direction == Direction::Unidirectional)?;
        let big = curve.points.iter().max_by_key(|p| p.bytes)?;
        let key = if host { "host-staged" } else { "copy-engine" };
        let small = curve.points.iter().min_by_key(|p| p.bytes)?;
        let lat_us = link
            .latency_us
            .get(key)
            .map_or(small.time_us.median, |s| s.median);
        let bw = big.gb_per_s.median * 1e9;
        (bw > 0.0 && lat_us.is_finite()).then_some((lat_us * 1e-6, bw, host))
    }

    /// Steps 1–3: a curve measured on a group of the same size.
    fn measured(&self, op: CollectiveOp, devices: &[u32]) -> Option<CommCurve> {
        let mut want: Vec<u32> = devices.to_vec();
        want.sort_unstable();
        let class = self.worst_class(devices);
        let best = self
            .collectives
            .iter()
            .filter(|c| c.op == op && c.devices.len() == devices.len())
            .filter(|c| !curve_points(c).is_empty())
            .min_by_key(|c| {
                let mut have = c.devices.clone();
                have.sort_unstable();
                let exact = have != want;
                let c_class = c.link_class.unwrap_or_else(|| self.worst_class(&c.devices));
                let dist = link_rank(c_class).abs_diff(link_rank(class));
                // prefer slower classes on ties (a pessimistic substitute)
                let faster = link_rank(c_class) < link_rank(class);
                (exact, dist, faster, !c.nccl_env.is_empty())
            })?;
        let c_class = best
            .link_class
            .unwrap_or_else(|| self.worst_class(&best.devices));
        let how = if c_class == class {
            format!(
                "measured {} on GPUs {} ({:?})",
                op_name(op),
                devices_label(&best.devices),
                c_class
            )
        } else {
            format!(
                "measured {} on GPUs {} ({:?}) standing in for a {:?} group",
                op_name(op),
                devices_label(&best.devices),
                c_class,
                class
            )
        };
        CommCurve::from_points(&curve_points(best), how)
    }

    /// Step 4: the same op measured on another group size, rescaled by the ring model.
    fn other_size(&self, op: CollectiveOp, devices: &[u32]) -> Option<CommCurve> {
        let n = devices.len() as u32;
        let class = self.worst_class(devices);
        let best = self
            .collectives
            .iter()
            .filter(|c| c.op == op && c.devices.len() > 1 && !curve_points(c).is_empty())
            .min_by_key(|c| {
                let c_class = c.link_class.unwrap_or_else(|| self.worst_class(&c.devices));
                (
                    link_rank(c_class).abs_diff(link_rank(class)),
                    (c.devices.len() as u32).abs_diff(n),
                    !c.nccl_env.is_empty(),
                )
            })?;
        let m = best.devices.len() as u32;
        let raw = CommCurve::from_points(&curve_points(best), "")?;
        let bw = op.busbw_factor(n) / op.busbw_factor(m);
        if let Some(fit) = self.ring_latency(op, best) {
            return Some(raw.rescaled(
                fit.time_s(op, n) / fit.time_s(op, m),
                bw,
                format!(
                    "modelled, not measured: {} on {n} GPUs from the one measured on {m} GPUs ({}), latency by {}, bandwidth part by NCCL's bus factor",
                    op_name(op),
                    devices_label(&best.devices),
                    fit.describe()
                ),
            ));
        }
        let lat = ring_steps(op, n) / ring_steps(op, m);
        Some(raw.rescaled(
            lat,
            bw,
            format!(
                "derived: {} measured on {} GPUs ({}) rescaled to {} GPUs by the ring model",
                op_name(op),
                m,
                devices_label(&best.devices),
                n
            ),
        ))
    }

    /// NCCL's ring latency for `op` ([`super::nccl_model`]) fitted on the two smallest group sizes
    /// measured for it in `like`'s NCCL environment, each at the larger of their smallest measured
    /// sizes (latency-bound there); `None` for a non-ring op, fewer than two sizes or an
    /// unphysical fit (then the plain ring-step scaling stands).
    fn ring_latency(&self, op: CollectiveOp, like: &CollectiveCurve) -> Option<RingLatency> {
        if !matches!(
            op,
            CollectiveOp::AllReduce | CollectiveOp::AllGather | CollectiveOp::ReduceScatter
        ) {
            return None;
        }
        let mut sizes: Vec<(u32, CommCurve, f64)> = self
            .collectives
            .iter()
            .filter(|c| c.op == op && c.nccl_env == like.nccl_env && c.devices.len() > 1)
            .filter_map(|c| {
                let pts = curve_points(c);
                let first = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
                Some((
                    c.devices.len() as u32,
                    CommCurve::from_points(&pts, "")?,
                    first,
                ))
            })
            .collect();
        sizes.sort_by_key(|s| s.0);
        sizes.dedup_by_key(|s| s.0);
        let [a, b, ..] = sizes.as_slice() else {
            return None;
        };
        let at_bytes = a.2.max(b.2);
        RingLatency::fit(op, (a.0, a.1.time_s(at_bytes)), (b.0, b.1.time_s(at_bytes)))
    }

    /// Step 5: derived from another op on the same group.
    fn other_op(&self, op: CollectiveOp, devices: &[u32]) -> Option<CommCurve> {
        let from = |src: CollectiveOp| -> Option<CommCurve> {
            self.measured(src, devices)
                .or_else(|| self.other_size(src, devices))
        };
        match op {
            CollectiveOp::AllGather | CollectiveOp::ReduceScatter => from(CollectiveOp::AllReduce)
                .map(|c| c.rescaled(0.5, 0.5, format!("derived: half of {}", c.source))),
            CollectiveOp::AllReduce => from(CollectiveOp::AllGather)
                .or_else(|| from(CollectiveOp::ReduceScatter))
                .map(|c| c.rescaled(2.0, 2.0, format!("derived: twice {}", c.source))),
            CollectiveOp::AllToAll => from(CollectiveOp::AllGather)
                .map(|c| c.rescaled(1.0, 1.0, format!("derived: like {}", c.source))),
            CollectiveOp::SendRecv => {
                if devices.len() != 2 {
                    return None;
                }
                self.link_send_recv(devices[0], devices[1]).or_else(|| {
                    let ag = CollectiveOp::AllGather;
                    from(ag).or_else(|| self.other_op(ag, devices)).map(|c| {
                        c.at_scaled_bytes(
                            2.0,
                            format!(
                                "derived: 2-GPU all_gather of twice the bytes ({})",
                                c.source
                            ),
                        )
                    })
                })
            }
        }
    }

    /// Send/recv of one GPU pair from its measured one-way link curve (P2P copy engine when the
    /// pair does P2P, host-staged copies otherwise), with the measured small-copy latency where
    /// the curve is a single published figure.
    fn link_send_recv(&self, src: u32, dst: u32) -> Option<CommCurve> {
        let link = self
            .links
            .iter()
            .find(|l| l.src == src && l.dst == dst)
            .or_else(|| self.links.iter().find(|l| l.src == dst && l.dst == src))?;
        let p2p = matches!(link.classification, Some(PairClass::P2p) | None)
            && link.can_access_peer != Some(false);
        let want_mode = if p2p {
            TransferMode::CopyEngine
        } else {
            TransferMode::HostStaged
        };
        let curve = link
            .curves
            .iter()
            .filter(|c| c.direction == Direction::Unidirectional)
            .min_by_key(|c| c.mode != want_mode)?;
        let mut pts: Vec<(f64, f64)> = curve
            .points
            .iter()
            .map(|p| (p.bytes as f64, p.time_us.median * 1e-6))
            .collect();
        // a published figure is one bandwidth point at a large size: alone it would price every
        // smaller message at that size's time; the pair's small-copy latency for the same path
        // is the other end of the line (a probe's curve has its own small sizes)
        let latency_key = if curve.mode == TransferMode::CopyEngine {
            "copy-engine"
        } else {
            "host-staged"
        };
        if let ([(bytes, t)], Some(lat)) = (pts.as_slice(), link.latency_us.get(latency_key)) {
            let (bytes, t, lat_s) = (*bytes, *t, lat.median * 1e-6);
            if lat_s > 0.0 && lat_s < t && bytes > SMALL_COPY_BYTES {
                pts.insert(0, (SMALL_COPY_BYTES, lat_s + SMALL_COPY_BYTES * t / bytes));
            }
        }
        CommCurve::from_points(
            &pts,
            format!(
                "derived: send/recv from the measured {:?} link curve GPU {src}→{dst}",
                curve.mode
            ),
        )
    }

    /// Step 7: datasheet ring model.
    fn datasheet(&self, op: CollectiveOp, devices: &[u32]) -> CommCurve {
        let n = devices.len() as u32;
        let link = self
            .gpu
            .nvlink_gb_per_s
            .map(|g| g * 1e9)
            .unwrap_or_else(|| pcie_bytes_per_s(self.gpu.pcie_gen, self.gpu.pcie_lanes));
        // busbw = link bandwidth in the ring model, time = bytes × factor / busbw
        let algbw = link / op.busbw_factor(n).max(1e-9);
        CommCurve::alpha_beta(
            default_step_latency_s(self.gpu) * ring_steps(op, n),
            algbw,
            format!(
                "assumed: no {} measured, ring over the datasheet link ({:.0} GB/s)",
                op_name(op),
                link / 1e9
            ),
        )
    }
}
