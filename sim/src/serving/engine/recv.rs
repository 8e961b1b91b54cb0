//! When SGLang's scheduler reads new requests: every iteration by default, or, under
//! `--scheduler-recv-interval N`, through its `SchedulerRecvSkipper` (sgl-project/sglang
//! `python/sglang/srt/managers/scheduler_recv_skipper.py`, v0.5.6 – v0.5.12; `recv_requests` in
//! `scheduler.py` returns nothing unless the skipper says so). Each iteration adds the weight of
//! the batch the last one ran (`environ.py`: `SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DECODE` 1,
//! `..._WEIGHT_NONE` 1, `..._WEIGHT_DEFAULT` 1000 for any other batch, a prefill's) and reads
//! once the sum reaches `N`, then starts again from 0: during decode every `N` steps, right
//! after a prefill at once. A request the client sends between two reads waits in the server's
//! inbox, and the arrivals of one interval are prefilled together (sgl-project/sglang PR #8947,
//! "Reduce scheduler recv requests overhead", which added it to save the per-step read).

use super::Engine;

/// The weight of an iteration that ran a decode step, or nothing.
pub(super) const DECODE_WEIGHT: u32 = 1;
/// The weight of an iteration that ran a prefill (any batch other than decode or idle).
pub(super) const PREFILL_WEIGHT: u32 = 1000;

/// SGLang's `SchedulerRecvSkipper`: `interval` is `--scheduler-recv-interval`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct RecvSkipper {
    pub interval: u32,
    counter: u32,
}

impl RecvSkipper {
    pub fn new(interval: u32) -> Self {
        RecvSkipper {
            interval: interval.max(1),
            counter: 0,
        }
    }

    /// One iteration after a batch of `weight`: whether it reads new requests.
    pub fn handle(&mut self, weight: u32) -> bool {
        self.counter = self.counter.saturating_add(weight);
        if self.counter >= self.interval {
            self.counter = 0;
            true
        } else {
            false
        }
    }

    /// Decode steps until the next read (the iteration after the last of them reads).
    pub fn steps_to_read(&self) -> u32 {
        self.interval.saturating_sub(self.counter).max(1)
    }

    /// `k` decode iterations whose reads, where they fell, found nothing to read.
    pub fn advance(&mut self, k: u32) {
        self.counter = ((u64::from(self.counter) + u64::from(k)) % u64::from(self.interval)) as u32;
    }

    /// A read that happened now (the idle scheduler polls in a tight loop: it reads within its
    /// `N` fast iterations, which take no modelled time).
    pub fn reset(&mut self) {
        self.counter = 0;
    }
}

impl Engine<'_, '_> {
    /// The start of a scheduler iteration: the requests in the inbox reach the waiting queue if
    /// this iteration reads (every iteration without `--scheduler-recv-interval`).
    pub(super) fn receive(&mut self) {
        if self.skipper.interval <= 1 {
            self.waiting.extend(self.inbox.drain(..));
            return;
        }
        let idle = self.waiting.is_empty() && self.running_total == 0 && self.chunked.is_none();
        let read = self.skipper.handle(self.last_weight);
        if idle {
            self.skipper.reset();
        }
        if read || idle {
            self.waiting.extend(self.inbox.drain(..));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under an interval of 10 a decode-only run reads on every tenth iteration, a prefill makes
    /// the next one read, and the steps to the next read count down between them.
    #[test]
    fn reads_every_interval_of_decode_steps_and_after_every_prefill() {
        let mut s = RecvSkipper::new(10);
        let reads: Vec<bool> = (0..20).map(|_| s.handle(DECODE_WEIGHT)).collect();
        let at: Vec<usize> = reads
            .iter()
            .enumerate()
            .filter(|(_, r)| **r)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(at, vec![9, 19]);
        s.handle(DECODE_WEIGHT);
        s.handle(DECODE_WEIGHT);
        assert_eq!(s.steps_to_read(), 8);
        assert!(s.handle(PREFILL_WEIGHT));
        assert_eq!(s.steps_to_read(), 10);
        // three decode iterations taken at once, then seven more: the seventh reads
        s.advance(3);
        assert_eq!(s.steps_to_read(), 7);
        assert!(!(0..6).any(|_| s.handle(DECODE_WEIGHT)));
        assert!(s.handle(DECODE_WEIGHT));
        // an interval of 1 reads on every iteration
        let mut one = RecvSkipper::new(1);
        assert!((0..5).all(|_| one.handle(DECODE_WEIGHT)));
    }
}
