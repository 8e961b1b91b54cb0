//! The result check after each NCCL point: which elements of a receive buffer are read back
//! and compared with [`super::expected_value`]. Small buffers are checked whole; large ones in
//! regions — both edges, every rank's chunk boundary (where a misplaced chunk shows first) and
//! blocks spread over the rest — copied back region by region, so a 1 GiB buffer costs a few
//! hundred KiB of copies instead of a full read-back (which dominated a `--quick` run).

use super::{Counts, expected_value};
use crate::cuda::{DeviceBuf, Gpu, dtoh};
use crate::error::Result;
use models::profile::CollectiveOp;
use std::ops::Range;

/// Buffers up to this many elements (4 MiB of float32) are checked whole.
const WHOLE: usize = 1 << 20;
/// Elements checked at each end of a larger buffer.
const EDGE: usize = 64 << 10;
/// Elements checked on each side of a rank's chunk boundary.
const BOUNDARY: usize = 4 << 10;
/// Blocks spread over the rest, and their length in elements.
const BLOCKS: usize = 64;
const BLOCK: usize = 1 << 10;

/// Sorted, non-overlapping element ranges to check in a receive buffer of `len` elements made of
/// `chunk`-element pieces (one per rank, for the ops that have them).
pub fn check_regions(len: usize, chunk: usize) -> Vec<Range<usize>> {
    if len <= WHOLE {
        // One region: the whole buffer (a list of one range, not a range of indices).
        return std::iter::once(0..len).collect();
    }
    let mut r = vec![0..EDGE, len - EDGE..len];
    if chunk > 0 && chunk < len {
        for b in (chunk..len).step_by(chunk) {
            r.push(b.saturating_sub(BOUNDARY)..(b + BOUNDARY).min(len));
        }
    }
    for k in 0..BLOCKS {
        // An odd shift per block, so blocks do not all sit at the same offset within a chunk.
        let start = (k * (len / BLOCKS) + k * 61).min(len - BLOCK);
        r.push(start..start + BLOCK);
    }
    r.sort_by_key(|x| x.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(r.len());
    for x in r {
        match merged.last_mut() {
            Some(last) if x.start <= last.end => last.end = last.end.max(x.end),
            _ => merged.push(x),
        }
    }
    merged
}

/// Reads rank `rank`'s checked regions of `recv` back and compares them with the expected
/// values of `op`; `Ok(false)` on the first wrong element.
pub fn rank_result_ok(
    gpu: &Gpu,
    recv: &DeviceBuf,
    op: CollectiveOp,
    n: usize,
    rank: usize,
    c: &Counts,
) -> Result<bool> {
    let regions = check_regions(c.recv, c.chunk);
    let total: usize = regions.iter().map(|r| r.len()).sum();
    let mut vals = vec![0f32; total];
    let mut index = Vec::with_capacity(total);
    gpu.bind()?;
    let mut at = 0;
    for r in &regions {
        let dst = vals[at..].as_mut_ptr() as *mut u8;
        dtoh(
            dst,
            recv.ptr + (r.start * 4) as u64,
            r.len() * 4,
            gpu.stream,
        )?;
        index.extend(r.clone());
        at += r.len();
    }
    gpu.sync()?;
    let bad = crate::par::first_index(&vals, |k, &v| v != expected_value(op, n, rank, index[k], c));
    Ok(bad.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_buffers_whole_large_ones_in_regions() {
        let whole = check_regions(1000, 125);
        assert_eq!((whole.len(), whole[0].clone()), (1, 0..1000));
        let len = 256 << 20;
        let chunk = len / 8;
        let r = check_regions(len, chunk);
        let total: usize = r.iter().map(|x| x.len()).sum();
        assert!(total < len / 500, "{total}");
        assert_eq!((r[0].start, r.last().unwrap().end), (0, len));
        assert!(
            r.windows(2).all(|w| w[0].end < w[1].start),
            "sorted, disjoint"
        );
        // Both sides of every rank boundary are read.
        for b in (chunk..len).step_by(chunk) {
            assert!(r.iter().any(|x| x.start < b && x.end > b), "boundary {b}");
        }
    }
}
