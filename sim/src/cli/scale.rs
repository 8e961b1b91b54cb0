//! `sim advise --question scale`'s answer printed (the answer itself is
//! [`sim::scenario::advice`]'s).

use crate::cli::tables::wrap;
use sim::scale::{ScaleAnswer, ScaleOption};

/// Prints the answer: the sentence, the three options side by side, the grid and what to try.
pub fn print(a: &ScaleAnswer, launcher: &str) {
    println!("\n{}", wrap("", &a.sentence));
    let options: Vec<&ScaleOption> = [a.one_box.as_ref(), Some(&a.all_boxes), a.replicas.as_ref()]
        .into_iter()
        .flatten()
        .collect();
    let mut t = crate::cli::tables::table();
    let mut header = vec![format!("at {} concurrent", a.concurrency)];
    header.extend(options.iter().map(|o| o.choice.describe().to_string()));
    t.set_header(header);
    let base = a.one_box.as_ref().map(|o| o.output_throughput);
    type Cell = fn(&ScaleOption) -> String;
    let rows: [(&str, Cell); 11] = [
        ("layout", |o| o.layout.clone()),
        ("flags (each server)", |o| o.flags.clone()),
        ("GPUs in use / servers", |o| {
            format!("{} / {}", o.gpus, o.servers)
        }),
        ("requests per server", |o| {
            let v: Vec<String> = o
                .concurrency_per_server
                .iter()
                .map(|c| c.to_string())
                .collect();
            v.join(" + ")
        }),
        ("output tok/s (simulated)", |o| {
            format!("{:.1}", o.output_throughput)
        }),
        ("mean TTFT ms", |o| format!("{:.0}", o.mean_ttft_ms)),
        ("mean TPOT ms", |o| format!("{:.2}", o.mean_tpot_ms)),
        ("decode step ms", |o| {
            format!("{:.2}", o.decode_breakdown.total_s() * 1e3)
        }),
        ("  communication ms", |o| {
            format!("{:.2}", o.decode_breakdown.comm_s() * 1e3)
        }),
        ("KV tokens per server", |o| o.kv_tokens.to_string()),
        ("weights GB per GPU", |o| {
            format!("{:.2}", o.weight_bytes_per_gpu as f64 / 1e9)
        }),
    ];
    for (name, cell) in rows {
        let mut r = vec![name.to_string()];
        r.extend(options.iter().map(|o| cell(o)));
        t.add_row(r);
    }
    if let Some(b) = base {
        let mut r = vec!["× one box".to_string()];
        r.extend(
            options
                .iter()
                .map(|o| format!("{:.2}", o.output_throughput / b.max(1e-12))),
        );
        t.add_row(r);
    }
    println!("{t}");
    let by: Vec<String> = a
        .by_concurrency
        .iter()
        .map(|p| {
            let one = p.one_box_layout.map_or("-".to_string(), |l| {
                format!("{:.0} ({})", p.one_box_tok_s, l.short_name())
            });
            let rep = p
                .replica_layout
                .map_or("-".to_string(), |_| format!("{:.0}", p.replicas_tok_s));
            format!(
                "{}: {one} | {:.0} ({}) | {rep}",
                p.concurrency,
                p.all_boxes_tok_s,
                p.all_boxes_layout.short_name()
            )
        })
        .collect();
    let by = format!(
        "steady decode tok/s by concurrency, one box | all boxes | one server per box: {}",
        by.join("; ")
    );
    println!("{}", wrap("", &by));
    let wins = format!(
        "`{}` wins in {:.0}% of {} draws (compute and memory ±20%, communication ±{:.0}%)",
        a.best.describe(),
        a.confidence * 100.0,
        a.draws,
        a.comm_spread * 100.0
    );
    println!("{}", wrap("", &wins));
    print_odds(a.odds.as_ref());
    for f in &a.flags_to_try {
        println!("try: {launcher} {f}");
    }
    for n in &a.notes {
        println!("{}", wrap("note: ", n));
    }
}

/// The verdict from the intervals, and which error-model cells set them.
pub(super) fn print_odds(o: Option<&sim::uncertainty::verdict::Odds>) {
    if let Some(o) = o {
        println!("{}", wrap("", &o.sentence));
        // one cell named once; two named by the option each one ranges
        let set_by = if o.set_by[0] == o.set_by[1] {
            format!(
                "80% intervals of both set by the error model's {} (validation/error-model.json)",
                o.set_by[0]
            )
        } else {
            format!(
                "80% intervals set by the error model (validation/error-model.json): {}: {}; {}: {}",
                o.faster, o.set_by[0], o.slower, o.set_by[1]
            )
        };
        println!("{}", wrap("", &set_by));
    }
}
