//! SGLang's server flags on `sim`'s command line, spelled as SGLang spells them (long names,
//! aliases, value sets), plus `--server-args "python -m sglang.launch_server …"` /
//! `--server-args-file F` for a whole launch command. Both become one [`SglangArgs`] through
//! `sim::sglang_args`, which knows SGLang's names, values and defaults; a flag given both ways
//! with different values is refused naming both.

use super::args::LayoutArgs;
use anyhow::{Context, Result};
use clap::builder::PossibleValuesParser;
use sim::sglang_args::{
    self, KV_CACHE_DTYPES, MOE_A2A_BACKENDS, Origin, ResolvedOptions, SglangArgs,
};
use std::path::PathBuf;

/// SGLang server flags that change cost, memory or scheduling, the layout flags, the flags kept
/// without effect, and a whole launch line. Absent flags take SGLang's defaults for the GPU and
/// layout (e.g. `--mem-fraction-static`, `--cuda-graph-max-bs`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ServerArgs {
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// A whole SGLang launch command (`python -m sglang.launch_server --model-path … --tp 8 …`),
    /// read as SGLang reads it; flags shardwise does not model are listed, never refused.
    #[arg(long, value_name = "COMMAND", conflicts_with = "server_args_file")]
    pub server_args: Option<String>,
    /// A file holding the launch command (a shell script with `\` continuations is fine).
    #[arg(long, value_name = "FILE")]
    pub server_args_file: Option<PathBuf>,
    /// `--mem-fraction-static`: share of GPU memory for weights + KV pool (default: SGLang's for
    /// the GPU's memory and the layout).
    #[arg(long, visible_alias = "mem-frac", value_name = "FRACTION")]
    pub mem_fraction_static: Option<f64>,
    /// `--kv-cache-dtype`, SGLang's values (`auto` = the checkpoint's choice).
    #[arg(long, value_parser = PossibleValuesParser::new(KV_CACHE_DTYPES))]
    pub kv_cache_dtype: Option<String>,
    /// `--chunked-prefill-size`: most prefill tokens per iteration; -1 disables chunking
    /// (default: SGLang's for the GPU's memory).
    #[arg(long, value_name = "TOKENS", allow_hyphen_values = true)]
    pub chunked_prefill_size: Option<i64>,
    /// `--max-prefill-tokens` (SGLang's default 16384).
    #[arg(long, value_name = "TOKENS")]
    pub max_prefill_tokens: Option<u32>,
    /// `--max-running-requests` (default: what the KV pool holds).
    #[arg(long, value_name = "N")]
    pub max_running_requests: Option<u32>,
    /// `--max-total-tokens`: cap on the KV pool's tokens.
    #[arg(long, value_name = "TOKENS")]
    pub max_total_tokens: Option<u64>,
    /// `--context-length` (default: the model's).
    #[arg(long, value_name = "TOKENS")]
    pub context_length: Option<u32>,
    /// `--cuda-graph-max-bs` (default: SGLang's for the GPU's memory and `--tp`).
    #[arg(long, value_name = "N")]
    pub cuda_graph_max_bs: Option<u32>,
    /// `--disable-cuda-graph`.
    #[arg(long)]
    pub disable_cuda_graph: bool,
    /// `--disable-custom-all-reduce`.
    #[arg(long)]
    pub disable_custom_all_reduce: bool,
    /// `--enable-pcie-oneshot-allreduce`: the RTX PRO 6000 community builds' one-shot PCIe
    /// all-reduce for small messages (below 48 KB on 8 GPUs, 120 KB on 4; NCCL above).
    #[arg(long)]
    pub enable_pcie_oneshot_allreduce: bool,
    /// `--moe-a2a-backend` (`deepep`, `mooncake`, …; `none` = all-reduce after the MoE). In
    /// `advise` and `sweep` it applies to the layouts it can apply to (EP over the TP group).
    #[arg(long, value_name = "BACKEND", value_parser = PossibleValuesParser::new(MOE_A2A_BACKENDS))]
    pub moe_a2a_backend: Option<String>,
    /// `--deepep-mode` (`auto`, `normal`, `low_latency`): recorded, named in DeepEP notes.
    #[arg(long, value_parser = PossibleValuesParser::new(["auto", "normal", "low_latency"]))]
    pub deepep_mode: Option<String>,
    /// `--pp-max-micro-batch-size`.
    #[arg(long, value_name = "N")]
    pub pp_max_micro_batch_size: Option<u32>,
    /// `--pp-async-batch-depth`: micro-batches in flight beyond `--pp-size`.
    #[arg(long, value_name = "N")]
    pub pp_async_batch_depth: Option<u32>,
    /// `--stream-interval`: decode steps between streamed chunks (the gaps bench_serving's ITL
    /// sees are this many steps long).
    #[arg(long, value_name = "STEPS")]
    pub stream_interval: Option<u32>,
    /// Overlap communication with compute (shardwise's own option to explore; not SGLang's).
    #[arg(long)]
    pub overlap_comm: bool,
    /// `--disable-radix-cache`.
    #[arg(long)]
    pub disable_radix_cache: bool,
    /// `--enable-mixed-chunk`.
    #[arg(long)]
    pub enable_mixed_chunk: bool,
    /// `--schedule-policy` (`fcfs`, `lpm`, …).
    #[arg(long, value_name = "POLICY")]
    pub schedule_policy: Option<String>,
    /// `--disable-overlap-schedule`.
    #[arg(long)]
    pub disable_overlap_schedule: bool,
    /// `--page-size`: KV pool page, tokens.
    #[arg(long, value_name = "TOKENS")]
    pub page_size: Option<u32>,
    /// `--attention-backend`.
    #[arg(long, value_name = "BACKEND")]
    pub attention_backend: Option<String>,
    /// `--moe-runner-backend`.
    #[arg(long, value_name = "BACKEND")]
    pub moe_runner_backend: Option<String>,
    /// `--quantization`.
    #[arg(long, value_name = "METHOD")]
    pub quantization: Option<String>,
    /// `--speculative-algorithm` (`EAGLE`, `EAGLE3`, `NEXTN`, `STANDALONE`).
    #[arg(long, value_name = "ALGORITHM")]
    pub speculative_algorithm: Option<String>,
    /// `--speculative-num-steps`.
    #[arg(long, value_name = "N")]
    pub speculative_num_steps: Option<u32>,
    /// `--speculative-eagle-topk`.
    #[arg(long, value_name = "N")]
    pub speculative_eagle_topk: Option<u32>,
    /// `--speculative-num-draft-tokens`.
    #[arg(long, value_name = "N")]
    pub speculative_num_draft_tokens: Option<u32>,
    /// `--speculative-draft-model-path`.
    #[arg(long, visible_alias = "speculative-draft-model", value_name = "PATH")]
    pub speculative_draft_model_path: Option<String>,
    /// Tokens accepted per request and step (shardwise's own: SGLang logs it as
    /// `accept len`, bench_serving as `accept_length`).
    #[arg(long, value_name = "TOKENS")]
    pub speculative_accept_length: Option<f64>,
    /// `--trust-remote-code` (recorded).
    #[arg(long)]
    pub trust_remote_code: bool,
    /// `--host` (recorded; bench_serving's `--host` too).
    #[arg(long)]
    pub host: Option<String>,
    /// `--port` (recorded; bench_serving's `--port` too).
    #[arg(long)]
    pub port: Option<u16>,
    /// `--nnodes` (recorded).
    #[arg(long, value_name = "N")]
    pub nnodes: Option<u32>,
    /// `--node-rank` (recorded).
    #[arg(long, value_name = "R")]
    pub node_rank: Option<u32>,
    /// `--dist-init-addr` (recorded).
    #[arg(long, visible_alias = "nccl-init-addr", value_name = "HOST:PORT")]
    pub dist_init_addr: Option<String>,
}

impl ServerArgs {
    /// This command line's SGLang words (canonical spellings), for `sim::sglang_args`.
    fn words(&self) -> Vec<String> {
        let mut w: Vec<String> = Vec::new();
        let mut opt = |flag: &str, v: Option<String>| {
            if let Some(v) = v {
                w.push(flag.into());
                w.push(v);
            }
        };
        let s = |x: &Option<String>| x.clone();
        let n = |x: Option<u32>| x.map(|v| v.to_string());
        let l = &self.layout;
        opt("--tp", n(l.tp));
        opt("--pp-size", n(l.pp));
        opt("--ep-size", n(l.ep));
        opt("--dp", n(l.dp));
        opt(
            "--mem-fraction-static",
            self.mem_fraction_static.map(|f| f.to_string()),
        );
        opt("--kv-cache-dtype", s(&self.kv_cache_dtype));
        opt(
            "--chunked-prefill-size",
            self.chunked_prefill_size.map(|c| c.to_string()),
        );
        opt("--max-prefill-tokens", n(self.max_prefill_tokens));
        opt("--max-running-requests", n(self.max_running_requests));
        opt(
            "--max-total-tokens",
            self.max_total_tokens.map(|t| t.to_string()),
        );
        opt("--context-length", n(self.context_length));
        opt("--cuda-graph-max-bs", n(self.cuda_graph_max_bs));
        opt("--moe-a2a-backend", s(&self.moe_a2a_backend));
        opt("--deepep-mode", s(&self.deepep_mode));
        opt("--pp-max-micro-batch-size", n(self.pp_max_micro_batch_size));
        opt("--pp-async-batch-depth", n(self.pp_async_batch_depth));
        opt("--stream-interval", n(self.stream_interval));
        opt("--schedule-policy", s(&self.schedule_policy));
        opt("--page-size", n(self.page_size));
        opt("--attention-backend", s(&self.attention_backend));
        opt("--moe-runner-backend", s(&self.moe_runner_backend));
        opt("--quantization", s(&self.quantization));
        opt("--speculative-algorithm", s(&self.speculative_algorithm));
        opt("--speculative-num-steps", n(self.speculative_num_steps));
        opt("--speculative-eagle-topk", n(self.speculative_eagle_topk));
        opt(
            "--speculative-num-draft-tokens",
            n(self.speculative_num_draft_tokens),
        );
        opt(
            "--speculative-draft-model-path",
            s(&self.speculative_draft_model_path),
        );
        opt(
            "--speculative-accept-length",
            self.speculative_accept_length.map(|a| a.to_string()),
        );
        opt("--host", s(&self.host));
        opt("--port", self.port.map(|p| p.to_string()));
        opt("--nnodes", n(self.nnodes));
        opt("--node-rank", n(self.node_rank));
        opt("--dist-init-addr", s(&self.dist_init_addr));
        for (on, flag) in [
            (l.dp_attention, "--enable-dp-attention"),
            (self.disable_cuda_graph, "--disable-cuda-graph"),
            (
                self.disable_custom_all_reduce,
                "--disable-custom-all-reduce",
            ),
            (
                self.enable_pcie_oneshot_allreduce,
                "--enable-pcie-oneshot-allreduce",
            ),
            (self.overlap_comm, "--overlap-comm"),
            (self.disable_radix_cache, "--disable-radix-cache"),
            (self.enable_mixed_chunk, "--enable-mixed-chunk"),
            (self.disable_overlap_schedule, "--disable-overlap-schedule"),
            (self.trust_remote_code, "--trust-remote-code"),
        ] {
            if on {
                w.push(flag.into());
            }
        }
        w
    }

    /// The launch command of `--server-args` / `--server-args-file`, if any.
    fn launch_line(&self) -> Result<Option<String>> {
        if let Some(t) = &self.server_args {
            return Ok(Some(t.clone()));
        }
        let Some(p) = &self.server_args_file else {
            return Ok(None);
        };
        let text = models::input::read_text_limited(p, models::input::CONFIG_LIMIT_BYTES)
            .with_context(|| format!("--server-args-file {}", p.display()))?;
        Ok(Some(text))
    }

    /// Everything the flags and the launch line say, merged (a disagreement is an error).
    pub fn sglang(&self) -> Result<SglangArgs> {
        let cli = sglang_args::from_words(&self.words(), Origin::CommandLine)?;
        match self.launch_line()? {
            Some(line) => Ok(cli.merge(sglang_args::from_launch_line(&line)?)?),
            None => Ok(cli),
        }
    }

    /// The options of the layout these flags pick on `machine` (every GPU in TP when they pick
    /// none; commands that cost several layouts resolve each with [`options_for`]), and the
    /// lines to print once the command succeeded (flags not modelled, SGLang's defaults).
    pub fn options(
        &self,
        machine: &sim::machine::Machine,
        spec: &models::ModelSpec,
    ) -> Result<(sim::options::ServerOptions, Vec<String>)> {
        let sg = self.sglang()?;
        let (layout, all) = match self
            .layout
            .with_sizes(&sg.sizes())
            .selection(machine.gpu_count, spec)?
        {
            super::args::LayoutSelection::One(l) => (l, false),
            super::args::LayoutSelection::All => (models::Layout::tp(machine.gpu_count), true),
        };
        let r = options_for(&sg, machine.memory_bytes(), &layout, spec)?;
        let mut lines: Vec<String> = sg
            .not_modelled_line()
            .map(|l| format!("warning: {l}"))
            .into_iter()
            .collect();
        lines.extend(r.notes.iter().map(|n| {
            if all {
                format!(
                    "note: {n} (for {}; every other layout gets SGLang's defaults for its own --tp, --pp-size and DP attention)",
                    layout.short_name()
                )
            } else {
                format!("note: {n}")
            }
        }));
        Ok((r.options, lines))
    }

    /// Whether a launch line was given (SGLang's defaults then apply to absent layout flags).
    pub fn has_launch_line(&self) -> bool {
        self.server_args.is_some() || self.server_args_file.is_some()
    }
}

/// The server options for `layout` of `machine`'s GPUs serving `spec`, SGLang's defaults filled
/// in ([`sim::fit::layout_options`], the one place that resolves them).
pub fn options_for(
    args: &SglangArgs,
    gpu_memory_bytes: u64,
    layout: &models::Layout,
    spec: &models::ModelSpec,
) -> Result<ResolvedOptions> {
    Ok(sim::fit::layout_options(
        args,
        gpu_memory_bytes,
        layout,
        spec,
    )?)
}
