//! The IOMMU as the guest sees it: units under `/sys/class/iommu`, groups under
//! `/sys/kernel/iommu_groups` (their `type`: `DMA`/`DMA-FQ` translated, `identity` passthrough),
//! each GPU's group (`/sys/bus/pci/devices/<bus id>/iommu_group`), the kernel command line's
//! `iommu=` / `intel_iommu=` / `amd_iommu=`, and the page sizes VT-d's capability register
//! advertises (SLLPS, bits 34–37: 2 MiB, 1 GiB, …; 4 KiB always). Every path is under `root` so
//! tests can build a fake `/`.

use crate::sysfs::entry_names as names;
use models::profile::{DeviceInfo, GpuIommu, IommuFacts, IommuMode};
use std::path::Path;

fn read(p: &Path) -> Option<String> {
    crate::sysfs::attribute(p).filter(|s| !s.is_empty())
}

/// A bus id as sysfs names it: NVML's 8-digit domain (`00000000:01:00.0`) cut to 4, lower case.
fn sysfs_bus_id(b: &str) -> String {
    let b = b.to_lowercase();
    match b.split_once(':') {
        Some((dom, rest)) if dom.len() == 8 => format!("{}:{rest}", &dom[4..]),
        _ => b,
    }
}

/// The page sizes a VT-d capability register (hex) says the IOMMU maps.
pub fn vtd_page_sizes(cap_hex: &str) -> Vec<u64> {
    let Ok(cap) = u64::from_str_radix(cap_hex.trim().trim_start_matches("0x"), 16) else {
        return Vec::new();
    };
    let sllps = (cap >> 34) & 0xf;
    let mut out = vec![4096];
    for (bit, size) in [(0, 2u64 << 20), (1, 1u64 << 30)] {
        if sllps & (1 << bit) != 0 {
            out.push(size);
        }
    }
    out
}

/// Reads the IOMMU facts under `root` (`/` on a live machine) for `devices`.
pub fn detect(root: &Path, devices: &[DeviceInfo]) -> IommuFacts {
    let units = names(&root.join("sys/class/iommu"));
    let groups_dir = root.join("sys/kernel/iommu_groups");
    let groups = names(&groups_dir);
    let types: Vec<String> = groups
        .iter()
        .filter_map(|g| read(&groups_dir.join(g).join("type")))
        .collect();
    let gpus = devices
        .iter()
        .map(|d| {
            let group = d.pci_bus_id.as_ref().and_then(|b| {
                let link = root
                    .join("sys/bus/pci/devices")
                    .join(sysfs_bus_id(b))
                    .join("iommu_group");
                std::fs::read_link(link)
                    .ok()
                    .and_then(|t| t.file_name()?.to_str()?.parse::<u32>().ok())
            });
            GpuIommu {
                device: d.index,
                pci_bus_id: d.pci_bus_id.clone(),
                group,
                group_type: group.and_then(|g| read(&groups_dir.join(g.to_string()).join("type"))),
            }
        })
        .collect::<Vec<_>>();
    // The GPUs' own groups decide the mode where known; else any group's.
    let gpu_types: Vec<&str> = gpus
        .iter()
        .filter_map(|g| g.group_type.as_deref())
        .collect();
    let decide: Vec<&str> = if gpu_types.is_empty() {
        types.iter().map(String::as_str).collect()
    } else {
        gpu_types
    };
    let mode = if units.is_empty() && groups.is_empty() {
        IommuMode::Off
    } else if decide.iter().any(|t| t.starts_with("DMA")) {
        IommuMode::Translated
    } else if !decide.is_empty() && decide.iter().all(|t| *t == "identity") {
        IommuMode::Passthrough
    } else {
        IommuMode::Unknown
    };
    let page_sizes_bytes = units
        .iter()
        .find_map(|u| read(&root.join("sys/class/iommu").join(u).join("intel-iommu/cap")))
        .map(|c| vtd_page_sizes(&c))
        .unwrap_or_default();
    let cmdline = read(&root.join("proc/cmdline"))
        .map(|c| {
            c.split_whitespace()
                .filter(|w| {
                    ["iommu=", "intel_iommu=", "amd_iommu="]
                        .iter()
                        .any(|k| w.starts_with(k))
                })
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    IommuFacts {
        mode,
        units,
        groups: groups.len() as u32,
        page_sizes_bytes,
        cmdline,
        gpus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_root_is_off() {
        let dir = tempfile::tempdir().unwrap();
        let f = detect(dir.path(), &[]);
        assert_eq!(f.mode, IommuMode::Off);
        assert!(f.units.is_empty() && f.cmdline.is_empty());
    }

    #[test]
    fn a_translated_gpu_group_with_vtd_caps() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let w = |p: &str, s: &str| {
            let p = r.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        // SLLPS bit 0 (2 MiB) set: 1 << 34.
        w(
            "sys/class/iommu/dmar0/intel-iommu/cap",
            &format!("{:x}\n", 1u64 << 34),
        );
        w("sys/kernel/iommu_groups/7/type", "DMA-FQ\n");
        w("sys/kernel/iommu_groups/8/type", "identity\n");
        w(
            "proc/cmdline",
            "BOOT_IMAGE=/vmlinuz intel_iommu=on iommu=pt quiet\n",
        );
        std::fs::create_dir_all(r.join("sys/bus/pci/devices/0000:01:00.0")).unwrap();
        std::os::unix::fs::symlink(
            "../../../kernel/iommu_groups/7",
            r.join("sys/bus/pci/devices/0000:01:00.0/iommu_group"),
        )
        .unwrap();
        let gpu = DeviceInfo {
            index: 0,
            pci_bus_id: Some("0000:01:00.0".into()),
            ..Default::default()
        };
        let f = detect(r, &[gpu]);
        assert_eq!(f.mode, IommuMode::Translated);
        assert_eq!(f.groups, 2);
        assert_eq!(f.page_sizes_bytes, vec![4096, 2 << 20]);
        assert_eq!(f.cmdline, vec!["intel_iommu=on", "iommu=pt"]);
        assert_eq!(f.gpus[0].group, Some(7));
        assert_eq!(f.gpus[0].group_type.as_deref(), Some("DMA-FQ"));
    }
}
