//! `sim predict`: the cost of one iteration (decode batch at a context, optional prefill chunk) on
//! one layout or on every layout (`--layout all`), with the time breakdown, bytes on the wire,
//! expert reads and the memory plan.

use super::args::{CsvFormatArg, LayoutSelection, TargetArgs};
use super::export::{Export, export};
use super::setup::server_machine;
use crate::cli::tables::wrap;
use anyhow::Result;
use comfy_table::{Cell, presets::UTF8_FULL_CONDENSED};
use sim::cost::Knobs;
use sim::cost::report::{
    BreakdownMs, LayoutPrediction, MemorySummary, PredictOutput, PredictQuery, SpecSummary,
    SteadySummary,
};
use sim::cost::traffic::Traffic;
use sim::engine::{Engine, Knob};
use sim::scenario::predict::{PredictInputs, Prediction, check_query, predict};
use sim::uncertainty::{FigureRange, with_range};

/// `sim predict` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Decode requests in the iteration (also the closed-loop concurrency of the steady estimate;
    /// at most 65,536).
    #[arg(long, value_name = "REQUESTS", value_parser = super::args::bounded_u32(
        0,
        super::args::MAX_BATCH,
        super::args::max_batch_why(),
    ))]
    pub batch: u32,
    /// Context tokens of each decode request.
    #[arg(long, value_name = "TOKENS")]
    pub context: u32,
    /// New prefill tokens in the same iteration (one chunk).
    #[arg(long, value_name = "TOKENS", default_value_t = 0)]
    pub prefill: u32,
    #[command(flatten)]
    pub format: CsvFormatArg,
}

/// Runs `sim predict`.
pub fn run(args: Args) -> Result<()> {
    let machine = args.target.machine.resolve()?;
    let launch = args.target.server.launch(None)?;
    let model = args.target.model.resolve_or(launch.model_path())?;
    let (opts, notes) = args.target.server.options(&machine, &model)?;
    let query = PredictQuery {
        batch: args.batch,
        context_tokens: args.context,
        prefill_tokens: args.prefill,
    };
    check_query(&query, &model, &opts)?;
    let selection = args
        .target
        .server
        .layout
        .with_sizes(&launch.sizes(model.moe.is_some())?)
        .selection(machine.gpu_count, &model)?;
    let launch_line = args.target.server.line_engine()? == Some(launch.engine());
    let (machine, layout) = match selection {
        LayoutSelection::One(l) => (
            server_machine(machine, &launch, l, 1, launch_line)?,
            Some(l),
        ),
        LayoutSelection::All => (machine, None),
    };
    let prediction = predict(&PredictInputs {
        machine: &machine,
        model: &model,
        launch: &launch,
        opts: &opts,
        notes: &notes,
        layout,
        query,
        knobs: Knobs::default(),
    })?;
    export(args.format.format, &prediction)?;
    for n in notes {
        // the option notes come with their own `note: ` prefix
        let w = match n.strip_prefix("note: ") {
            Some(text) => wrap("note: ", text),
            None => wrap("", &n),
        };
        eprintln!("{w}");
    }
    Ok(())
}

impl Export for Prediction {
    type Json = Prediction;
    const WHAT: &'static str = "`sim predict`";

    fn json(&self) -> &Prediction {
        self
    }

    fn print_table(&self) -> Result<()> {
        if self.out.layouts.len() == 1 {
            print!("{}", one_table(&self.out));
            if let Some(r) = self.ranges.first() {
                print!("{}", range_line(&r.ranges));
            }
        } else {
            print!("{}", ranking_table(&self.out));
        }
        Ok(())
    }

    fn csv(&self) -> Option<String> {
        Some(csv(&self.out))
    }
}

/// `80% interval: output tok/s 1,234 (1,050–1,380), ms per token …; width set by …`.
fn range_line(ranges: &[FigureRange]) -> String {
    let Some(first) = ranges.first() else {
        return String::new();
    };
    let figs: Vec<String> = ranges
        .iter()
        .map(|r| format!("{} {}", r.figure, with_range(r.value, r.range, 2)))
        .collect();
    let widened = if first.widened_by.is_empty() {
        String::new()
    } else {
        format!("; widened for {}", first.widened_by.join(", "))
    };
    let text = format!(
        "80% interval (validation/error-model.json): {}; width set by {}{widened}",
        figs.join(", "),
        first.set_by
    );
    line("", &text)
}

/// `text` after `prefix`, wrapped to the terminal as one line of the table output.
fn line(prefix: &str, text: &str) -> String {
    wrap(prefix, text) + "\n"
}

/// [`line`] for an indented detail (`  SGLang's sizing: …`): continuations sit deeper.
fn detail(text: &str) -> String {
    crate::cli::tables::wrap_hanging("  ", "    ", text) + "\n"
}

fn header(out: &PredictOutput) -> String {
    let q = &out.query;
    let text = format!(
        "{} on {} ({}× {}): batch {} at context {}{}",
        out.model,
        out.machine,
        out.gpu_count,
        out.gpu,
        q.batch,
        q.context_tokens,
        if q.prefill_tokens > 0 {
            format!(" + prefill {}", q.prefill_tokens)
        } else {
            String::new()
        }
    );
    line("", &text)
}

/// Bytes in GB, or MB / kB when smaller (1e9 / 1e6 / 1e3 bytes).
fn gb(bytes: f64) -> String {
    if bytes >= 1e9 {
        format!("{:.2} GB", bytes / 1e9)
    } else if bytes >= 1e6 {
        format!("{:.1} MB", bytes / 1e6)
    } else {
        format!("{:.1} kB", bytes / 1e3)
    }
}

/// Detailed view of one layout.
fn one_table(out: &PredictOutput) -> String {
    let p = &out.layouts[0];
    let mut s = header(out);
    s.push_str(&format!(
        "layout {} ({}), stages on GPUs {:?}{}\n",
        p.layout,
        p.flags,
        p.placement,
        if p.cuda_graph { ", CUDA graph" } else { "" }
    ));
    if p.idle_gpus > 0 {
        s.push_str(&format!(
            "one replica on {} of the machine's {} GPUs: {} GPUs sit idle\n",
            out.gpu_count - p.idle_gpus,
            out.gpu_count,
            p.idle_gpus
        ));
    }
    let (Some(b), Some(st), Some(tr), Some(m)) = (p.breakdown, p.steady, p.traffic, p.memory)
    else {
        return s;
    };
    s.push_str(&breakdown_table(&b));
    s.push_str(&steady_lines(p, &st));
    if let Some(sp) = &p.speculative {
        s.push_str(&speculative_line(sp, out.engine));
    }
    s.push_str(&traffic_line(&tr));
    s.push_str(&memory_lines(&m, out.query.context_tokens, out.engine));
    if !out.bf16_modules.is_empty() {
        s.push_str("kept BF16 by the checkpoint:\n");
        for l in &out.bf16_modules {
            s.push_str(&detail(l));
        }
    }
    for n in p.notes.iter().chain(&out.machine_notes) {
        s.push_str(&line("note: ", n));
    }
    s
}

/// The iteration's time by part, with each part's share.
fn breakdown_table(b: &BreakdownMs) -> String {
    let mut t = crate::cli::tables::table();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_header(vec!["iteration", "ms", "share"]);
    let total = b.total_ms.max(1e-12);
    for (name, v) in [
        ("compute", b.compute_ms),
        ("kernel latency floors", b.kernel_floor_ms),
        ("activations (norms, rotary, …)", b.activation_ms),
        ("weight reads", b.weight_read_ms),
        ("weights from host memory (CPU offload)", b.host_weight_ms),
        ("KV reads", b.kv_read_ms),
        ("all-reduce (TP)", b.all_reduce_ms),
        ("all-to-all (EP)", b.all_to_all_ms),
        ("DP-attention / DCP gather-scatter", b.dp_attention_comm_ms),
        ("PP send/recv", b.pp_send_ms),
        ("eager launch gaps + waiting for the CPU", b.overhead_ms),
        ("PP bubble (steady)", b.bubble_ms),
    ] {
        if v > 0.0 {
            t.add_row(vec![
                Cell::new(name),
                Cell::new(format!("{v:.3}")),
                Cell::new(format!("{:.0}%", 100.0 * v / total)),
            ]);
        }
    }
    t.add_row(vec![
        Cell::new("total"),
        Cell::new(format!("{:.3}", b.total_ms)),
        Cell::new(""),
    ]);
    format!("{t}\n")
}

/// The iteration's stages and the steady decode it sustains.
fn steady_lines(p: &LayoutPrediction, st: &SteadySummary) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "iteration {:.3} ms (stages {:?} ms, hop {:.3} ms, CPU {:.3} ms)\n",
        p.iteration_ms,
        p.stage_ms
            .iter()
            .map(|v| (v * 1000.0).round() / 1000.0)
            .collect::<Vec<_>>(),
        p.pp_hop_ms,
        p.cpu_ms
    ));
    s.push_str(&line("", &format!(
        "steady decode: {} of {} requests running{} in {} micro-batch(es): {:.1} output tok/s, {:.2} ms per token",
        st.running,
        st.concurrency,
        if st.limited_by_kv { " (KV-limited)" } else { "" },
        st.micro_batches,
        st.output_tok_per_s,
        st.cycle_ms
    )));
    s
}

/// A speculative step's parts and its acceptance length, with where the length came from.
fn speculative_line(sp: &SpecSummary, engine: Engine) -> String {
    let rules = engine.rules();
    let text = format!(
        "speculative {} ({}; draft: {}): a step is {:.2} ms (draft {:.2} + verify {:.2} + draft extend {:.2}) for {:.2} accepted tokens per request ({})",
        rules.speculation_name(&sp.plan.algorithm, sp.plan.method),
        rules.draft_shape_words(
            sp.plan.num_steps,
            sp.plan.eagle_topk,
            sp.plan.num_draft_tokens
        ),
        sp.plan.draft,
        sp.step_ms,
        sp.draft_ms,
        sp.verify_ms,
        sp.extend_ms,
        sp.plan.accept_length,
        match sp.plan.accept_source {
            sim::cost::spec::AcceptSource::Given => {
                super::own_flags::sim_flag(Knob::SpeculativeAcceptLength).to_string()
            }
            sim::cost::spec::AcceptSource::Measured => "measured".to_string(),
            sim::cost::spec::AcceptSource::Prior | sim::cost::spec::AcceptSource::Forced => {
                sp.plan.accept_from.clone()
            }
        }
    );
    line("", &text)
}

/// Bytes on the wire and expert reads per GPU per iteration.
fn traffic_line(tr: &Traffic) -> String {
    let mut s = String::new();
    s.push_str(&line("", &format!(
        "per GPU per iteration: {} on the wire (all-reduce {}, all-to-all {}, DP-attention / DCP {}, PP hop {}); expert reads {} ({:.1} of {:.0} experts touched per layer, imbalance ×{:.2})",
        gb(tr.total_wire_bytes),
        gb(tr.all_reduce_wire_bytes),
        gb(tr.all_to_all_wire_bytes),
        gb(tr.dp_attention_wire_bytes),
        gb(tr.pp_send_bytes_per_hop),
        gb(tr.expert_read_bytes),
        tr.experts_touched_per_layer,
        tr.experts_held_per_layer,
        tr.expert_imbalance
    )));
    s
}

/// The memory plan per GPU as `engine` sizes it, and what it admits at `context_tokens`.
fn memory_lines(m: &MemorySummary, context_tokens: u32, engine: Engine) -> String {
    let mut s = String::new();
    s.push_str(&line("", &format!(
        "memory per GPU: weights {:.2} GB + reserve {:.2} GB, KV pool {:.2} GB of {:.1} GB → {} KV tokens, {} requests at context {}",
        m.weights_gb_per_gpu,
        m.reserve_gb_per_gpu,
        m.kv_pool_gb_per_gpu,
        m.gpu_memory_gb,
        m.kv_tokens,
        m.max_requests_at_context,
        context_tokens
    )));
    if m.state_slots > 0 {
        s.push_str(&detail(&format!(
            "Gated-DeltaNet state pool {:.2} GB per GPU: {} request slots (SGLang's max_mamba_cache_size), max running requests {}",
            m.state_pool_gb_per_gpu, m.state_slots, m.max_running_requests
        )));
    }
    s.push_str(&detail(&sizing_text(m, engine)));
    let r = &m.reserves;
    if r.draft_weight_bytes + r.draft_kv_bytes > 0 {
        s.push_str(&format!(
            "  MTP draft (from the same remainder): weights {}, KV {}\n",
            gb(r.draft_weight_bytes as f64),
            gb(r.draft_kv_bytes as f64)
        ));
    }
    s
}

/// How `engine` sized the plan, in its own terms: SGLang's `--mem-fraction-static` is a share
/// of the memory free before the weights load and holds weights and KV pool, its reserves
/// (`req_to_token`, graphs, activations) outside it; vLLM's `--gpu-memory-utilization` is a
/// share of the whole card that holds weights, the profiling run's peak and the KV cache, with
/// the CUDA context and NCCL outside it (`sim::cost::memory::vllm`).
fn sizing_text(m: &MemorySummary, engine: Engine) -> String {
    let r = &m.reserves;
    let share = sim::cost::memory::shown_fraction(m.mem_fraction_static);
    match engine {
        Engine::Sglang => format!(
            "SGLang's sizing: {} {share} of the {:.2} GB free before loading = static budget {:.2} GB; reserves: CUDA context/NCCL {}, req_to_token {} ({} requests × {} tokens), attention workspace {}, CUDA graphs {}, activations {}; {:.2} GB left",
            Engine::Sglang.flag(Knob::MemoryShare),
            m.available_before_load_gb,
            m.static_budget_gb,
            gb(r.pre_load_bytes as f64),
            gb(r.req_to_token_bytes as f64),
            m.max_running_requests,
            m.context_len,
            gb(r.attention_workspace_bytes as f64),
            gb(r.cuda_graph_bytes as f64),
            gb(r.activation_bytes as f64),
            m.free_after_reserves_gb
        ),
        Engine::Vllm => format!(
            "vLLM's sizing: {} {share} of the card's {:.2} GB = {:.2} GB requested for weights, the profiling run's peak {} (one forward of {} tokens, the sampler over up to {} sequences), non-torch allocations {} and the KV cache; outside it: CUDA context/NCCL {}, CUDA graphs {}; {:.2} GB left",
            Engine::Vllm.flag(Knob::MemoryShare),
            m.available_before_load_gb,
            m.static_budget_gb,
            gb(r.activation_bytes as f64),
            Engine::Vllm.flag(Knob::PrefillChunk),
            m.max_running_requests,
            gb(r.attention_workspace_bytes as f64),
            gb(r.pre_load_bytes as f64),
            gb(r.cuda_graph_bytes as f64),
            m.free_after_reserves_gb
        ),
    }
}

/// Every layout, best first, rejected ones with their reason.
fn ranking_table(out: &PredictOutput) -> String {
    let mut s = header(out);
    let mut notes = crate::cli::tables::Notes::default();
    let mut t = crate::cli::tables::table();
    let flags_header = format!("{} flags", out.engine.rules().display_name());
    t.load_style(UTF8_FULL_CONDENSED).set_header(vec![
        "layout",
        flags_header.as_str(),
        "iteration ms",
        "tok/s (steady)",
        "comm %",
        "wire/GPU",
        "weights/GPU",
        "KV tokens",
        "status",
    ]);
    crate::cli::tables::keep_whole(&mut t, &[0]);
    crate::cli::tables::at_least(&mut t, 1, 28);
    for p in &out.layouts {
        match (&p.rejected, p.breakdown, p.steady, p.traffic, p.memory) {
            (None, Some(b), Some(st), Some(tr), Some(m)) => {
                let comm =
                    b.all_reduce_ms + b.all_to_all_ms + b.dp_attention_comm_ms + b.pp_send_ms;
                t.add_row(vec![
                    p.layout.clone(),
                    p.flags.clone(),
                    format!("{:.2}", p.iteration_ms),
                    format!("{:.1}", st.output_tok_per_s),
                    format!("{:.0}", 100.0 * comm / b.total_ms.max(1e-12)),
                    gb(tr.total_wire_bytes),
                    format!("{:.1} GB", m.weights_gb_per_gpu),
                    m.kv_tokens.to_string(),
                    if st.limited_by_kv {
                        format!("ok (KV holds {})", st.running)
                    } else {
                        "ok".into()
                    },
                ]);
            }
            _ => {
                t.add_row(vec![
                    p.layout.clone(),
                    p.flags.clone(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    notes.mark(p.rejected.as_deref().unwrap_or_default()),
                ]);
            }
        }
    }
    s.push_str(&format!("{t}\n"));
    s.push_str(&notes.render());
    s
}

/// One CSV row per layout.
fn csv(out: &PredictOutput) -> String {
    let mut s = String::from(
        "layout,flags,iteration_ms,output_tok_per_s,compute_ms,kernel_floor_ms,activation_ms,weight_read_ms,host_weight_ms,kv_read_ms,all_reduce_ms,all_to_all_ms,dp_attention_comm_ms,pp_send_ms,overhead_ms,bubble_ms,wire_bytes_per_gpu,expert_read_bytes_per_gpu,expert_imbalance,weights_gb_per_gpu,kv_tokens,rejected\n",
    );
    for p in &out.layouts {
        s.push_str(&csv_row(p));
    }
    s
}

fn csv_row(p: &LayoutPrediction) -> String {
    let q = |v: &str| format!("\"{}\"", v.replace('"', "\"\""));
    match (p.breakdown, p.steady, p.traffic, p.memory) {
        (Some(b), Some(st), Some(tr), Some(m)) => format!(
            "{},{},{:.4},{:.2},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.0},{:.0},{:.3},{:.3},{},\n",
            p.layout,
            q(&p.flags),
            p.iteration_ms,
            st.output_tok_per_s,
            b.compute_ms,
            b.kernel_floor_ms,
            b.activation_ms,
            b.weight_read_ms,
            b.host_weight_ms,
            b.kv_read_ms,
            b.all_reduce_ms,
            b.all_to_all_ms,
            b.dp_attention_comm_ms,
            b.pp_send_ms,
            b.overhead_ms,
            b.bubble_ms,
            tr.total_wire_bytes,
            tr.expert_read_bytes,
            tr.expert_imbalance,
            m.weights_gb_per_gpu,
            m.kv_tokens
        ),
        _ => format!(
            "{},{},,,,,,,,,,,,,,,,,,,,{}\n",
            p.layout,
            q(&p.flags),
            q(p.rejected.as_deref().unwrap_or(""))
        ),
    }
}
