//! `rtx-pro-6000-maxq-x8`: eight RTX PRO 6000 Blackwell Max-Q Workstation Edition cards (300 W) on
//! bare metal with P2P, as the rtx6kpro wiki's 'luke' box (Kimi-K2.5 page, 'Tested systems':
//! 8× RTX 6000 Pro Max-Q, AMD Threadripper Pro, PCIe switches, P2P enabled) runs them.

use models::MachineProfile;

/// NVML's name of the card (the datasheet's product name).
const GPU_NAME: &str = "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition";
/// The GPU preset: the datasheet's memory and bandwidth, tensor peaks scaled by its AI TOPS.
const GPU_PRESET: &str = "rtx-pro-6000-maxq";

/// The bare-metal 8-GPU preset with the Max-Q cards in place of the Server Edition: the same
/// 96 GB and 1792 GB/s, lower tensor peaks (the GPU preset); the links and NCCL curves stand in
/// for the Max-Q box's, which nobody published.
pub fn preset(baremetal: &MachineProfile) -> MachineProfile {
    let mut p = baremetal.clone();
    p.gpu_preset = Some(GPU_PRESET.into());
    for d in &mut p.devices {
        d.name = GPU_NAME.into();
    }
    let source = p.provenance.source.take().unwrap_or_default();
    p.provenance.source = Some(format!(
        "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition datasheet \
         (https://www.nvidia.com/content/dam/en-zz/Solutions/products/workstations/\
         professional-desktop-gpus/rtx-pro-6000-max-q/workstation-datasheet-blackwell-rtx-pro-6000-max-q-nvidia-3519233.pdf: \
         96 GB GDDR7, 1792 GB/s, 3511 AI TOPS, 300 W, PCIe Gen5 x16) | {source}"
    ));
    p.provenance.notes.insert(
        0,
        "Max-Q cards (300 W): compute peaks from the GPU preset `rtx-pro-6000-maxq` (the \
         Workstation Edition's scaled by the datasheet's 3511/4000 AI TOPS), memory and PCIe as \
         the 600 W cards. No NCCL or P2P measurement of a Max-Q box is published: the links, the \
         NCCL curves and the topology below are the bare-metal 8x RTX PRO 6000 preset's \
         (`rtx-pro-6000-x8-baremetal`, P2P real), standing in for the rtx6kpro 'luke' box \
         (one Threadripper Pro socket behind PCIe switches), whose collectives over switches \
         may be faster than these two-socket curves; the communication kernels' lower clock is \
         not modelled."
            .to_string(),
    );
    p
}
