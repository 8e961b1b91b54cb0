//! Rendering a whole 8-GPU report: three 8×8 heat maps, bus bandwidth 20 series × 28 sizes,
//! stacked bars for 12 layouts, throughput lines 12 layouts × 10 concurrencies, memory bars for 12
//! layouts, and the HTML page holding them. Target: well under 1 s for the full set.

#[path = "../tests/fixtures/mod.rs"]
mod fixtures;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn full_report(c: &mut Criterion) {
    let heat = [
        fixtures::p2p_bandwidth(),
        fixtures::p2p_latency(),
        fixtures::pair_classes(),
    ];
    let bus = fixtures::bus_bandwidth();
    let steps = fixtures::step_breakdown();
    let tput = fixtures::throughput();
    let mem = fixtures::memory();
    c.bench_function("full_report_8gpu_12_layouts", |b| {
        b.iter(|| {
            let mut page = reports::html::Page::new("report");
            for h in &heat {
                page = page.figure(reports::heat_map(black_box(h)).unwrap(), "heat");
            }
            page = page
                .figure(reports::line_chart(black_box(&bus)).unwrap(), "bus")
                .figure(reports::stacked_bars(black_box(&steps)).unwrap(), "steps")
                .figure(reports::line_chart(black_box(&tput)).unwrap(), "tput")
                .figure(reports::memory_bars(black_box(&mem)).unwrap(), "mem");
            black_box(page.render().unwrap())
        })
    });
    c.bench_function("bus_bandwidth_20x28", |b| {
        b.iter(|| reports::line_chart(black_box(&bus)).unwrap())
    });
}

criterion_group!(benches, full_report);
criterion_main!(benches);
