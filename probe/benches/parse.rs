//! Speed of the CPU-side work a probe run and an import do: parsing a long nccl-tests log and
//! summarizing samples. Targets: a 1000-row log parses in under 2 ms (seen: 1.1 ms on a shared
//! 2-core box); summarizing 1000 samples in under 100 µs (seen: 36 µs). Neither may show up next
//! to GPU time.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::Path;

fn nccl_log(rows: usize) -> String {
    let mut s = String::from(
        "# nccl-tests version 2.17.6 nccl-headers=22803 nccl-library=22803\n# Collective test starting: all_reduce_perf\n",
    );
    for r in 0..8 {
        s.push_str(&format!(
            "#  Rank {r:2} Group  0 Pid  4182 on box device {r:2} [0000:{:02x}:00] NVIDIA H200\n",
            0x18 + r
        ));
    }
    for i in 0..rows {
        let size = 8u64 << (i % 28);
        s.push_str(&format!(
            "{size:>12} {:>13}     float     sum      -1    19.94    0.00    0.00      0    19.61    0.00    0.00      0\n",
            size / 4
        ));
    }
    s
}

fn bench(c: &mut Criterion) {
    let log = nccl_log(1000);
    c.bench_function("parse nccl-tests log, 1000 rows", |b| {
        b.iter(|| {
            probe::import::nccl_tests::parse(black_box(&log), Path::new("all_reduce_perf.log"))
                .unwrap()
        })
    });
    let samples: Vec<f64> = (0..1000).map(|i| ((i * 7919) % 1000) as f64).collect();
    c.bench_function("summarize 1000 samples", |b| {
        b.iter(|| probe::stats::summarize(black_box(&samples)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
