//! Is the probe running inside a VM, and which one? Independent witnesses: CPUID leaf 1 ECX
//! bit 31 (the hypervisor-present bit) and the `hypervisor` flag in /proc/cpuinfo that mirrors
//! it, CPUID leaf 0x40000000's vendor signature (`KVMKVMKVM`, `Microsoft Hv`, `VMwareVMware`,
//! …), and the DMI system vendor and product (`QEMU`, `Proxmox`, `Standard PC (Q35 …)`).

use std::path::Path;

/// What the machine says about virtualization.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HypervisorInfo {
    /// `/proc/cpuinfo` has the `hypervisor` flag.
    pub cpu_flag: bool,
    /// `/sys/class/dmi/id/sys_vendor` (e.g. `QEMU`, `Microsoft Corporation`).
    pub dmi_vendor: Option<String>,
    /// CPUID leaf 0x40000000 vendor signature.
    pub cpuid_vendor: Option<String>,
    /// CPUID leaf 1 ECX bit 31 (`None` off x86_64).
    pub cpuid_bit: Option<bool>,
    /// `/sys/class/dmi/id/product_name`.
    pub dmi_product: Option<String>,
}

impl HypervisorInfo {
    /// Reads the live machine.
    pub fn detect() -> HypervisorInfo {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_flag = cpuinfo_has_hypervisor_flag(&cpuinfo);
        let dmi_vendor = read_trimmed(Path::new("/sys/class/dmi/id/sys_vendor"));
        let cpuid_bit = cpuid_hypervisor_bit();
        HypervisorInfo {
            cpu_flag,
            dmi_vendor,
            cpuid_vendor: if cpu_flag || cpuid_bit == Some(true) {
                cpuid_vendor()
            } else {
                None
            },
            cpuid_bit,
            dmi_product: read_trimmed(Path::new("/sys/class/dmi/id/product_name")),
        }
    }

    /// The profile's record of every witness.
    pub fn facts(&self) -> models::profile::HypervisorFacts {
        models::profile::HypervisorFacts {
            cpuid_hypervisor_bit: self.cpuid_bit,
            cpuid_vendor: self.cpuid_vendor.clone(),
            dmi_sys_vendor: self.dmi_vendor.clone(),
            dmi_product_name: self.dmi_product.clone(),
            name: self.name(),
        }
    }

    /// One name for the profile: the CPUID signature mapped to a product, else the DMI vendor;
    /// `None` on bare metal.
    pub fn name(&self) -> Option<String> {
        if !self.cpu_flag && self.cpuid_bit != Some(true) && self.cpuid_vendor.is_none() {
            return None;
        }
        let from_cpuid = self
            .cpuid_vendor
            .as_deref()
            .map(|v| match v.trim_end_matches('\0') {
                "KVMKVMKVM" => "KVM".to_string(),
                "Microsoft Hv" => "Hyper-V".to_string(),
                "VMwareVMware" => "VMware".to_string(),
                "XenVMMXenVMM" => "Xen".to_string(),
                "TCGTCGTCGTCG" => "QEMU (TCG)".to_string(),
                other => other.to_string(),
            });
        match (from_cpuid, &self.dmi_vendor) {
            (Some(c), Some(d)) => Some(format!("{c} ({d})")),
            (Some(c), None) => Some(c),
            (None, Some(d)) => Some(d.clone()),
            (None, None) => Some("unknown hypervisor".into()),
        }
    }
}

/// Whether a /proc/cpuinfo text lists the `hypervisor` flag.
pub fn cpuinfo_has_hypervisor_flag(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|w| w == "hypervisor"))
}

fn read_trimmed(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

#[cfg(target_arch = "x86_64")]
fn cpuid_vendor() -> Option<String> {
    // Leaf 0x40000000 is reserved for hypervisors: it holds their vendor signature under a VM
    // (only asked when the CPU flag says there is one).
    let r = std::arch::x86_64::__cpuid(0x4000_0000);
    let mut b = Vec::with_capacity(12);
    for w in [r.ebx, r.ecx, r.edx] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    let s: String = String::from_utf8_lossy(&b)
        .trim_end_matches('\0')
        .to_string();
    (!s.is_empty() && s.chars().all(|c| c.is_ascii_graphic() || c == ' ')).then_some(s)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_vendor() -> Option<String> {
    None
}

/// CPUID leaf 1, ECX bit 31: set by every mainstream hypervisor, clear on bare metal.
#[cfg(target_arch = "x86_64")]
fn cpuid_hypervisor_bit() -> Option<bool> {
    let r = std::arch::x86_64::__cpuid(1);
    Some(r.ecx & (1 << 31) != 0)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_hypervisor_bit() -> Option<bool> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_is_found_only_on_flags_lines() {
        assert!(cpuinfo_has_hypervisor_flag(
            "processor : 0\nflags : fpu vme hypervisor lahf_lm\n"
        ));
        assert!(!cpuinfo_has_hypervisor_flag(
            "flags : fpu vme\nmodel name : hypervisor-ish\n"
        ));
    }

    #[test]
    fn names_map_signatures() {
        let h = HypervisorInfo {
            cpu_flag: true,
            dmi_vendor: Some("QEMU".into()),
            cpuid_vendor: Some("KVMKVMKVM".into()),
            ..Default::default()
        };
        assert_eq!(h.name().as_deref(), Some("KVM (QEMU)"));
        assert_eq!(HypervisorInfo::default().name(), None);
        let bit_only = HypervisorInfo {
            cpuid_bit: Some(true),
            ..Default::default()
        };
        assert_eq!(bit_only.name().as_deref(), Some("unknown hypervisor"));
        assert_eq!(bit_only.facts().cpuid_hypervisor_bit, Some(true));
    }
}
