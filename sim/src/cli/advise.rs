//! `sim advise`: rank layouts for a workload; `--question ep` answers "should we try EP?".

use super::args::{FormatArg, OutputFormat, Target};
use super::run::{CalibrationArg, Setup};
use super::sweep::layouts;
use super::workload_args::WorkloadArgs;
use anyhow::{Result, bail};
use comfy_table::Table;
use models::Layout;
use sim::advise::{
    ADVICE_SCHEMA_VERSION, Advice, EpAnswer, EpQuestion, RankedLayout, ep_question, rank,
};
use sim::cost::IterationModel;
use sim::layout::enumerate_layouts;

/// Questions `sim advise` answers beyond the ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Question {
    /// Should we try expert parallelism (EP over all GPUs) instead of the best other layout?
    Ep,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// A question to answer with a verdict.
    #[arg(long, value_enum)]
    pub question: Option<Question>,
    /// Perturbed draws for the verdict's confidence.
    #[arg(long, default_value_t = 300)]
    pub draws: u32,
    #[command(flatten)]
    pub calibration: CalibrationArg,
    #[command(flatten)]
    pub format: FormatArg,
}

pub fn run(args: Args) -> Result<()> {
    let setup = Setup::new(&args.target, &args.calibration)?;
    let mut workload = args.workload.workloads(setup.spec.max_context_tokens)?;
    if workload.len() != 1 {
        bail!("`sim advise` takes one --max-concurrency value");
    }
    let mut workload = workload.remove(0);
    if workload.max_concurrency.is_none() && workload.request_rate.is_none() {
        eprintln!("note: no --max-concurrency given; advising for 64 concurrent requests");
        workload.max_concurrency = Some(64);
    }
    let ls = layouts(&setup, &args.target.server)?;
    let spinner = indicatif::ProgressBar::new_spinner().with_message("simulating every layout");
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let ranking = rank(&ls, &setup.opts, &workload);
    let ep = match args.question {
        None => None,
        Some(Question::Ep) => {
            spinner.set_message(format!("EP verdict over {} draws", args.draws));
            Some(answer_ep(&setup, &workload, args.draws)?)
        }
    };
    spinner.finish_and_clear();
    let advice = Advice {
        schema_version: ADVICE_SCHEMA_VERSION,
        machine: setup.machine.name().to_string(),
        model: setup.spec.name.clone(),
        workload,
        ranking,
        ep,
    };
    match args.format.format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&advice)?),
        OutputFormat::Csv => bail!("`sim advise` prints table or json"),
        OutputFormat::Table => print_advice(&advice),
    }
    Ok(())
}

fn answer_ep(setup: &Setup, workload: &sim::workload::Workload, draws: u32) -> Result<EpAnswer> {
    let gpus = setup.machine.gpu_count;
    if setup.spec.moe.is_none() {
        bail!(
            "--question ep needs a mixture-of-experts model; {} is dense",
            setup.spec.name
        );
    }
    let candidates = enumerate_layouts(gpus, &setup.spec);
    let ep_layout = Layout {
        tp: gpus,
        pp: 1,
        ep: gpus,
        dp_attention: false,
    };
    if let Some(why) = candidates
        .iter()
        .find(|c| c.layout == ep_layout)
        .and_then(|c| c.rejected.clone())
    {
        bail!("EP{gpus} is impossible for {}: {why}", setup.spec.name);
    }
    let others: Vec<Layout> = candidates
        .iter()
        .filter(|c| c.rejected.is_none() && c.layout.ep == 1)
        .map(|c| c.layout)
        .collect();
    let q = EpQuestion {
        spec: &setup.spec,
        opts: &setup.opts,
        workload,
        knobs: setup.knobs,
        ep_layout,
        others,
        comm_spread: sim::advise::comm_spread(&setup.machine.profile),
        draws,
        seed: workload.seed,
    };
    let build = |l: Layout, k| {
        setup
            .model(l, k)
            .map(|m| Box::new(m) as Box<dyn IterationModel>)
            .map_err(|e| e.to_string())
    };
    ep_question(&q, &build).map_err(|e| anyhow::anyhow!("--question ep: {e}"))
}

fn print_advice(a: &Advice) {
    let w = &a.workload;
    println!(
        "{} on {}: {} prompts, input {} / output {} tokens, {}",
        a.model,
        a.machine,
        w.num_prompts,
        w.random_input_len,
        w.random_output_len,
        w.max_concurrency
            .map_or("unlimited concurrency".into(), |c| format!(
                "{c} concurrent"
            ))
    );
    println!("{}", ranking_table(&a.ranking));
    if let Some(ep) = &a.ep {
        println!("\n{}", ep.sentence);
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
        println!(
            "steady decode tok/s, {} vs best other, by concurrency: {}",
            ep.ep.layout,
            by.join("; ")
        );
        println!(
            "verdict `{}` holds in {:.0}% of {} draws (compute and memory ±20%, communication ±{:.0}%)",
            serde_json::to_value(ep.verdict)
                .unwrap_or_default()
                .as_str()
                .unwrap_or(""),
            ep.confidence * 100.0,
            ep.draws,
            ep.comm_spread * 100.0
        );
        for f in &ep.flags_to_try {
            println!("try: python -m sglang.launch_server --model-path <model> {f}");
        }
    }
}

fn ranking_table(rows: &[RankedLayout]) -> Table {
    let mut t = Table::new();
    t.set_header(vec![
        "rank",
        "layout",
        "SGLang flags",
        "output tok/s",
        "TTFT ms",
        "TPOT ms",
        "peak KV",
        "note",
    ]);
    for (i, r) in rows.iter().enumerate() {
        let cells = match &r.run {
            Some(x) => vec![
                format!("{}", i + 1),
                r.layout.clone(),
                r.sglang_flags.clone(),
                format!("{:.1}", x.output_throughput),
                format!("{:.0}", x.mean_ttft_ms),
                format!("{:.2}", x.mean_tpot_ms),
                format!("{:.0}%", x.peak_kv_usage * 100.0),
                String::new(),
            ],
            None => vec![
                "-".into(),
                r.layout.clone(),
                r.sglang_flags.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                r.rejected.clone().unwrap_or_default(),
            ],
        };
        t.add_row(cells);
    }
    t
}

fn ep_table(ep: &EpAnswer) -> Table {
    let mut t = Table::new();
    t.set_header(vec![
        format!("at {} concurrent", ep.concurrency),
        ep.ep.layout.clone(),
        ep.other.layout.clone(),
    ]);
    let (a, b) = (&ep.ep, &ep.other);
    let comm = |s: &sim::advise::EpSide| {
        let d = &s.decode_breakdown;
        d.comm_s() * 1e3
    };
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
        (
            "  compute ms",
            format!("{:.2}", a.decode_breakdown.compute_s * 1e3),
            format!("{:.2}", b.decode_breakdown.compute_s * 1e3),
        ),
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
