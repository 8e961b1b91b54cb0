//! Reading sysfs-style trees (`/sys/class/net`, `/sys/class/iommu`, a fake root in tests): the
//! entries of a folder and one attribute file, both absent rather than failing when the kernel
//! does not expose them.

use std::path::Path;

/// The entry names of `dir`, sorted; empty when it cannot be read.
pub fn entry_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// An attribute file's text, trimmed; `None` when unreadable.
pub fn attribute(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}
