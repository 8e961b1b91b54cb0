//! How an NCCL point was timed, three ways per sample: CUDA events per rank (the recorded
//! figure), the host time spent enqueueing the batch, and the host clock to the end of the
//! stream wait. Comparing them tells how far the single driving thread would starve the GPUs
//! without the gate (`gate`).

use models::profile::CollectiveOp;

/// Seconds per op of each sample of one point, three ways.
#[derive(Default)]
pub(super) struct PointTiming {
    /// CUDA events, slowest rank: the figure recorded.
    pub(super) gpu_s: Vec<f64>,
    /// Host clock around enqueueing the batch (launch + `settle`), before waiting.
    pub(super) enqueue_s: Vec<f64>,
    /// Host clock from the first launch to the end of the stream wait (the old figure).
    pub(super) host_s: Vec<f64>,
    /// Seconds spent checking the result (copy back and compare): the --quick budget's evidence.
    pub(super) check_s: f64,
}

/// Medians of one point's three timings, for the per-op note.
pub(super) struct Medians {
    pub(super) bytes: u64,
    pub(super) gpu_us: f64,
    pub(super) enqueue_us: f64,
    pub(super) host_us: f64,
}

/// One line per op comparing the recorded CUDA-event time with the host's view: the largest
/// host-enqueue share of the GPU time and the extra a host-clock timing would have added at
/// 1 MiB or the nearest size. Ungated, a share near or above 1 means the GPU waited for the
/// host; gated, it says how much an ungated timing would have been off.
pub(super) fn timing_note(
    op: CollectiveOp,
    devices: &[u32],
    gated: bool,
    m: &[Medians],
) -> Option<String> {
    let worst = m
        .iter()
        .filter(|x| x.gpu_us > 0.0)
        .max_by(|a, b| (a.enqueue_us / a.gpu_us).total_cmp(&(b.enqueue_us / b.gpu_us)))?;
    let mib = m.iter().min_by_key(|x| x.bytes.abs_diff(1 << 20))?;
    let how = if gated {
        "batch released behind a gate, CUDA events per rank (slowest rank)"
    } else {
        "batch timed as enqueued, CUDA events per rank (slowest rank)"
    };
    Some(format!(
        "{op:?} on {devices:?}: {how}; host enqueue per op at most {:.2}x the GPU time ({} B: enqueue {:.1} µs, GPU {:.1} µs); at {} B the host clock would read {:.1} µs against {:.1} µs by events",
        worst.enqueue_us / worst.gpu_us,
        worst.bytes,
        worst.enqueue_us,
        worst.gpu_us,
        mib.bytes,
        mib.host_us,
        mib.gpu_us
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(bytes: u64, gpu_us: f64, enqueue_us: f64, host_us: f64) -> Medians {
        Medians {
            bytes,
            gpu_us,
            enqueue_us,
            host_us,
        }
    }

    #[test]
    fn note_names_the_most_host_bound_size_and_the_1_mib_point() {
        let pts = [
            m(8, 70.0, 69.0, 72.0),
            m(1 << 20, 80.0, 40.0, 95.0),
            m(1 << 30, 3000.0, 60.0, 3010.0),
        ];
        let note = timing_note(CollectiveOp::AllReduce, &[0, 1], true, &pts).unwrap();
        assert!(note.contains("at most 0.99x the GPU time (8 B"), "{note}");
        assert!(note.contains("at 1048576 B the host clock would read 95.0 µs against 80.0 µs"));
        assert!(note.contains("released behind a gate"));
        let ungated = timing_note(CollectiveOp::AllReduce, &[0, 1], false, &pts).unwrap();
        assert!(ungated.contains("timed as enqueued"));
        assert!(timing_note(CollectiveOp::AllReduce, &[0], true, &[]).is_none());
    }
}
