//! Test fixtures shared by probe's unit tests: boxes of GPUs in sockets of four, the shape of the
//! user's machine (GPUs 0–3 on NUMA 0, 4–7 on NUMA 1; NODE inside a socket, SYS across).

use models::profile::{DeviceInfo, LinkClass, PairLink};

/// One GPU `index` on NUMA node `numa`.
pub fn dev(index: u32, numa: i32) -> DeviceInfo {
    DeviceInfo {
        index,
        name: "gpu".into(),
        numa_node: Some(numa),
        memory_bytes: 1,
        ..Default::default()
    }
}

/// `gpus` GPUs, four per socket, with every ordered pair's link: NODE within a socket, SYS across.
pub fn sockets_of_four(gpus: u32) -> (Vec<DeviceInfo>, Vec<PairLink>) {
    let devices = (0..gpus).map(|i| dev(i, (i / 4) as i32)).collect();
    let mut links = Vec::new();
    for a in 0..gpus {
        for b in (0..gpus).filter(|&b| b != a) {
            let class = if a / 4 == b / 4 {
                LinkClass::NODE
            } else {
                LinkClass::SYS
            };
            links.push(PairLink::new(a, b, class));
        }
    }
    (devices, links)
}
