//! A logged SGLang run's server options: its `server_args` dump over the command's options
//! ([`ServerArgsDump::options_over`](crate::engine::sglang::args::dump::ServerArgsDump::options_over)),
//! the decode lines' own `cuda graph:` field winning over a cut or contradicting dump; and the
//! notes on what the log's lines say against its dump.

use crate::engine::log::ServerRun;
use crate::engine::sglang::args::flags::DISABLE_CUDA_GRAPH;
use crate::options::ServerOptions;

/// The server options of `run`: `base` (the command's flags) with what its `ServerArgs` says
/// about memory and the step (until `from_pairs` maps every pair); the
/// decode lines' own `cuda graph:` field wins over a cut or contradicting dump ([`log_notes`]).
pub fn run_options(base: &ServerOptions, run: &ServerRun) -> ServerOptions {
    let mut o = dump_options(base, run);
    if let Some((eager, _)) = logged_graph_mode(&o, run) {
        o.disable_cuda_graph = eager;
    }
    o
}

/// Whether the decode lines say the run was eager, and the note when that overrides or fills in
/// the dump: any `cuda graph: True` means graphs were captured; `cuda graph: False` on a batch
/// no larger than the largest captured one means they were not. `None` when the lines say
/// nothing or agree with the dump.
fn logged_graph_mode(o: &ServerOptions, run: &ServerRun) -> Option<(bool, String)> {
    let dump = run.server_args.as_ref()?;
    let stated = dump.flag(&DISABLE_CUDA_GRAPH);
    let (eager, line) = run.logged_eager(o.cuda_graph_max_bs)?;
    let said = if eager { "False" } else { "True" };
    let why = match stated {
        Some(s) if s == eager => return None,
        Some(s) => format!(
            "the server_args line says disable_cuda_graph={}",
            if s { "True" } else { "False" }
        ),
        None if dump.truncated => {
            "the server_args line is cut before disable_cuda_graph".to_string()
        }
        None => "the server_args line does not state disable_cuda_graph".to_string(),
    };
    Some((
        eager,
        format!(
            "{why}; the decode lines say `cuda graph: {said}` (line {}, {} running): costed {}",
            line.line,
            line.running,
            if eager { "eager" } else { "with CUDA graphs" }
        ),
    ))
}

/// What the log's own lines say against its `server_args` dump, one note each: a cut dump, the
/// graph mode the decode lines contradict or fill in, decode lines out of time order or
/// repeated (a log pasted twice, or its blocks reordered).
pub fn log_notes(base: &ServerOptions, run: &ServerRun) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(d) = run.server_args.as_ref().filter(|d| d.truncated) {
        notes.push(format!(
            "the server_args line (line {}) is cut after {} settings: the rest take SGLang's defaults unless the decode lines say otherwise",
            run.first_line,
            d.pairs.len()
        ));
    }
    if let Some((_, note)) = logged_graph_mode(&dump_options(base, run), run) {
        notes.push(note);
    }
    notes.extend(order_notes(run));
    notes
}

/// Decode lines whose time runs backwards on one rank, or that repeat an earlier line exactly.
fn order_notes(run: &ServerRun) -> Vec<String> {
    let mut last: std::collections::BTreeMap<_, f64> = Default::default();
    let mut seen = std::collections::HashSet::new();
    let (mut backwards, mut repeated) = (Vec::new(), Vec::new());
    for s in &run.decode {
        if let Some(t) = s.time_s {
            if last.get(&s.rank).is_some_and(|prev| t < *prev) {
                backwards.push(s.line);
            }
            last.insert(s.rank, t);
        }
        let key = (
            s.time.clone(),
            s.rank,
            s.running,
            s.tokens_in_kv,
            s.gen_throughput_tok_s.to_bits(),
        );
        if !seen.insert(key) {
            repeated.push(s.line);
        }
    }
    let lines = |v: &[usize]| {
        let shown: Vec<String> = v.iter().take(5).map(usize::to_string).collect();
        format!(
            "{} (lines {}{})",
            v.len(),
            shown.join(", "),
            if v.len() > 5 { ", …" } else { "" }
        )
    };
    let mut notes = Vec::new();
    if !backwards.is_empty() {
        notes.push(format!(
            "decode lines out of time order: {}; a log's blocks reordered? the samples are fitted as they stand",
            lines(&backwards)
        ));
    }
    if !repeated.is_empty() {
        notes.push(format!(
            "decode lines repeating an earlier one exactly: {}; a log pasted twice? each repeat counts again in the fit",
            lines(&repeated)
        ));
    }
    notes
}

/// `base` with what the run's `ServerArgs` dump says (`ServerArgsDump::options_over`).
fn dump_options(base: &ServerOptions, run: &ServerRun) -> ServerOptions {
    match &run.server_args {
        Some(a) => a.options_over(base, run.kv_dtype()),
        None => base.clone(),
    }
}

/// The dump's pairs with `disable_cuda_graph` as the run's decode lines show it
/// ([`ServerRun::logged_eager`]): a cut dump loses it, a wrong one is
/// overruled; the report's notes say so. Batches up to SGLang's smallest default
/// `cuda_graph_max_bs` (8) count where the dump does not state it.
pub fn logged_pairs(
    dump: &crate::engine::log::ServerArgsDump,
    run: &ServerRun,
) -> Vec<(String, String)> {
    use crate::engine::sglang::args::flags::CUDA_GRAPH_MAX_BS;
    let max_bs = dump
        .int(&CUDA_GRAPH_MAX_BS)
        .map_or(8, |b| b.min(1 << 20) as u32);
    let mut pairs = dump.pairs.clone();
    if let Some((eager, _)) = run.logged_eager(max_bs)
        && dump.flag(&DISABLE_CUDA_GRAPH) != Some(eager)
    {
        pairs.retain(|(k, _)| k != DISABLE_CUDA_GRAPH.dest);
        let v = if eager { "True" } else { "False" };
        pairs.push((DISABLE_CUDA_GRAPH.dest.to_string(), v.to_string()));
    }
    pairs
}
