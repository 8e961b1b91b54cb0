//! The client's side of the replay: when requests reach the server's waiting queue, with
//! bench_serving's semaphore or in closed rounds ([`Client`]).

use super::Engine;

/// How the client paces requests: bench_serving's semaphore of `max_concurrency` slots (a slot
/// frees when any request finishes), or closed rounds of `max_concurrency` requests (all slots
/// free together when the round's last request finishes).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Client {
    pub max_concurrency: Option<u32>,
    pub closed_rounds: bool,
}

impl Engine<'_, '_> {
    /// Moves requests the client may send by now into the server's waiting queue.
    pub(super) fn client_send(&mut self) {
        while self.next_send < self.reqs.len() {
            let a = self.reqs[self.next_send].arrival_s;
            let Some(&free) = self.slots.front() else {
                break;
            };
            if a > self.now || free > self.now {
                break;
            }
            self.slots.pop_front();
            self.reqs[self.next_send].send_s = a.max(free);
            // it reaches the waiting queue at the scheduler's next read ([`Engine::receive`])
            self.inbox.push_back(self.next_send as u32);
            self.next_send += 1;
            if std::mem::take(&mut self.round_first_only) {
                break;
            }
        }
    }

    pub(super) fn next_send_time(&self) -> f64 {
        let a = self.reqs[self.next_send].arrival_s;
        let free = self.slots.front().copied().unwrap_or(a);
        a.max(free).max(self.now)
    }

    /// A request finished: its client slot frees now (bench_serving), or with closed rounds all
    /// of the round's slots once its last request finished.
    pub(super) fn free_slot(&mut self) {
        let Some(size) = self.round_size else {
            self.slots.push_back(self.now);
            return;
        };
        self.round_left -= 1;
        if self.round_left == 0 {
            let next = size.min(self.reqs.len() - self.next_send);
            self.slots.extend(std::iter::repeat_n(self.now, next));
            self.round_left = next;
            self.round_first_only = true;
        }
    }
}
