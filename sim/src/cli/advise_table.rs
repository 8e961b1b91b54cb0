//! `sim advise`'s terminal output: the ranking (top layouts, the EP ones for the EP question and
//! those the answer names, unless `--all`), the EP answer with the numbers behind it, the
//! confidence line with the model's own error, what the answer rests on, and the flags to try.

use crate::cli::tables::{wrap, wrap_hanging};
use comfy_table::Table;
use sim::advise::{Advice, EpAnswer, EpSide, RankedLayout};

/// Feasible layouts shown besides the EP ones when `--all` is not given.
const TOP_LAYOUTS: usize = 5;

pub fn print_advice(a: &Advice, all: bool, launcher: &str, try_tail: &str) {
    let w = &a.workload;
    let head = format!(
        "{} on {}: {} prompts, {}, {}",
        a.model,
        a.machine,
        w.num_prompts,
        match &w.dataset {
            sim::workload::Dataset::Random => format!(
                "input {} / output {} tokens",
                w.random_input_len, w.random_output_len
            ),
            sim::workload::Dataset::Sharegpt(_) => format!(
                "ShareGPT lengths (mean input {} / output {} tokens)",
                w.random_input_len, w.random_output_len
            ),
        },
        w.max_concurrency
            .map_or("unlimited concurrency".into(), |c| format!(
                "{c} concurrent"
            ))
    );
    println!("{}", wrap("", &head));
    // The layouts the answer's sentence names are shown whatever their rank; the EP layouts
    // beside the top ones for the EP question (or none asked), not for the others.
    let sentence = [
        a.ep.as_ref().map(|e| e.sentence.as_str()),
        a.mtp.as_ref().map(|m| m.sentence.as_str()),
        a.scale.as_ref().map(|s| s.sentence.as_str()),
        a.replicas.as_ref().map(|r| r.sentence.as_str()),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    let question = a.ep.is_some() || a.mtp.is_some() || a.replicas.is_some() || a.scale.is_some();
    let vllm = launcher.starts_with("vllm ");
    let shown = Shown {
        all,
        ep: a.ep.is_some() || !question,
        cited: cited(&sentence),
    };
    let (table, notes, hidden) = ranking_table(&a.ranking, &shown, vllm);
    println!("{table}");
    print!("{}", notes.render());
    for r in a.ranking.iter().filter(|r| r.idle_gpus > 0) {
        let n = format!(
            "{} runs as one replica: {} GPUs sit idle",
            r.layout, r.idle_gpus
        );
        println!("{}", wrap("note: ", &n));
    }
    if hidden > 0 {
        println!("{hidden} more layout(s) not shown (slower or rejected); --all lists every row");
    }
    // the ranking ends with the best layout's own launch line (SGLang's questions end with
    // theirs instead)
    if (vllm || !question)
        && let Some(best) = a.ranking.iter().find(|r| r.run.is_some())
    {
        println!("try: {launcher} {}{try_tail}", best.flags);
    }
    if let Some(ep) = &a.ep {
        print_ep(ep, launcher);
    }
    if let Some(m) = &a.mtp {
        print_mtp(m, launcher);
    }
    if let Some(p) = &a.p2p {
        print_p2p(p, launcher);
    }
    if let Some(r) = &a.replicas {
        print_replicas(r, launcher);
    }
    if let Some(scale) = &a.scale {
        super::scale::print(scale, launcher);
    }
    println!("based on:");
    for p in &a.provenance {
        println!("{}", wrap_hanging("  ", "    ", p));
    }
    for n in &a.notes {
        println!("{}", wrap("note: ", n));
    }
    if !a.flags_not_modelled.is_empty() {
        let flags = a.flags_not_modelled.join(", ");
        println!("{}", wrap("flags not modelled: ", &flags));
    }
}

fn print_ep(ep: &EpAnswer, launcher: &str) {
    println!("\n{}", wrap("", &ep.sentence));
    println!("{}", ep_table(ep));
    let by: Vec<String> = ep
        .by_concurrency
        .iter()
        .map(|p| {
            format!(
                "{}: {:.0} vs {:.0} ({})",
                p.concurrency,
                p.ep_tok_s,
                p.other_tok_s,
                p.other_layout.short_name()
            )
        })
        .collect();
    let by = format!(
        "steady decode tok/s, {} vs best other, by concurrency: {}",
        ep.ep.layout,
        by.join("; ")
    );
    println!("{}", wrap("", &by));
    let verdict = format!(
        "verdict `{}` holds in {:.0}% of {} draws (compute and memory ±20%, communication ±{:.0}%); {}",
        serde_json::to_value(ep.verdict)
            .unwrap_or_default()
            .as_str()
            .unwrap_or(""),
        ep.confidence * 100.0,
        ep.draws,
        ep.comm_spread * 100.0,
        model_error(ep)
    );
    println!("{}", wrap("", &verdict));
    super::scale::print_odds(ep.odds.as_ref());
    for f in &ep.flags_to_try {
        println!("try: {launcher} {f}");
    }
}

/// `--question p2p`: every state and path, the verdict, what to change and the `try:` line.
fn print_p2p(p: &sim::advise::p2p::P2pAnswer, launcher: &str) {
    println!(
        "P2P: {} on this machine ({})",
        p.machine_state
            .map_or("not classified".into(), |s| s.to_string()),
        p.layout
    );
    let mut t = super::tables::table();
    t.set_header(vec![
        "P2P",
        "all-reduce",
        "output tok/s",
        "TPOT ms",
        "machine",
    ]);
    for r in &p.rows {
        let mark = if r.current { " (now)" } else { "" };
        t.add_row([
            format!("{}{mark}", r.state),
            r.all_reduce.clone(),
            r.output_tok_s.map_or_else(
                || r.why_not.clone().unwrap_or_default(),
                |v| format!("{v:.1}"),
            ),
            r.mean_tpot_ms.map_or("—".into(), |v| format!("{v:.1}")),
            r.machine.clone(),
        ]);
    }
    println!("{t}");
    println!("{}", wrap("", &p.sentence));
    if let Some(sw) = &p.host_path_sweep {
        print_host_path_sweep(sw);
    }
    super::scale::print_odds(p.odds.as_ref());
    for c in &p.changes {
        println!("{}", wrap("change: ", c));
    }
    // the row the changes lead to: the current one when nothing is to change
    let tok = |r: &&sim::advise::p2p::P2pRow| r.output_tok_s.unwrap_or(0.0);
    let current = p.rows.iter().find(|r| r.current);
    let best = p
        .rows
        .iter()
        .filter(|r| r.output_tok_s.is_some())
        .max_by(|a, b| tok(a).total_cmp(&tok(b)));
    let flag = match (current, best) {
        (Some(c), Some(b)) if tok(&b) <= 1.01 * tok(&c) => Some(c),
        (_, b) => b,
    }
    .map(|b| {
        let mut env: Vec<&str> = Vec::new();
        if b.state == models::profile::P2pState::Off
            && p.machine_state != Some(models::profile::P2pState::Off)
        {
            env.push("NCCL_P2P_DISABLE=1");
        }
        let f = if b.current {
            "" // nothing to change: the line as it runs now
        } else if b.all_reduce.starts_with("custom") {
            // the engine's own words: a flag (SGLang) or an environment assignment (vLLM)
            env.push(&p.oneshot_env);
            p.oneshot_flag.as_str()
        } else {
            "--disable-custom-all-reduce"
        };
        (env, f)
    });
    if let Some((env, f)) = flag {
        // the all-reduce the row runs replaces the one the user's flags chose
        let all_reduce_flags = ["--disable-custom-all-reduce", p.oneshot_flag.as_str()];
        let kept = p
            .launch_flags
            .split(' ')
            .filter(|w| f.is_empty() || !all_reduce_flags.contains(w));
        let flags: Vec<&str> = kept
            .chain(std::iter::once(f))
            .filter(|x| !x.is_empty())
            .collect();
        let env: String = env
            .iter()
            .filter(|e| !e.is_empty())
            .map(|e| format!("{e} "))
            .collect();
        println!("try: {env}{launcher} {}", flags.join(" "));
    }
}

/// The host-path sweep: output tok/s per state, path, latency and bandwidth at one stream and
/// at the load, eager and with CUDA graphs; what brackets the observations; what decides.
fn print_host_path_sweep(sw: &sim::advise::host_path::HostPathSweep) {
    let n = sw.concurrency;
    println!(
        "\nWhich host path would give these numbers (output tok/s; latency and bandwidth as `probe run --quick` prints them):"
    );
    let mut t = super::tables::table();
    let (ne, ng, gain) = (
        format!("{n} eager"),
        format!("{n} graphs"),
        format!("graph gain at {n}"),
    );
    t.set_header(vec![
        "state, all-reduce",
        "latency µs",
        "GB/s",
        "1 eager",
        "1 graphs",
        ne.as_str(),
        ng.as_str(),
        gain.as_str(),
    ]);
    let f = |v: Option<f64>| v.map_or("—".into(), |v| format!("{v:.1}"));
    for r in &sw.rows {
        let g = r.load_graphs.zip(r.load_eager).map(|(g, e)| g / e);
        t.add_row([
            r.path.label().to_string(),
            format!("{:.0}", r.latency_us),
            format!("{:.0}", r.gb_per_s),
            f(r.one_eager),
            f(r.one_graphs),
            f(r.load_eager),
            f(r.load_graphs),
            g.map_or("—".into(), |g| format!("{g:.2}×")),
        ]);
    }
    println!("{t}");
    for b in &sw.brackets {
        println!("{}", wrap("brackets: ", b));
    }
    for d in &sw.deciding {
        println!("{}", wrap("", d));
    }
}

fn print_replicas(r: &sim::advise::replicas::ReplicasAnswer, launcher: &str) {
    println!("\n{}", wrap("", &r.sentence));
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        "servers",
        "flags",
        "decode tok/s per box",
        "ms per output token",
        "lone prompt prefill ms",
        "weights GB per GPU",
        "KV tokens per server",
    ]);
    for s in std::iter::once(&r.one).chain(r.two.as_ref()) {
        t.add_row(vec![
            s.servers.to_string(),
            s.flags.clone(),
            format!("{:.0}", s.box_tok_s),
            format!("{:.1}", s.tpot_ms),
            format!("{:.0}", s.ttft_ms),
            format!("{:.1}", s.weight_bytes_per_gpu as f64 / 1e9),
            s.kv_tokens_per_server.to_string(),
        ]);
    }
    println!(
        "at {} concurrent, {} tokens of context ({} prompt tokens), the load split evenly:\n{t}",
        r.concurrency, r.context_tokens, r.input_tokens
    );
    super::scale::print_odds(r.odds.as_ref());
    for f in &r.flags_to_try {
        println!("try: {launcher} {f}");
    }
}

fn print_mtp(m: &sim::advise::mtp::MtpAnswer, launcher: &str) {
    println!("\n{}", wrap("", &m.sentence));
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        "concurrency",
        "with speculation tok/s",
        "without tok/s",
        "gain",
    ]);
    for p in &m.by_concurrency {
        t.add_row(vec![
            p.concurrency.to_string(),
            format!("{:.0}", p.with_tok_s),
            format!("{:.0}", p.without_tok_s),
            format!("{:.2}×", p.gain),
        ]);
    }
    println!(
        "decode throughput (prefill excluded) of {} at {} tokens of context:\n{t}",
        m.layout, m.context_tokens
    );
    println!("{}", wrap("acceptance assumed: ", &m.accept_from));
    if let Some(c) = &m.caveat {
        println!("{}", wrap("not priced: ", c));
    }
    let flip = match (m.flip_accept_length, m.flip_accept_rate) {
        (Some(l), Some(r)) => format!(
            "the answer at {} concurrent flips at an accept length of {l:.2} tokens a step ({:.0}% of drafted tokens accepted)",
            m.concurrency,
            r * 100.0
        ),
        _ => format!(
            "the answer at {} concurrent holds from 1 token a step to every drafted token accepted",
            m.concurrency
        ),
    };
    println!("{}", wrap("", &flip));
    let mut d = crate::cli::tables::table();
    d.set_header(vec![
        "draft length",
        "draft tokens",
        "accept length",
        "gain",
    ]);
    for p in &m.by_draft_length {
        d.add_row(vec![
            p.num_steps.to_string(),
            p.num_draft_tokens.to_string(),
            format!("{:.2}", p.accept_length),
            format!("{:.2}×", p.gain),
        ]);
    }
    println!(
        "by draft length at {} concurrent (a chain, top-1; acceptance carried over per drafted token), best first:\n{d}",
        m.concurrency
    );
    if let Some(k) = &m.known_error {
        let error = format!(
            "the model's own error: ±{:.0}% ({}); the gain's margin {} it",
            k.relative_error * 100.0,
            k.source,
            if (m.at.gain - 1.0).abs() > k.relative_error {
                "clears"
            } else {
                "is inside"
            }
        );
        println!("{}", wrap("", &error));
    }
    super::scale::print_odds(m.odds.as_ref());
    println!("try: {launcher} {}", m.flags_to_try);
    if let Some(o) = &m.spec_overlap {
        println!(
            "with the overlap scheduler ({:.2}× the answer's): {} {launcher} {}",
            o.over_answer,
            o.env,
            m.flags_with_speculation()
        );
    }
}

/// The model's own error, and whether EP's margin clears it.
fn model_error(ep: &EpAnswer) -> String {
    let at = ep
        .by_concurrency
        .iter()
        .find(|p| p.concurrency == ep.concurrency);
    let ratio = at.map_or(1.0, |p| p.ep_tok_s / p.other_tok_s.max(1e-12));
    match (&ep.known_error, ep.margin_within_known_error) {
        (Some(k), Some(within)) => format!(
            "the model's own error is ±{:.0}% ({}): the {ratio:.2}× margin at {} concurrent is {}",
            k.relative_error * 100.0,
            k.source,
            ep.concurrency,
            if within {
                "inside it, so the verdict is not sure"
            } else {
                "beyond it"
            }
        ),
        // no figure from one box stands in for this one: the odds line takes a new source's
        // spread from the error model, fitted on first-contact files
        _ => "the model's own error on this machine is not known (no --calibration): the odds below take a new source's spread from validation/error-model.json; `sim calibrate` on a few measured runs narrows it".into(),
    }
}

/// The ranking: the top feasible layouts and every EP layout, or every row with `all`; the
/// notes its `[n]` cells refer to, and the number of rows left out.
/// Which rows of the ranking the table shows besides the top ones.
struct Shown {
    /// Every row (`--all`).
    all: bool,
    /// The EP layouts (the EP question's, or no question's).
    ep: bool,
    /// The layouts the answer names.
    cited: Vec<String>,
}

fn ranking_table(
    rows: &[RankedLayout],
    shown: &Shown,
    vllm: bool,
) -> (Table, crate::cli::tables::Notes, usize) {
    let mut notes = crate::cli::tables::Notes::default();
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        "rank",
        "layout",
        if vllm { "vLLM flags" } else { "SGLang flags" },
        "output tok/s",
        "TTFT ms",
        "TPOT ms",
        "peak KV",
        "note",
    ]);
    crate::cli::tables::keep_whole(&mut t, &[0, 1]);
    crate::cli::tables::at_least(&mut t, 2, 28);
    let mut hidden = 0;
    for (i, r) in rows.iter().enumerate() {
        // the layout's name, not its flags, says EP in every engine (`EP8`, `TP8+EP4`)
        let is_ep = shown.ep && r.layout.contains("EP");
        let top = r.run.is_some() && i < TOP_LAYOUTS;
        if !(shown.all || is_ep || top || shown.cited.contains(&r.layout)) {
            hidden += 1;
            continue;
        }
        let cells = match &r.run {
            Some(x) => vec![
                format!("{}", i + 1),
                r.layout.clone(),
                r.flags.clone(),
                format!("{:.1}", x.output_throughput),
                format!("{:.0}", x.mean_ttft_ms),
                format!("{:.2}", x.mean_tpot_ms),
                format!("{:.0}%", x.peak_kv_usage * 100.0),
                String::new(),
            ],
            None => vec![
                "-".into(),
                r.layout.clone(),
                r.flags.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                notes.mark(r.rejected.as_deref().unwrap_or_default()),
            ],
        };
        t.add_row(cells);
    }
    (t, notes, hidden)
}

/// The words of `sentence` that may be layout names (`TP8`, `TP4xPP2`, `EP8+deepep`), stripped
/// of the punctuation around them.
fn cited(sentence: &str) -> Vec<String> {
    sentence
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| "(),;:.".contains(c)).to_string())
        .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_uppercase()))
        .collect()
}

/// Milliseconds of a part, or where it went when the step model filed it elsewhere: a GEMM
/// whose weight reads take longer than its FLOPs is counted under weight reads (overlapped).
fn compute_cell(s: &EpSide) -> String {
    let d = &s.decode_breakdown;
    if d.compute_s > 0.0 {
        format!("{:.2}", d.compute_s * 1e3)
    } else {
        "0 (overlapped: memory-bound, inside weight reads)".into()
    }
}

fn ep_table(ep: &EpAnswer) -> Table {
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        format!("at {} concurrent", ep.concurrency),
        ep.ep.layout.clone(),
        ep.other.layout.clone(),
    ]);
    let (a, b) = (&ep.ep, &ep.other);
    let comm = |s: &EpSide| s.decode_breakdown.comm_s() * 1e3;
    let rows: Vec<(&str, String, String)> = vec![
        (
            "output tok/s (simulated)",
            format!("{:.1}", a.output_throughput),
            format!("{:.1}", b.output_throughput),
        ),
        (
            "mean TPOT ms",
            format!("{:.2}", a.mean_tpot_ms),
            format!("{:.2}", b.mean_tpot_ms),
        ),
        (
            "decode step ms",
            format!("{:.2}", a.decode_breakdown.total_s() * 1e3),
            format!("{:.2}", b.decode_breakdown.total_s() * 1e3),
        ),
        (
            "  communication ms",
            format!("{:.2}", comm(a)),
            format!("{:.2}", comm(b)),
        ),
        (
            "  weight reads ms",
            format!("{:.2}", a.decode_breakdown.weight_read_s * 1e3),
            format!("{:.2}", b.decode_breakdown.weight_read_s * 1e3),
        ),
        ("  compute ms", compute_cell(a), compute_cell(b)),
        (
            "wire KB per token per GPU",
            format!("{:.0}", a.wire_bytes_per_token_per_gpu / 1e3),
            format!("{:.0}", b.wire_bytes_per_token_per_gpu / 1e3),
        ),
        (
            "expert reads GB/step, busiest GPU",
            format!("{:.3}", a.expert_read_bytes_per_gpu / 1e9),
            format!("{:.3}", b.expert_read_bytes_per_gpu / 1e9),
        ),
        (
            "imbalance (busiest/mean)",
            format!("{:.2}", a.imbalance),
            format!("{:.2}", b.imbalance),
        ),
        (
            "weights GB per GPU",
            format!("{:.2}", a.weight_bytes_per_gpu as f64 / 1e9),
            format!("{:.2}", b.weight_bytes_per_gpu as f64 / 1e9),
        ),
        (
            "KV tokens",
            a.kv_tokens.to_string(),
            b.kv_tokens.to_string(),
        ),
    ];
    for (k, x, y) in rows {
        t.add_row(vec![k.to_string(), x, y]);
    }
    t
}
