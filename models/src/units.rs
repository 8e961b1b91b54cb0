//! How sizes are written for people: binary units as nccl-tests' users read message sizes
//! (`1 MiB`, `256 MiB`). Decimal GB (1e9 bytes) figures are formatted where they are printed.

/// `b` bytes in binary units, one decimal unless whole (`512 B`, `1.5 KiB`, `256 MiB`).
pub fn fmt_bytes(b: u64) -> String {
    const U: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < 3 {
        v /= 1024.0;
        i += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", U[i])
    } else {
        format!("{v:.1} {}", U[i])
    }
}

#[cfg(test)]
mod tests {
    use super::fmt_bytes;

    #[test]
    fn binary_units() {
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
        assert_eq!(fmt_bytes(256 << 20), "256 MiB");
        assert_eq!(fmt_bytes(3 << 40), "3072 GiB");
    }
}
