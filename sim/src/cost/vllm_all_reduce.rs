//! vLLM's custom all-reduce, as vLLM decides and runs it (its own file, beside SGLang's in
//! [`super::comm`]). Read from vLLM main:
//!
//! - `distributed/device_communicators/custom_all_reduce.py` (`CustomAllreduce.__init__`,
//!   `should_custom_ar`): world sizes 2, 4, 6 and 8 only; disabled across nodes, on more than
//!   two GPUs that are not fully connected ("not supported on more than two PCIe-only GPUs"),
//!   without P2P (`_can_p2p`), or by `--disable-custom-all-reduce`; used for inputs below
//!   `max_size` (8 MiB) that are multiples of 16 bytes.
//! - `csrc/custom_all_reduce.cuh` (`CustomAllreduce::allreduce`): two GPUs always run the
//!   one-stage kernel; fully connected (NVLink) groups run one stage below 512 KiB on up to 4
//!   GPUs and below 256 KiB on up to 8, two stages (reduce-scatter then all-gather through the
//!   peers' buffers) above.
//!
//! The RTX PRO 6000 community build adds a one-stage PCIe kernel on more GPUs
//! (`VLLM_ENABLE_PCIE_ALLREDUCE=1`, 56 KB cutoff in the rtx6kpro Kimi-K2.6 runs), carried as
//! [`ServerOptions::pcie_custom_all_reduce_max_bytes`].
//!
//! Cost: one stage is one kernel (a launch-and-flag latency, 5 µs over NVLink, 7.4 µs over PCIe,
//! [`PCIE_LATENCY_S`]; SGLang's model takes the same) plus every rank loading its peers' messages
//! ([`real_one_shot_bytes_per_s`]); two stages pay the latency twice and move `2 (n − 1) / n` of
//! the message.

use crate::machine::curve::CommCurve;
use crate::machine::{Machine, PeerPath};
use crate::options::ServerOptions;

/// `CustomAllreduce`'s default `max_size`.
pub const VLLM_CUSTOM_AR_MAX_BYTES: f64 = 8.0 * 1024.0 * 1024.0;
/// `_SUPPORTED_WORLD_SIZES`.
pub const VLLM_CUSTOM_AR_WORLD_SIZES: [usize; 4] = [2, 4, 6, 8];

/// One custom all-reduce kernel's latency over NVLink.
const NVLINK_LATENCY_S: f64 = 5e-6;
/// One custom all-reduce kernel's latency over PCIe (launch under the graph, the two flag
/// barriers across the host bridges): 7.4 µs, the intercept of the one-stage PCIe kernel's times
/// on the Kimi-K2.6 records' 8-GPU box (the three sizes of [`real_one_shot_bytes_per_s`], which
/// a line of 7.4 µs + 0.305 µs per KB passes within 1%). Bounds: the 0.4 µs of one PCIe P2P
/// access and the 10 µs shardwise assumed before (the GLM-5 SGLang one-shot vs NCCL A/B at
/// one stream in the dev set implies 10–15 µs on another, PCIe-switch, box).
pub const PCIE_LATENCY_S: f64 = 7.4e-6;

/// The message rate of the one-stage kernel (`cross_device_reduce_1stage`: every rank loads the
/// `n − 1` peers' whole messages) over real peer access, from `nccl_bytes_per_s`, the group's
/// NCCL large-message bandwidth. Over NVLink each peer has its own link: the loads run side by
/// side, at that bandwidth. Over PCIe with more than two GPUs the `n − 1` messages come in
/// through the rank's one x16 link, one after another: that bandwidth / (n − 1). Pinned on the
/// one-stage PCIe kernel the Kimi-K2.6 records' stack ran, timed alone on their 8-GPU box
/// (local-inference-lab/rtx6kpro `models/glm5.1/vllm-communicators-kimi-glm-2026-05-07.md`
/// @01037db, "Standalone microbench observations from the prototype README", graph replay:
/// 14,336 B 11.8 µs, 172,032 B 59.4 µs, 458,752 B 147.3 µs): 0.305 µs per KB over that range,
/// i.e. 7 × 3.28 GB/s = 23 GB/s of peer loads a rank, where the rtx6kpro NCCL preset's
/// large-message all-reduce bandwidth is 22.0 GB/s (without the `n − 1` the model priced
/// 172 KB at 18 µs). With [`PCIE_LATENCY_S`]: 12.0 / 62.1 / 153 µs at those sizes.
pub fn real_one_shot_bytes_per_s(n: usize, nvlink: bool, nccl_bytes_per_s: f64) -> f64 {
    if nvlink || n <= 2 {
        nccl_bytes_per_s
    } else {
        nccl_bytes_per_s / (n - 1) as f64
    }
}

/// The one-shot custom all-reduce over routed peer access (vLLM's (and SGLang's)
/// `custom_all_reduce.cuh`, `cross_device_reduce_1stage`): two barriers, each a flag stored
/// into every peer and read back across the host (the pair's small-copy latency each), and every
/// rank loading the `n − 1` peers' whole messages over its one path at the routed bandwidth.
/// Returns (latency s, bytes per second of the message).
pub fn routed_one_shot(n: usize, latency_s: f64, bytes_per_s: f64) -> (f64, f64) {
    (2.0 * latency_s, bytes_per_s / (n.max(2) - 1) as f64)
}

/// vLLM's custom all-reduce on one group, when vLLM uses it there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VllmCustomAllReduce {
    world_size: usize,
    fully_connected: bool,
    latency_s: f64,
    bytes_per_s: f64,
    max_bytes: f64,
    /// The community build's PCIe kernel on more than two GPUs, not stock vLLM's.
    community_pcie: bool,
}

impl VllmCustomAllReduce {
    /// Whether vLLM runs its custom all-reduce on `group` of `machine` under `opts`, and its
    /// cost model; `None` = NCCL (and why, for notes, in [`Self::why_not`]).
    pub fn on(
        machine: &Machine,
        group: &[u32],
        opts: &ServerOptions,
        nccl: &CommCurve,
    ) -> Option<VllmCustomAllReduce> {
        if Self::why_not(machine, group, opts).is_some() {
            return None;
        }
        let n = group.len();
        let fully_connected = machine.has_nvlink();
        let community_pcie = !fully_connected && n > 2;
        let max_bytes = match opts.pcie_custom_all_reduce_max_bytes {
            Some(cutoff) if community_pcie => cutoff as f64,
            _ => VLLM_CUSTOM_AR_MAX_BYTES,
        };
        // over routed peer access too: the engines' P2P check passes, so it runs over that path
        let (latency_s, bytes_per_s) = match machine.engine_peer_path(group)? {
            PeerPath::Real => (
                if fully_connected {
                    NVLINK_LATENCY_S
                } else {
                    PCIE_LATENCY_S
                },
                real_one_shot_bytes_per_s(n, fully_connected, nccl.bandwidth_bytes_per_s()),
            ),
            PeerPath::Routed {
                latency_s,
                bytes_per_s,
            } => routed_one_shot(n, latency_s, bytes_per_s),
        };
        Some(VllmCustomAllReduce {
            world_size: n,
            fully_connected,
            latency_s,
            bytes_per_s,
            max_bytes,
            community_pcie,
        })
    }

    /// Why vLLM would not run its custom all-reduce on `group`, `None` when it would.
    pub fn why_not(machine: &Machine, group: &[u32], opts: &ServerOptions) -> Option<String> {
        let n = group.len();
        if n <= 1 {
            return Some("one GPU".into());
        }
        if opts.disable_custom_all_reduce {
            return Some("--disable-custom-all-reduce".into());
        }
        if !VLLM_CUSTOM_AR_WORLD_SIZES.contains(&n) {
            return Some(format!("world size {n} (vLLM's kernel takes 2, 4, 6 or 8)"));
        }
        if machine.topology().nodes_spanned(group) > 1 {
            return Some("the group spans nodes".into());
        }
        if n > 2 && !machine.has_nvlink() && opts.pcie_custom_all_reduce_max_bytes.is_none() {
            return Some("more than two PCIe-only GPUs (stock vLLM)".into());
        }
        if machine.engine_peer_path(group).is_none() {
            return Some("no GPU P2P between them".into());
        }
        None
    }

    /// Whether a message of `bytes` runs the two-stage kernel.
    pub fn two_stage(&self, bytes: f64) -> bool {
        self.world_size > 2
            && self.fully_connected
            && !((self.world_size <= 4 && bytes < 512.0 * 1024.0)
                || (self.world_size <= 8 && bytes < 256.0 * 1024.0))
    }

    /// Time of an all-reduce of `bytes`: the custom kernel where vLLM takes it, whatever it costs
    /// (`should_custom_ar` checks the size, alignment and topology, never NCCL's time: a cutoff
    /// set above where the kernel wins, as the rtx6kpro "force 1-stage" run did, pays for it),
    /// else `nccl`.
    pub fn time_s(&self, bytes: f64, nccl: f64) -> f64 {
        // stock vLLM takes inputs strictly below `max_size` (`should_custom_ar`); the community
        // fork's cutoff is inclusive (`inp_size > self._cpp_ar_cutoff_size` goes to NCCL,
        // local-inference-lab/vllm @28be48fa9 `custom_all_reduce.py`)
        let over = if self.community_pcie {
            bytes > self.max_bytes
        } else {
            bytes >= self.max_bytes
        };
        if bytes <= 0.0 || over {
            return nccl;
        }
        if self.two_stage(bytes) {
            let n = self.world_size as f64;
            2.0 * self.latency_s + 2.0 * (n - 1.0) / n * bytes / self.bytes_per_s
        } else {
            self.latency_s + bytes / self.bytes_per_s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_vllm_runs_no_custom_all_reduce_on_more_than_two_pcie_gpus() {
        let pcie = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
        let all: Vec<u32> = (0..8).collect();
        let stock = ServerOptions::default();
        assert!(
            VllmCustomAllReduce::why_not(&pcie, &all, &stock)
                .unwrap()
                .contains("PCIe")
        );
        assert_eq!(VllmCustomAllReduce::why_not(&pcie, &all[..2], &stock), None);
        let community = ServerOptions {
            pcie_custom_all_reduce_max_bytes: Some(56 * 1024),
            ..ServerOptions::default()
        };
        let nccl = pcie.collective(models::profile::CollectiveOp::AllReduce, &all);
        let c = VllmCustomAllReduce::on(&pcie, &all, &community, &nccl).unwrap();
        assert!(!c.two_stage(1e6), "PCIe groups never run two stages");
        let small = 8.0 * 1024.0;
        assert!(c.time_s(small, nccl.time_s(small)) <= nccl.time_s(small));
        assert_eq!(c.time_s(1e6, 7.0), 7.0, "above the 56 KB cutoff: NCCL");
        let off = ServerOptions {
            disable_custom_all_reduce: true,
            ..community.clone()
        };
        assert!(VllmCustomAllReduce::why_not(&pcie, &all, &off).is_some());
        assert!(VllmCustomAllReduce::why_not(&pcie, &all[..3], &community).is_some());
    }

    /// The community one-stage PCIe kernel on 8 GPUs at the sizes it was timed alone on the
    /// Kimi-K2.6 records' box (rtx6kpro `vllm-communicators-kimi-glm-2026-05-07.md`: 11.8 /
    /// 59.4 / 147.3 µs): every rank loads its 7 peers' messages through its one link, so the time
    /// grows 7× as fast with the message as NCCL's large-message rate alone would make it (the
    /// model without that priced 172 KB at 18 µs). Over NVLink, and on two GPUs, no such factor.
    #[test]
    fn pcie_one_stage_loads_every_peers_message_through_one_link() {
        let pcie = Machine::resolve("rtx-pro-6000-x8-baremetal-nccl-ll128").unwrap();
        let all: Vec<u32> = (0..8).collect();
        let community = ServerOptions {
            pcie_custom_all_reduce_max_bytes: Some(1 << 20),
            ..ServerOptions::default()
        };
        let nccl = pcie.collective(models::profile::CollectiveOp::AllReduce, &all);
        let c = VllmCustomAllReduce::on(&pcie, &all, &community, &nccl).unwrap();
        for (bytes, measured_us) in [(14_336.0, 11.8), (172_032.0, 59.4), (458_752.0, 147.3)] {
            // NCCL's time passed as infinite: the kernel's own cost
            let us = c.time_s(bytes, f64::INFINITY) * 1e6;
            assert!((us / measured_us - 1.0).abs() < 0.1, "{bytes}: {us} µs");
        }
        let bw = 20e9;
        assert_eq!(real_one_shot_bytes_per_s(8, true, bw), bw);
        assert_eq!(real_one_shot_bytes_per_s(2, false, bw), bw);
        assert_eq!(real_one_shot_bytes_per_s(8, false, bw), bw / 7.0);
    }

    /// Below its cutoff vLLM runs the custom kernel whatever NCCL would cost (`should_custom_ar`
    /// never asks): the rtx6kpro Kimi-K2.6 "force 1-stage" run (one stage for every size, 643
    /// tok/s at 32 streams with MTP against 1,046 at the 56 KB default) paid for the 1.8 MB
    /// verify messages its one-stage kernel loads seven times over. A 1.8 MB message under an 8
    /// MiB cutoff costs the kernel's time, above NCCL's; under the default it is NCCL's.
    #[test]
    fn below_its_cutoff_the_custom_kernel_runs_even_where_nccl_is_faster() {
        let pcie = Machine::resolve("rtx-pro-6000-x8-baremetal-nccl-tuned").unwrap();
        let all: Vec<u32> = (0..8).collect();
        let nccl = pcie.collective(models::profile::CollectiveOp::AllReduce, &all);
        let with = |cutoff: u64| {
            let opts = ServerOptions {
                pcie_custom_all_reduce_max_bytes: Some(cutoff),
                ..ServerOptions::default()
            };
            VllmCustomAllReduce::on(&pcie, &all, &opts, &nccl).unwrap()
        };
        let bytes = 128.0 * 7168.0 * 2.0;
        let nccl_s = nccl.time_s(bytes);
        let forced = with(8 << 20).time_s(bytes, nccl_s);
        assert!(forced > 2.0 * nccl_s, "{forced} vs NCCL {nccl_s}");
        assert_eq!(with(56 << 10).time_s(bytes, nccl_s), nccl_s);
    }

    #[test]
    fn nvlink_groups_switch_to_two_stages_at_vllms_cutoffs() {
        let nvl = Machine::resolve("h200-x8").unwrap();
        let all: Vec<u32> = (0..8).collect();
        let nccl = nvl.collective(models::profile::CollectiveOp::AllReduce, &all);
        let c = VllmCustomAllReduce::on(&nvl, &all, &ServerOptions::default(), &nccl).unwrap();
        assert!(!c.two_stage(200.0 * 1024.0) && c.two_stage(300.0 * 1024.0));
        let four =
            VllmCustomAllReduce::on(&nvl, &all[..4], &ServerOptions::default(), &nccl).unwrap();
        assert!(!four.two_stage(300.0 * 1024.0) && four.two_stage(600.0 * 1024.0));
    }

    /// Issue 34: where peer access is routed through the host the engines' P2P check passes and
    /// the custom all-reduce runs over that path, costed there and not swapped for NCCL; where
    /// peer access is off it is off, as the engines turn it off.
    #[test]
    fn the_custom_all_reduce_runs_over_routed_peer_access_and_not_without_it() {
        let all: Vec<u32> = (0..8).collect();
        let community = ServerOptions {
            pcie_custom_all_reduce_max_bytes: Some(56 * 1024),
            ..ServerOptions::default()
        };
        let routed = Machine::resolve("rtx-pro-6000-x8-baremetal-p2p-routed").unwrap();
        let Some(crate::machine::PeerPath::Routed {
            latency_s,
            bytes_per_s,
        }) = routed.engine_peer_path(&all)
        else {
            panic!("the routed preset's peers are routed");
        };
        assert!((latency_s - 14e-6).abs() < 1e-9 && bytes_per_s > 30e9);
        let nccl = routed.collective(models::profile::CollectiveOp::AllReduce, &all);
        assert!(nccl.source.contains("routed"), "{}", nccl.source);
        let c = VllmCustomAllReduce::on(&routed, &all, &community, &nccl).unwrap();
        let bytes = 12.0 * 1024.0;
        let (l, b) = routed_one_shot(8, latency_s, bytes_per_s);
        // taken even when NCCL's number were smaller: vLLM does not compare
        assert_eq!(c.time_s(bytes, 1e-9), l + bytes / b);
        // and slower than the same kernel with peer access that works
        let real = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
        let nccl_real = real.collective(models::profile::CollectiveOp::AllReduce, &all);
        let r = VllmCustomAllReduce::on(&real, &all, &community, &nccl_real).unwrap();
        assert!(r.time_s(bytes, 1.0) < c.time_s(bytes, 1.0));
        let off = Machine::resolve("rtx-pro-6000-x8-baremetal-p2p-off").unwrap();
        assert_eq!(
            VllmCustomAllReduce::why_not(&off, &all, &community).as_deref(),
            Some("no GPU P2P between them")
        );
    }
}
