//! Part of a box: the GPUs a server is started on when it does not take the whole machine.
//!
//! SGLang's scheduler processes take GPUs `base_gpu_id + tp_rank` (default `--base-gpu-id 0`) of
//! the devices CUDA lets them see (`python/sglang/srt/entrypoints/engine.py`,
//! `_launch_scheduler_processes`: `gpu_id = base_gpu_id + (pp_rank * tp_size_per_node +
//! tp_rank) * gpu_id_step`): a `--tp 4` server on an 8-GPU box runs on GPUs 0–3, or on the first
//! four of `CUDA_VISIBLE_DEVICES`. A machine restricted to some GPUs ([`Machine::with_gpus`]) sees
//! only those: its layouts are placed on them, and every collective and pipeline hop is resolved
//! between exactly those GPUs, from the whole box's measured links and NCCL curves for that group
//! ([`super::interconnect`]: the group's own curve, else one of the same size and link class).

use super::{Machine, placement};
use crate::error::{Result, SimError};

impl Machine {
    /// The CUDA device indices of the machine, ascending.
    pub fn device_indices(&self) -> Vec<u32> {
        let mut d: Vec<u32> = self.profile.devices.iter().map(|d| d.index).collect();
        d.sort_unstable();
        d
    }

    /// This machine restricted to `devices` (CUDA indices of the box): a server started on them
    /// (`CUDA_VISIBLE_DEVICES`) sees these GPUs only. The whole machine when `devices` is all of it.
    pub fn with_gpus(&self, devices: &[u32]) -> Result<Machine> {
        let all = self.device_indices();
        let asked = super::interconnect::devices_label(devices);
        let bad = |problem: String| SimError::GpuSelection {
            asked: asked.clone(),
            machine: self.name.clone(),
            problem,
        };
        if devices.is_empty() {
            return Err(bad("no GPU listed".into()));
        }
        for (i, d) in devices.iter().enumerate() {
            if !all.contains(d) {
                return Err(bad(format!(
                    "it has no GPU {d} (its GPUs: {}); list devices of this machine",
                    super::interconnect::devices_label(&all)
                )));
            }
            if devices[..i].contains(d) {
                return Err(bad(format!("GPU {d} is listed twice")));
            }
        }
        let mut sorted = devices.to_vec();
        sorted.sort_unstable();
        if sorted == all {
            return Ok(self.clone());
        }
        let mut m = self.clone();
        m.gpu_count = devices.len() as u32;
        m.order = placement::topology_order(&sorted, |a, b| self.link_class(a, b));
        m.name = format!("{} GPUs {asked}", self.name);
        m.notes.push(format!(
            "GPUs {asked} of `{}` only ({} of {}): layouts are placed on them, collectives and hops resolved between exactly those GPUs",
            self.name,
            devices.len(),
            all.len()
        ));
        Ok(m)
    }

    /// The machine's first `n` GPUs (by index), where SGLang starts a server of `n` GPUs with the
    /// default `--base-gpu-id 0`.
    pub fn first_gpus(&self, n: u32) -> Result<Machine> {
        let all = self.device_indices();
        let n = n as usize;
        if n == 0 || n > all.len() {
            return Err(SimError::GpuSelection {
                asked: format!("first {n}"),
                machine: self.name.clone(),
                problem: format!("it has {} GPUs", all.len()),
            });
        }
        self.with_gpus(&all[..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use models::Layout;
    use models::profile::CollectiveOp;

    fn box8() -> Machine {
        Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap()
    }

    #[test]
    fn half_the_box_is_placed_on_exactly_its_gpus() {
        let m = box8();
        let half = m.first_gpus(4).unwrap();
        assert_eq!(half.gpu_count, 4);
        let p = half.place(&Layout::tp(4)).unwrap();
        assert_eq!(p.stages, vec![vec![0, 1, 2, 3]]);
        assert_eq!(p.idle_gpus, 0);
        // the other socket: same-size, same-class curves; a layout of 8 no longer fits
        let other = m.with_gpus(&[4, 5, 6, 7]).unwrap();
        assert_eq!(
            other.place(&Layout::tp(4)).unwrap().stages,
            vec![vec![4, 5, 6, 7]]
        );
        assert!(other.place(&Layout::tp(8)).is_err());
        let ar =
            |mm: &Machine, d: &[u32]| mm.collective(CollectiveOp::AllReduce, d).time_s(1048576.0);
        assert!((ar(&half, &[0, 1, 2, 3]) - ar(&m, &[0, 1, 2, 3])).abs() < 1e-12);
        // GPUs across the two sockets reach each other over SYS: a slower TP2 than inside one
        let split = m.with_gpus(&[3, 4]).unwrap();
        let within = m.with_gpus(&[0, 1]).unwrap();
        assert!(ar(&split, &[3, 4]) >= ar(&within, &[0, 1]));
        assert!(half.name().ends_with("GPUs 0,1,2,3"), "{}", half.name());
    }

    #[test]
    fn gpus_the_machine_lacks_are_one_line_errors() {
        let m = box8();
        for (asked, want) in [
            (vec![0, 9], "no GPU 9"),
            (vec![1, 1], "listed twice"),
            (vec![], "no GPU listed"),
        ] {
            let e = m.with_gpus(&asked).unwrap_err().to_string();
            assert!(e.contains(want) && !e.contains('\n'), "{e}");
        }
        assert_eq!(m.with_gpus(&m.device_indices()).unwrap().gpu_count, 8);
        assert!(m.first_gpus(9).is_err());
    }
}
