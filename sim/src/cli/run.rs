//! `sim run`: simulate one bench_serving run of a workload on one layout.

use super::args::{FormatArg, LayoutSelection, OutputFormat, ServerArgs, Target};
use super::workload_args::WorkloadArgs;
use anyhow::{Context, Result, bail};
use comfy_table::Table;
use models::{Layout, ModelSpec};
use sim::calibrate::Calibration;
use sim::cost::{CostModel, Knobs};
use sim::machine::Machine;
use sim::options::ServerOptions;
use sim::serving::{RunOutput, RunReport, simulate};
use std::path::PathBuf;

/// `--calibration FILE` written by `sim calibrate`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CalibrationArg {
    /// Apply the knobs fitted by `sim calibrate` (JSON).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
}

impl CalibrationArg {
    /// The knobs to use: the file's, or the defaults.
    pub fn knobs(&self) -> Result<Knobs> {
        match &self.calibration {
            Some(p) => Ok(Calibration::load(p)?.knobs),
            None => Ok(Knobs::default()),
        }
    }
}

/// Machine, model, server options and knobs resolved once per command.
pub struct Setup {
    pub machine: Machine,
    pub spec: ModelSpec,
    pub opts: ServerOptions,
    pub knobs: Knobs,
}

impl Setup {
    /// Resolves the shared flags.
    pub fn new(target: &Target, cal: &CalibrationArg) -> Result<Setup> {
        let Target {
            machine,
            model,
            server,
        } = target;
        Ok(Setup {
            machine: machine.resolve()?,
            spec: model.resolve()?,
            opts: server.options()?,
            knobs: cal.knobs()?,
        })
    }

    /// [`Setup::new`], with the server options a server's own log states where one was given
    /// (they win over the defaults).
    pub fn with_server_log(
        target: &Target,
        cal: &CalibrationArg,
        server: Option<&ServerOptions>,
    ) -> Result<Setup> {
        let mut s = Setup::new(target, cal)?;
        if let Some(opts) = server {
            s.opts = opts.clone();
        }
        Ok(s)
    }

    /// The cost model of `layout` with `knobs`.
    pub fn model(&self, layout: Layout, knobs: Knobs) -> sim::error::Result<CostModel> {
        CostModel::new(&self.machine, &self.spec, layout, &self.opts, knobs)
    }

    /// The one layout the flags select (`--layout all` is refused).
    pub fn one_layout(&self, server: &ServerArgs, command: &str) -> Result<Layout> {
        match server
            .layout
            .selection(self.machine.gpu_count, &self.spec)?
        {
            LayoutSelection::One(l) => Ok(l),
            LayoutSelection::All => {
                bail!(
                    "`sim {command}` simulates one layout; use `sim sweep --layout all` to compare them"
                )
            }
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub calibration: CalibrationArg,
    #[command(flatten)]
    pub format: FormatArg,
}

pub fn run(args: Args) -> Result<()> {
    let setup = Setup::new(&args.target, &args.calibration)?;
    let layout = setup.one_layout(&args.target.server, "run")?;
    let workload = args.workload.one(setup.spec.max_context_tokens)?;
    let model = setup.model(layout, setup.knobs)?;
    let run = simulate(&model, &setup.opts, &workload)
        .with_context(|| format!("simulating {}", layout.short_name()))?;
    let out = RunOutput {
        machine: setup.machine.name().to_string(),
        model: setup.spec.name.clone(),
        knobs: setup.knobs,
        run,
    };
    match args.format.format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&out)?),
        OutputFormat::Csv => bail!("`sim run` prints table or json; use `sim sweep --format csv`"),
        OutputFormat::Table => println!("{}", table(&out)),
    }
    Ok(())
}

/// The run as bench_serving's summary would show it, plus the engine's view.
fn table(o: &RunOutput) -> Table {
    let r: &RunReport = &o.run;
    let mut t = Table::new();
    t.set_header(vec![
        format!("{} on {}", o.model, o.machine),
        format!("{} ({})", r.layout, r.sglang_flags),
    ]);
    let conc = r
        .max_concurrency
        .map_or("unlimited".to_string(), |c| c.to_string());
    let rows: Vec<(&str, String)> = vec![
        ("Maximum request concurrency", conc),
        (
            "Input / output length",
            format!(
                "{} / {} (range ratio {})",
                r.random_input_len, r.random_output_len, r.random_range_ratio
            ),
        ),
        ("Successful requests", r.completed.to_string()),
        ("Benchmark duration (s)", format!("{:.2}", r.duration)),
        (
            "Request throughput (req/s)",
            format!("{:.2}", r.request_throughput),
        ),
        (
            "Input token throughput (tok/s)",
            format!("{:.2}", r.input_throughput),
        ),
        (
            "Output token throughput (tok/s)",
            format!("{:.2}", r.output_throughput),
        ),
        (
            "Total token throughput (tok/s)",
            format!("{:.2}", r.total_throughput),
        ),
        (
            "TTFT mean / median / p99 (ms)",
            format!(
                "{:.1} / {:.1} / {:.1}",
                r.mean_ttft_ms, r.median_ttft_ms, r.p99_ttft_ms
            ),
        ),
        (
            "TPOT mean / median / p99 (ms)",
            format!(
                "{:.2} / {:.2} / {:.2}",
                r.mean_tpot_ms, r.median_tpot_ms, r.p99_tpot_ms
            ),
        ),
        (
            "ITL mean / median / p99 (ms)",
            format!(
                "{:.2} / {:.2} / {:.2}",
                r.mean_itl_ms, r.median_itl_ms, r.p99_itl_ms
            ),
        ),
        ("Peak running requests", r.peak_running_requests.to_string()),
        (
            "Peak KV use",
            format!(
                "{} of {} tokens ({:.1}%)",
                r.peak_kv_tokens,
                r.kv_capacity_tokens,
                r.peak_kv_usage * 100.0
            ),
        ),
        (
            "Time: prefill / decode / idle (s)",
            format!(
                "{:.2} / {:.2} / {:.2} ({} prefill, {} decode batches; {} CPU-bound)",
                r.breakdown.prefill_s,
                r.breakdown.decode_s,
                r.breakdown.idle_s,
                r.breakdown.prefill_batches,
                r.breakdown.decode_batches,
                r.breakdown.cpu_bound_turns
            ),
        ),
        (
            "GPU time by part (s, summed over batches)",
            parts(&r.breakdown.cost_parts),
        ),
    ];
    for (k, v) in rows {
        t.add_row(vec![k.to_string(), v]);
    }
    if let Some(s) = r
        .micro_batch_samples
        .iter()
        .max_by_key(|s| s.sizes.iter().sum::<u32>())
        && s.sizes.len() > 1
    {
        t.add_row(vec![
            "Micro-batch sizes at peak".to_string(),
            format!("{:?} at {:.1} s", s.sizes, s.t_s),
        ]);
    }
    t
}

/// The non-zero parts of a breakdown, largest first.
pub fn parts(b: &sim::cost::TimeBreakdown) -> String {
    let mut v = vec![
        ("compute", b.compute_s),
        ("weights", b.weight_read_s),
        ("kv", b.kv_read_s),
        ("all-reduce", b.all_reduce_s),
        ("all-to-all", b.all_to_all_s),
        ("dp-attn", b.dp_attention_comm_s),
        ("pp-send", b.pp_send_s),
        ("overhead", b.overhead_s),
        ("bubble", b.bubble_s),
    ];
    v.retain(|(_, x)| *x > 0.0);
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v.iter()
        .map(|(k, x)| format!("{k} {x:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}
