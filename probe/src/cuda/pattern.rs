//! Fresh data patterns for transfer checks: every check uses a new seed, so a stale buffer (a VM
//! mirror that never received the write, a copy that did not run) cannot pass by accident.

/// Fills `buf` with the pattern of `seed` (32-bit words, a multiplicative hash of the index).
pub fn fill(buf: &mut [u8], seed: u32) {
    let mut chunks = buf.chunks_exact_mut(4);
    let mut i = 0u32;
    for chunk in &mut chunks {
        chunk.copy_from_slice(&word(seed, i).to_le_bytes());
        i = i.wrapping_add(1);
    }
    let rest = chunks.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&word(seed, i).to_le_bytes()[..n]);
}

/// Index of the first byte that differs from the pattern of `seed`, if any.
pub fn first_mismatch(buf: &[u8], seed: u32) -> Option<usize> {
    buf.chunks(4).enumerate().find_map(|(i, chunk)| {
        let w = word(seed, i as u32).to_le_bytes();
        (chunk != &w[..chunk.len()]).then_some(i * 4)
    })
}

fn word(seed: u32, i: u32) -> u32 {
    (i ^ seed).wrapping_mul(0x9E37_79B9).rotate_left(13) ^ seed
}

/// A seed that differs on every call in this process.
pub fn fresh_seed() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0x1234_5678);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    NEXT.fetch_add(0x9E37_79B9, Ordering::Relaxed) ^ t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_round_trips_and_detects_changes() {
        let mut b = vec![0u8; 1030];
        fill(&mut b, 7);
        assert_eq!(first_mismatch(&b, 7), None);
        assert!(first_mismatch(&b, 8).is_some());
        b[1029] ^= 1;
        assert_eq!(first_mismatch(&b, 7), Some(1028));
    }

    #[test]
    fn seeds_differ() {
        assert_ne!(fresh_seed(), fresh_seed());
    }
}
