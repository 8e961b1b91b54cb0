//! GPU inventory: names, UUIDs, PCI bus ids, NUMA nodes, PCIe links, memory (CUDA driver and
//! NVML), driver / CUDA versions, and for every GPU pair NVML's topology level and P2P status.
//! NVML is optional: without libnvidia-ml the CUDA facts are kept and a note says what is missing.

use super::{Gpu, check_raw};
use crate::error::Result;
use crate::inventory::Inventory;
use cudarc::driver::sys;
use models::profile::{DeviceInfo, LinkClass, PairLink};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{P2pCapabilitiesIndex, P2pStatus, TopologyLevel};

fn pci_bus_id(gpu: &Gpu) -> Result<String> {
    let mut buf = [0 as std::ffi::c_char; 32];
    check_raw(
        unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), 32, gpu.dev) },
        || "cuDeviceGetPCIBusId".into(),
    )?;
    let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Ok(s.to_string_lossy().into_owned())
}

/// NUMA node of a PCI device from sysfs (`-1` = none).
fn numa_node(bus_id: &str) -> Option<i32> {
    let p = format!("/sys/bus/pci/devices/{}/numa_node", bus_id.to_lowercase());
    let v: i32 = std::fs::read_to_string(p).ok()?.trim().parse().ok()?;
    (v >= 0).then_some(v)
}

/// Maps NVML's common-ancestor level to `nvidia-smi topo -m`'s classes.
pub fn link_class(level: TopologyLevel) -> LinkClass {
    match level {
        TopologyLevel::Internal | TopologyLevel::Single => LinkClass::PIX,
        TopologyLevel::Multiple => LinkClass::PXB,
        TopologyLevel::HostBridge => LinkClass::PHB,
        TopologyLevel::Node => LinkClass::NODE,
        TopologyLevel::System => LinkClass::SYS,
    }
}

/// Reads the inventory of `gpus`.
pub fn inventory(gpus: &[Gpu]) -> Result<Inventory> {
    let mut inv = Inventory::default();
    let mut v = 0i32;
    check_raw(unsafe { sys::cuDriverGetVersion(&mut v) }, || {
        "cuDriverGetVersion".into()
    })?;
    inv.cuda_version = Some(format!("{}.{}", v / 1000, (v % 1000) / 10));
    let nvml = match Nvml::init() {
        Ok(n) => Some(n),
        Err(e) => {
            inv.notes.push(format!(
                "NVML unavailable ({e}): no PCIe link, topology or NVML P2P status"
            ));
            None
        }
    };
    if let Some(n) = &nvml {
        inv.driver_version = n.sys_driver_version().ok();
    }
    let mut bus_ids = Vec::new();
    for gpu in gpus {
        let bus = pci_bus_id(gpu)?;
        inv.devices.push(device_info(gpu, &bus, nvml.as_ref())?);
        bus_ids.push(bus);
    }
    for (i, a) in gpus.iter().enumerate() {
        for (j, b) in gpus.iter().enumerate() {
            if i == j {
                continue;
            }
            let mut link = PairLink::new(a.ordinal, b.ordinal, LinkClass::Unknown);
            if let Some(n) = &nvml {
                nvml_link_facts(n, &bus_ids[i], &bus_ids[j], &mut link);
            }
            link.can_access_peer = super::p2p::can_access_peer(a, b).ok();
            inv.links.push(link);
        }
    }
    Ok(inv)
}

/// One GPU's facts: CUDA's name, memory and compute capability, sysfs's NUMA node, and NVML's
/// UUID and PCIe link where NVML is there.
fn device_info(gpu: &Gpu, bus: &str, nvml: Option<&Nvml>) -> Result<DeviceInfo> {
    let name = cudarc::driver::result::device::get_name(gpu.dev).unwrap_or_default();
    let mem = unsafe { cudarc::driver::result::device::total_mem(gpu.dev) }.unwrap_or(0);
    let major =
        gpu.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor =
        gpu.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let mut d = DeviceInfo {
        index: gpu.ordinal,
        name,
        pci_bus_id: Some(bus.to_string()),
        numa_node: numa_node(bus),
        memory_bytes: mem as u64,
        compute_capability: Some([major as u32, minor as u32]),
        ..Default::default()
    };
    if let Some(n) = nvml
        && let Ok(dev) = n.device_by_pci_bus_id(bus)
    {
        d.uuid = dev.uuid().ok();
        d.pcie_gen_current = dev.current_pcie_link_gen().ok();
        d.pcie_gen_max = dev.max_pcie_link_gen().ok();
        d.pcie_width_current = dev.current_pcie_link_width().ok();
        d.pcie_width_max = dev.max_pcie_link_width().ok();
        if d.numa_node.is_none() {
            d.numa_node = dev.numa_node_id().ok().map(|x| x as i32);
        }
    }
    if d.uuid.is_none()
        && let Ok(u) = cudarc::driver::result::device::get_uuid(gpu.dev)
    {
        d.uuid = Some(format_uuid(&u.bytes.map(|b| b as u8)));
    }
    Ok(d)
}

/// NVML's view of the pair `a → b` (bus ids): its `nvidia-smi topo -m` class (NV# when NVLink
/// joins them) and its P2P read/write status.
fn nvml_link_facts(n: &Nvml, a: &str, b: &str, link: &mut PairLink) {
    let (Ok(da), Ok(db)) = (n.device_by_pci_bus_id(a), n.device_by_pci_bus_id(b)) else {
        return;
    };
    let rd = da.p2p_status(&db, P2pCapabilitiesIndex::Read);
    let wr = da.p2p_status(&db, P2pCapabilitiesIndex::Write);
    let say = |r: std::result::Result<P2pStatus, nvml_wrapper::error::NvmlError>| {
        r.map(|s| format!("{s:?}"))
            .unwrap_or_else(|e| format!("error({e})"))
    };
    link.nvml_p2p_status = Some(format!("read={} write={}", say(rd), say(wr)));
    let nvlinks = nvlink_count(&da, &db, b);
    // NVML's common-ancestor query takes the peer by value: asked last.
    link.topology = if nvlinks > 0 {
        LinkClass::NV(nvlinks)
    } else {
        da.topology_common_ancestor(db)
            .map(link_class)
            .unwrap_or(LinkClass::Unknown)
    };
}

/// NVLinks between `da` and `db` (bus id `b`): the direct links whose far end is the peer;
/// behind an NVSwitch the far end is the switch, so then NVML's NVLink P2P status decides and,
/// like `nvidia-smi topo -m`, all active links count.
fn nvlink_count(da: &nvml_wrapper::Device, db: &nvml_wrapper::Device, b: &str) -> u32 {
    let active: Vec<u32> = (0..18)
        .filter(|&l| da.link_wrapper_for(l).is_active().unwrap_or(false))
        .collect();
    let direct = active
        .iter()
        .filter(|&&l| {
            da.link_wrapper_for(l)
                .remote_pci_info()
                .map(|p| same_bus(&p.bus_id, b))
                .unwrap_or(false)
        })
        .count() as u32;
    let via_switch = da
        .p2p_status(db, P2pCapabilitiesIndex::NvLink)
        .map(|s| s == P2pStatus::Ok)
        .unwrap_or(false);
    if direct > 0 {
        direct
    } else if via_switch {
        active.len() as u32
    } else {
        0
    }
}

/// Compares PCI bus ids that may differ in domain width (`00000000:18:00.0` vs `0000:18:00.0`).
pub fn same_bus(a: &str, b: &str) -> bool {
    fn norm(s: &str) -> String {
        let s = s.to_lowercase();
        match s.split_once(':') {
            Some((dom, rest)) => format!("{:x}:{rest}", u32::from_str_radix(dom, 16).unwrap_or(0)),
            None => s,
        }
    }
    norm(a) == norm(b)
}

fn format_uuid(b: &[u8; 16]) -> String {
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_ids_compare_across_domain_widths() {
        assert!(same_bus("00000000:18:00.0", "0000:18:00.0"));
        assert!(!same_bus("0000:19:00.0", "0000:18:00.0"));
    }

    #[test]
    fn topology_levels_map_to_smi_classes() {
        assert_eq!(link_class(TopologyLevel::System), LinkClass::SYS);
        assert_eq!(link_class(TopologyLevel::HostBridge), LinkClass::PHB);
    }
}
