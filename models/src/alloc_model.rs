//! PyTorch's CUDA caching allocator, reduced to the rules that decide how much memory a sequence
//! of allocations and frees leaves reserved: the native backend with its default configuration
//! (`c10/cuda/CUDACachingAllocator.cpp`, no `PYTORCH_CUDA_ALLOC_CONF`, no expandable segments).
//!
//! - Sizes are rounded up to 512 B (`round_size`). Requests of at most 1 MiB use the small pool,
//!   larger ones the large pool (`get_pool`).
//! - A request takes the smallest cached free block of its pool that is large enough, the lowest
//!   address among equal sizes (`get_free_block`: `BlockComparatorSize` orders by size, then
//!   address).
//! - Without one, a new segment is reserved (`get_allocation_size`): 2 MiB for a small request,
//!   20 MiB for one under 10 MiB, else the size rounded up to 2 MiB. New segments get rising
//!   addresses here (as cudaMalloc hands them out in a fresh process).
//! - A block is split when what remains is at least 512 B (small pool) or more than 1 MiB
//!   (large pool) (`should_split`); the request takes the front.
//! - A freed block merges with free neighbours of its segment (`free_block`).
//! - `empty_cache` returns the segments that are wholly free (`release_cached_blocks`); a free
//!   block inside a segment that still holds a live tensor stays reserved: a hole.
//!
//! Checked against the device: the load sequences of `probe/bench/nvfp4_load_replay.py` and
//! `probe/bench/marlin_moe_load_replay.py` replayed here give the H200's reserved bytes to the
//! byte (`models/tests/load_replay.rs`).

use std::collections::BTreeSet;

const MIB: u64 = 1 << 20;
const MIN_BLOCK_BYTES: u64 = 512;
const SMALL_REQUEST_BYTES: u64 = MIB;
const SMALL_SEGMENT_BYTES: u64 = 2 * MIB;
const LARGE_SEGMENT_BYTES: u64 = 20 * MIB;
const MIN_LARGE_ALLOC_BYTES: u64 = 10 * MIB;
const ROUND_LARGE_BYTES: u64 = 2 * MIB;

/// A live allocation (its block's index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation(usize);

#[derive(Debug, Clone)]
struct Block {
    addr: u64,
    bytes: u64,
    small: bool,
    prev: Option<usize>,
    next: Option<usize>,
    free: bool,
}

/// The allocator's state: blocks, the two pools of free blocks and the reserved total.
#[derive(Debug, Default)]
pub struct CachingAllocator {
    blocks: Vec<Block>,
    /// Free blocks by (bytes, address, index); index 0 the large pool, 1 the small one.
    pools: [BTreeSet<(u64, u64, usize)>; 2],
    next_addr: u64,
    reserved_bytes: u64,
    allocated_bytes: u64,
}

fn round_bytes(bytes: u64) -> u64 {
    bytes.max(1).div_ceil(MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES
}

fn segment_bytes(rounded: u64) -> u64 {
    if rounded <= SMALL_REQUEST_BYTES {
        SMALL_SEGMENT_BYTES
    } else if rounded < MIN_LARGE_ALLOC_BYTES {
        LARGE_SEGMENT_BYTES
    } else {
        rounded.div_ceil(ROUND_LARGE_BYTES) * ROUND_LARGE_BYTES
    }
}

impl CachingAllocator {
    /// An allocator with nothing reserved.
    pub fn new() -> Self {
        Self::default()
    }

    fn key(&self, i: usize) -> (u64, u64, usize) {
        (self.blocks[i].bytes, self.blocks[i].addr, i)
    }

    fn pool_of(&mut self, i: usize) -> &mut BTreeSet<(u64, u64, usize)> {
        let small = self.blocks[i].small;
        &mut self.pools[usize::from(small)]
    }

    fn insert_free(&mut self, i: usize) {
        let k = self.key(i);
        self.pool_of(i).insert(k);
    }

    fn remove_free(&mut self, i: usize) {
        let k = self.key(i);
        self.pool_of(i).remove(&k);
    }

    /// Allocates `bytes` (a tensor's storage); `None` for an empty tensor, which takes no block.
    pub fn malloc(&mut self, bytes: u64) -> Option<Allocation> {
        if bytes == 0 {
            return None;
        }
        let size = round_bytes(bytes);
        let small = size <= SMALL_REQUEST_BYTES;
        let pool = &self.pools[usize::from(small)];
        let found = pool.range((size, 0, 0)..).next().copied();
        let i = match found {
            Some(k) => {
                self.pools[usize::from(small)].remove(&k);
                k.2
            }
            None => {
                let seg = segment_bytes(size);
                self.blocks.push(Block {
                    addr: self.next_addr,
                    bytes: seg,
                    small,
                    prev: None,
                    next: None,
                    free: true,
                });
                self.next_addr += seg;
                self.reserved_bytes += seg;
                self.blocks.len() - 1
            }
        };
        let rest = self.blocks[i].bytes - size;
        let split = if small {
            rest >= MIN_BLOCK_BYTES
        } else {
            rest > SMALL_REQUEST_BYTES
        };
        if split {
            let r = self.blocks.len();
            let next = self.blocks[i].next;
            self.blocks.push(Block {
                addr: self.blocks[i].addr + size,
                bytes: rest,
                small,
                prev: Some(i),
                next,
                free: true,
            });
            if let Some(n) = next {
                self.blocks[n].prev = Some(r);
            }
            self.blocks[i].next = Some(r);
            self.blocks[i].bytes = size;
            self.insert_free(r);
        }
        self.blocks[i].free = false;
        self.allocated_bytes += self.blocks[i].bytes;
        Some(Allocation(i))
    }

    /// Frees an allocation (a tensor's last reference gone); `None` is an empty tensor.
    pub fn free(&mut self, a: Option<Allocation>) {
        let Some(Allocation(i)) = a else { return };
        debug_assert!(!self.blocks[i].free, "double free");
        self.blocks[i].free = true;
        self.allocated_bytes -= self.blocks[i].bytes;
        if let Some(p) = self.blocks[i].prev.filter(|&p| self.blocks[p].free) {
            self.remove_free(p);
            let pp = self.blocks[p].prev;
            self.blocks[i].addr = self.blocks[p].addr;
            self.blocks[i].bytes += self.blocks[p].bytes;
            self.blocks[i].prev = pp;
            if let Some(pp) = pp {
                self.blocks[pp].next = Some(i);
            }
        }
        if let Some(n) = self.blocks[i].next.filter(|&n| self.blocks[n].free) {
            self.remove_free(n);
            let nn = self.blocks[n].next;
            self.blocks[i].bytes += self.blocks[n].bytes;
            self.blocks[i].next = nn;
            if let Some(nn) = nn {
                self.blocks[nn].prev = Some(i);
            }
        }
        self.insert_free(i);
    }

    /// `torch.cuda.empty_cache()`: returns every wholly free segment.
    pub fn empty_cache(&mut self) {
        for pool in 0..2 {
            let whole: Vec<(u64, u64, usize)> = self.pools[pool]
                .iter()
                .filter(|k| self.blocks[k.2].prev.is_none() && self.blocks[k.2].next.is_none())
                .copied()
                .collect();
            for k in whole {
                self.pools[pool].remove(&k);
                self.reserved_bytes -= k.0;
            }
        }
    }

    /// Bytes of all reserved segments (what `cudaMemGetInfo` sees go).
    pub fn reserved_bytes(&self) -> u64 {
        self.reserved_bytes
    }

    /// Bytes of live blocks (rounded sizes).
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_tensor_alone_in_its_segment_is_returned_one_beside_a_live_one_is_not() {
        let mut a = CachingAllocator::new();
        let big = a.malloc(30 * MIB);
        let live = a.malloc(12 * MIB);
        assert_eq!(a.reserved_bytes(), 42 * MIB);
        a.free(big);
        // a 10 MiB request lands in the freed 30 MiB block: 20 MiB stay free beside it
        let small = a.malloc(10 * MIB);
        a.empty_cache();
        assert_eq!(a.reserved_bytes(), 42 * MIB);
        a.free(small);
        a.empty_cache();
        assert_eq!(a.reserved_bytes(), 12 * MIB);
        a.free(live);
        a.empty_cache();
        assert_eq!(a.reserved_bytes(), 0);
        assert_eq!(a.allocated_bytes(), 0);
    }

    #[test]
    fn requests_under_ten_mib_share_twenty_mib_segments_and_small_ones_two_mib() {
        let mut a = CachingAllocator::new();
        let x = a.malloc(3 * MIB);
        let y = a.malloc(5 * MIB);
        assert_eq!(a.reserved_bytes(), 20 * MIB);
        let s = a.malloc(1000);
        assert_eq!(a.reserved_bytes(), 22 * MIB);
        assert!(a.malloc(0).is_none());
        for t in [x, y, s] {
            a.free(t);
        }
        a.empty_cache();
        assert_eq!(a.reserved_bytes(), 0);
    }
}
