//! Fresh data patterns for transfer checks: every check uses a new seed, so a stale buffer (a VM
//! mirror that never received the write, a copy that did not run) cannot pass by accident.

/// Fills `buf` with the pattern of `seed`: byte `b` is byte `b % 4` (little-endian) of
/// [`word`]`(seed, b / 4)`. Word-aligned buffers (every allocation the probe makes) are filled
/// a word at a time on several threads.
pub fn fill(buf: &mut [u8], seed: u32) {
    // SAFETY: any bit pattern is a valid u32.
    let (head, words, _) = unsafe { buf.align_to_mut::<u32>() };
    if !head.is_empty() {
        buf.iter_mut()
            .enumerate()
            .for_each(|(b, x)| *x = byte(seed, b));
        return;
    }
    crate::par::fill_indexed(words, |i| word(seed, i as u32).to_le());
    let tail = words.len() * 4;
    buf[tail..]
        .iter_mut()
        .enumerate()
        .for_each(|(k, x)| *x = byte(seed, tail + k));
}

/// Index of the first byte of the first 4-byte word that differs from the pattern of `seed`.
pub fn first_mismatch(buf: &[u8], seed: u32) -> Option<usize> {
    // SAFETY: any bit pattern is a valid u32.
    let (head, words, _) = unsafe { buf.align_to::<u32>() };
    if !head.is_empty() {
        return (0..buf.len())
            .find(|&b| buf[b] != byte(seed, b))
            .map(|b| b / 4 * 4);
    }
    if let Some(i) = crate::par::first_index(words, |i, &w| w != word(seed, i as u32).to_le()) {
        return Some(i * 4);
    }
    let tail = words.len() * 4;
    (tail..buf.len())
        .find(|&b| buf[b] != byte(seed, b))
        .map(|b| b / 4 * 4)
}

/// Byte `b` of the pattern of `seed`.
fn byte(seed: u32, b: usize) -> u8 {
    word(seed, (b / 4) as u32).to_le_bytes()[b % 4]
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
        // The word path and the byte path (an unaligned start) write the same bytes.
        let mut big = vec![0u8; (3 << 22) + 3];
        fill(&mut big, 9);
        let mut odd = vec![0u8; 1031];
        fill(&mut odd[1..], 9);
        assert_eq!(&odd[1..], &big[..1030]);
        assert_eq!(first_mismatch(&odd[1..], 9), None);
        big[(3 << 22) + 1] ^= 0x10;
        assert_eq!(first_mismatch(&big, 9), Some(3 << 22));
        big[4096] ^= 1;
        assert_eq!(first_mismatch(&big, 9), Some(4096));
    }

    #[test]
    fn seeds_differ() {
        assert_ne!(fresh_seed(), fresh_seed());
    }
}
