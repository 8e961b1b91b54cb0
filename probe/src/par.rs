//! Data-parallel fills and scans of large host buffers. Generating and checking test data
//! (P2P patterns, GEMM inputs, NCCL send buffers) is CPU work that would otherwise dominate a
//! `--quick` run: a 128 MiB pattern on one core takes longer than the copy it checks.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Below this many elements one thread is faster than starting several.
const MIN_PER_THREAD: usize = 1 << 20;

/// Threads to split a buffer of `len` elements over.
fn threads_for(len: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (len / MIN_PER_THREAD).clamp(1, cores.min(32))
}

/// Sets `buf[i] = f(i)` for every index, on several threads for large buffers.
pub fn fill_indexed<T: Send>(buf: &mut [T], f: impl Fn(usize) -> T + Sync) {
    let t = threads_for(buf.len());
    if t == 1 {
        buf.iter_mut().enumerate().for_each(|(i, x)| *x = f(i));
        return;
    }
    let chunk = buf.len().div_ceil(t);
    std::thread::scope(|s| {
        for (c, part) in buf.chunks_mut(chunk).enumerate() {
            let f = &f;
            s.spawn(move || {
                let base = c * chunk;
                part.iter_mut()
                    .enumerate()
                    .for_each(|(i, x)| *x = f(base + i));
            });
        }
    });
}

/// The smallest index `i` with `bad(i, &buf[i])`, scanning on several threads for large
/// buffers; every thread stops once a smaller bad index than its own position is known.
pub fn first_index<T: Sync>(buf: &[T], bad: impl Fn(usize, &T) -> bool + Sync) -> Option<usize> {
    let t = threads_for(buf.len());
    if t == 1 {
        return buf.iter().enumerate().position(|(i, x)| bad(i, x));
    }
    let chunk = buf.len().div_ceil(t);
    let found = AtomicUsize::new(usize::MAX);
    std::thread::scope(|s| {
        for (c, part) in buf.chunks(chunk).enumerate() {
            let (bad, found) = (&bad, &found);
            s.spawn(move || {
                let base = c * chunk;
                // Checked in blocks so a thread past an earlier hit stops soon.
                for (b, block) in part.chunks(1 << 16).enumerate() {
                    let start = base + (b << 16);
                    if start > found.load(Ordering::Relaxed) {
                        return;
                    }
                    if let Some(p) = block
                        .iter()
                        .enumerate()
                        .position(|(i, x)| bad(start + i, x))
                    {
                        found.fetch_min(start + p, Ordering::Relaxed);
                        return;
                    }
                }
            });
        }
    });
    let f = found.into_inner();
    (f != usize::MAX).then_some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_and_scan_agree_on_large_and_small_buffers() {
        for len in [10usize, 3 << 20] {
            let mut v = vec![0u32; len];
            fill_indexed(&mut v, |i| (i as u32).wrapping_mul(3));
            assert!(
                v.iter()
                    .enumerate()
                    .all(|(i, &x)| x == (i as u32).wrapping_mul(3))
            );
            assert_eq!(
                first_index(&v, |i, &x| x != (i as u32).wrapping_mul(3)),
                None
            );
            // Two wrong elements: the first one is reported whichever thread sees it.
            v[len - 1] = 7;
            v[len / 2] = 7;
            assert_eq!(
                first_index(&v, |i, &x| x != (i as u32).wrapping_mul(3)),
                Some(len / 2)
            );
        }
    }
}
