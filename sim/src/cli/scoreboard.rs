//! `sim validate --records` as terminal tables (the text itself: [`sim::scoreboard::text`]).

use comfy_table::Table;
use sim::scoreboard::Scoreboard;
use sim::scoreboard::text::{
    GROUP_HEADER, REASON_HEADER, SPEC_HEADER, WORST_HEADER, group_row, headline, interval_lines,
    intro, reason_rows, spec_rows, worst_rows,
};

fn table(header: &[&str], rows: Vec<Vec<String>>) -> Table {
    let mut t = crate::cli::tables::table();
    t.set_header(header.to_vec());
    for r in rows {
        t.add_row(r);
    }
    t
}

/// The terminal view.
pub fn print_table(s: &Scoreboard) {
    println!("{}", intro(s));
    println!("{}", headline(s));
    for l in interval_lines(s) {
        println!("{l}");
    }
    println!("\nBy model and family (headline figures):");
    println!(
        "{}",
        table(&GROUP_HEADER, s.families.iter().map(group_row).collect())
    );
    println!("\nSpeculative decoding off and on (headline figures):");
    println!("{}", table(&SPEC_HEADER, spec_rows(s)));
    println!("\nBy model × family × concurrency band (every unflagged figure):");
    println!(
        "{}",
        table(&GROUP_HEADER, s.groups.iter().map(group_row).collect())
    );
    println!("\nBy concurrency band, all models (headline figures):");
    println!(
        "{}",
        table(&GROUP_HEADER, s.bands.iter().map(group_row).collect())
    );
    println!("\nThe {} worst headline figures:", s.worst.len());
    println!("{}", table(&WORST_HEADER, worst_rows(&s.worst)));
    println!(
        "\nNot compared ({} records, counted by their first reason):",
        s.records - s.expressible
    );
    println!("{}", table(&REASON_HEADER, reason_rows(s)));
}
