//! The scoreboard as rows of text: the group statistics, the worst records with where their
//! predicted step goes, GitHub markdown (the README's "How far to trust it" table) and CSV. Shared
//! by `sim validate --records` and `sim report --records`.

use super::stats::{Group, Stats};
use super::{RecordComparison, Scoreboard, breakdown_shares};

fn pct(x: f64) -> String {
    format!("{x:.1}%")
}

fn signed(x: f64) -> String {
    format!("{x:+.1}%")
}

/// One line: the headline statistics, or that nothing was compared (no MAPE of zero figures).
pub fn headline(s: &Scoreboard) -> String {
    if s.summary.n == 0 {
        return format!(
            "nothing compared: none of the {} records has a figure shardwise predicts (reasons below)",
            s.records
        );
    }
    let Stats {
        n,
        mape_pct,
        median_abs_pct,
        bias_pct,
        within_20_pct,
    } = s.summary;
    format!(
        "MAPE {} · median |error| {} · bias {} · {within_20_pct} of {n} within ±20% (one headline figure per record, ⚠-flagged figures left out)",
        pct(mape_pct),
        pct(median_abs_pct),
        signed(bias_pct)
    )
}

/// The 80% interval lines: coverage and median half-width with the stored error model, the
/// leave-one-source-out figures where this file is the one it was fitted on, and how the
/// verdicts' stated confidence matched outcomes on the equal-load pairs.
pub fn interval_lines(s: &Scoreboard) -> Vec<String> {
    let i = &s.intervals;
    let c = &i.coverage;
    let mut out = vec![format!(
        "80% interval: {} of {} headline figures inside ({}), median half-width {} (error model fitted on {}{})",
        c.inside(),
        c.n,
        pct(c.coverage_pct),
        pct(c.median_half_width_pct),
        i.fitted_on,
        if i.in_fit {
            ", this file: in sample"
        } else if i.first_contact {
            "; this file's sources set its new-source spread (first contact): not out of sample"
        } else {
            ", not on this file: out of sample"
        }
    )];
    if let Some(t) = &i.first_token {
        out.push(format!(
            "80% interval of the time to first token (not a headline figure; its own ground in the error model): {} of {} inside ({}), median half-width {}",
            t.inside(),
            t.n,
            pct(t.coverage_pct),
            pct(t.median_half_width_pct)
        ));
    }
    if let Some(l) = &i.loso {
        out.push(format!(
            "80% interval, leave one source out (each page or box predicted by the model fitted on the others): coverage {} of {}, median half-width {}",
            pct(l.coverage_pct),
            l.n,
            pct(l.median_half_width_pct)
        ));
    }
    for (lead, split) in [
        ("by distance from the dev set's ground", &i.by_ground),
        ("by first-contact ground", &i.by_first_contact_ground),
    ] {
        if split.len() > 1 {
            let parts: Vec<String> = split
                .iter()
                .map(|g| {
                    format!(
                        "{} {} of {} ({} wide)",
                        g.ground,
                        pct(g.coverage.coverage_pct),
                        g.coverage.n,
                        pct(g.coverage.median_half_width_pct)
                    )
                })
                .collect();
            out.push(format!("80% interval {lead}: {}", parts.join(", ")));
        }
    }
    out.extend(verdict_line("verdicts on", &i.verdicts));
    if let Some(v) = &i.loso_verdicts {
        out.extend(verdict_line("verdicts leaving one source out, on", v));
    }
    out
}

/// `verdicts on 349 equal-load pairs …`: the stated confidence against how often it was right,
/// how many of the "Depends" were near-ties, and each sure verdict the measurements contradict.
fn verdict_line(lead: &str, v: &crate::uncertainty::verdict::PairCheck) -> Option<String> {
    if v.pairs == 0 {
        return None;
    }
    let bins: Vec<String> = v
        .bins
        .iter()
        .map(|b| format!("stated {}: {} of {} right", b.stated, b.right, b.pairs))
        .collect();
    // the first few name the pairs; the JSON's `list` carries every one
    const NAMED: usize = 5;
    let mut wrong: Vec<String> = v
        .sure_but_wrong()
        .take(NAMED)
        .map(|p| {
            format!(
                "{} over {} stated {:.0}%, measured {:+.1}%",
                p.faster,
                p.slower,
                p.probability * 100.0,
                p.measured_gap_pct
            )
        })
        .collect();
    let more = v.sure_but_wrong().count().saturating_sub(NAMED);
    if more > 0 {
        wrong.push(format!("and {more} more"));
    }
    let wrong = if wrong.is_empty() {
        String::new()
    } else {
        format!(
            "; wrong at ≥ {:.0}%: {}",
            crate::uncertainty::verdict::VERDICT_BAR * 100.0,
            wrong.join("; ")
        )
    };
    Some(format!(
        "{lead} {} equal-load pairs differing in one choice: {} stated at ≥ {:.0}%, {} right ({}); \"Depends: measure both\" on {} ({}; {} of them predicted alike, {} measured within {:.0}% of each other); {}{wrong}",
        v.pairs,
        v.confident,
        crate::uncertainty::verdict::VERDICT_BAR * 100.0,
        v.confident_right,
        pct(share(v.confident_right, v.confident)),
        v.depends,
        pct(share(v.depends, v.pairs)),
        v.ties,
        v.depends_within(NEAR_TIE_PCT),
        NEAR_TIE_PCT,
        bins.join(", ")
    ))
}

/// Two measurements this close are reported as a near-tie, where a "Depends" costs the user
/// little: a reporting threshold only (no verdict or figure depends on it), about the spread of
/// one page's repeated runs (the GLM-5.1 comm page's two 32-stream MTP runs: 855.6 / 853.0 tok/s;
/// the GLM-5.2 v20 page's one-stream runs: 87.5–88.0), though some repeats spread far wider.
const NEAR_TIE_PCT: f64 = 5.0;

fn share(k: usize, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        k as f64 / n as f64 * 100.0
    }
}

/// One line: what was scored.
pub fn intro(s: &Scoreboard) -> String {
    format!(
        "{}: {} records, {} compared, {} not (engine simulated: {}; uncalibrated)",
        s.records_file,
        s.records,
        s.expressible,
        s.records - s.expressible,
        s.engine
    )
}

/// Columns of [`group_row`].
pub const GROUP_HEADER: [&str; 8] = [
    "model",
    "family",
    "metric",
    "conc",
    "n",
    "MAPE",
    "median |err|",
    "bias",
];

/// A group's statistics as text cells.
pub fn group_row(g: &Group) -> Vec<String> {
    vec![
        g.model.clone(),
        g.family.name().to_string(),
        g.quantity.name().to_string(),
        g.band.clone(),
        g.stats.n.to_string(),
        pct(g.stats.mape_pct),
        pct(g.stats.median_abs_pct),
        signed(g.stats.bias_pct),
    ]
}

/// Columns of [`spec_rows`].
pub const SPEC_HEADER: [&str; 7] = [
    "speculation",
    "n",
    "acceptance from the prior",
    "MAPE",
    "median |err|",
    "bias",
    "within ±20%",
];

/// The MTP-off and MTP-on lines.
pub fn spec_rows(s: &Scoreboard) -> Vec<Vec<String>> {
    s.speculation
        .iter()
        .map(|f| {
            vec![
                f.speculation.clone(),
                f.stats.n.to_string(),
                f.assumed_accept.to_string(),
                pct(f.stats.mape_pct),
                pct(f.stats.median_abs_pct),
                signed(f.stats.bias_pct),
                f.stats.within_20_pct.to_string(),
            ]
        })
        .collect()
}

/// The speculation a row was predicted with: `-` (off), `L 2.73 assumed` / `L 2.40 measured`.
pub fn spec_cell(c: &RecordComparison) -> String {
    c.speculation.map_or("-".into(), |s| {
        format!("L {:.2} {}", s.accept_length, s.accept.name())
    })
}

/// Columns of [`worst_rows`].
pub const WORST_HEADER: [&str; 12] = [
    "record",
    "model",
    "engine",
    "metric",
    "conc",
    "context",
    "predicted (80%)",
    "measured",
    "error",
    "MTP",
    "step ms",
    "where the predicted step goes",
];

/// The worst records' rows.
pub fn worst_rows(worst: &[RecordComparison]) -> Vec<Vec<String>> {
    worst
        .iter()
        .map(|c| {
            vec![
                c.id.clone(),
                c.model.clone(),
                c.engine.name().to_string(),
                c.quantity.name().to_string(),
                c.concurrency.to_string(),
                c.context_tokens.to_string(),
                crate::uncertainty::with_range(c.predicted, c.predicted_range, 1),
                c.measured_raw.clone(),
                signed(c.error_pct),
                spec_cell(c),
                format!("{:.2}", c.step_ms),
                breakdown_shares(&c.breakdown),
            ]
        })
        .collect()
}

/// Columns of [`reason_rows`].
pub const REASON_HEADER: [&str; 3] = ["reason", "records", "example"];

/// Records not compared, by counted reason.
pub fn reason_rows(s: &Scoreboard) -> Vec<Vec<String>> {
    s.reasons
        .iter()
        .map(|r| {
            vec![
                r.reason.key().to_string(),
                r.count.to_string(),
                r.example.clone(),
            ]
        })
        .collect()
}

fn md_row(cells: &[String]) -> String {
    let esc: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
    format!("| {} |", esc.join(" | "))
}

fn md_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = vec![
        md_row(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>()),
        md_row(&header.iter().map(|_| "---".to_string()).collect::<Vec<_>>()),
    ];
    out.extend(rows.iter().map(|r| md_row(r)));
    out.join("\n")
}

/// The README's summary: the headline, the groups, the bands and what was not compared.
pub fn markdown(s: &Scoreboard) -> String {
    let families: Vec<Vec<String>> = s.families.iter().map(group_row).collect();
    let groups: Vec<Vec<String>> = s.groups.iter().map(group_row).collect();
    let bands: Vec<Vec<String>> = s.bands.iter().map(group_row).collect();
    let spec = spec_rows(s);
    let reasons = s
        .reasons
        .iter()
        .map(|r| format!("{} {}", r.reason.key(), r.count))
        .collect::<Vec<_>>()
        .join(", ");
    let file = std::path::Path::new(&s.records_file)
        .file_name()
        .map_or(s.records_file.clone(), |f| f.to_string_lossy().into_owned());
    format!(
        "{}\n\n{}\n\n{}\n\nBy model and family (headline figures):\n\n{}\n\nSpeculative decoding off and on (headline figures):\n\n{}\n\nBy concurrency band, all models (headline figures):\n\n{}\n\nBy model × family × concurrency band (every unflagged figure):\n\n{}\n\nNot compared: {reasons}.\n",
        intro(s).replace(&s.records_file, &format!("`{file}`")),
        headline(s),
        interval_lines(s).join("\n\n"),
        md_table(&GROUP_HEADER, &families),
        md_table(&SPEC_HEADER, &spec),
        md_table(&GROUP_HEADER, &bands),
        md_table(&GROUP_HEADER, &groups),
    )
}

/// A CSV field, quoted when it holds a comma, quote or line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One CSV row per compared figure.
pub fn csv(s: &Scoreboard) -> String {
    let mut out = String::from(
        "id,model,family,metric,key,concurrency,context_tokens,machine,layout,engine,predicted,measured,error_pct,primary,flagged,mtp,predicted_lo,predicted_hi\n",
    );
    for c in &s.comparisons {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{:.3},{:.3},{:.2},{},{},{},{:.3},{:.3}\n",
            field(&c.id),
            field(&c.model),
            c.family.name(),
            c.quantity.name(),
            field(&c.key),
            c.concurrency,
            c.context_tokens,
            field(&c.machine),
            c.layout,
            c.engine,
            c.predicted,
            c.measured,
            c.error_pct,
            c.primary,
            c.flagged,
            spec_cell(c),
            c.predicted_range[0],
            c.predicted_range[1]
        ));
    }
    out
}
