//! Terminal tables (comfy-table) for `sim models list|show`.

use super::output::{ModelList, ModelShow};
use comfy_table::{Cell, CellAlignment, Table};
use models::format::KvDtype;
use models::spec::ModelPart;

fn billions(n: u64) -> String {
    format!("{:.2}B", n as f64 / 1e9)
}

fn gb(bytes: u64) -> String {
    format!("{:.2} GB", bytes as f64 / 1e9)
}

fn kv_name(d: KvDtype) -> &'static str {
    match d {
        KvDtype::Bf16 => "bf16",
        KvDtype::Fp8 => "fp8",
    }
}

fn new_table(header: &[&str]) -> Table {
    let mut t = crate::cli::tables::table();
    t.set_header(header.iter().map(Cell::new));
    crate::cli::tables::keep_whole(&mut t, &[0]);
    t
}

fn right(s: impl ToString) -> Cell {
    Cell::new(s.to_string()).set_alignment(CellAlignment::Right)
}

fn part_name(p: ModelPart) -> &'static str {
    match p {
        ModelPart::Embeddings => "embeddings",
        ModelPart::Attention => "attention",
        ModelPart::Indexer => "DSA indexer",
        ModelPart::DenseMlp => "dense MLP",
        ModelPart::SharedExperts => "shared experts",
        ModelPart::RoutedExperts => "routed experts",
        ModelPart::Routers => "routers",
        ModelPart::LmHead => "lm_head + norm",
        ModelPart::Mtp => "MTP",
        ModelPart::VisionTower => "vision tower",
        ModelPart::LoadOverhead => "load copies + holes",
    }
}

/// The preset list.
pub fn list(l: &ModelList) -> String {
    let mut t = new_table(&[
        "preset",
        "family (model_type)",
        "total",
        "active",
        "weights (no MTP)",
        "experts / attn",
        "KV/token",
        "max ctx",
    ]);
    crate::cli::tables::at_least(&mut t, 1, 30);
    for m in &l.models {
        t.add_row(vec![
            Cell::new(&m.name),
            Cell::new(format!("{} ({})", m.family, m.model_type)),
            right(billions(m.total_params)),
            right(billions(m.active_params_per_token)),
            right(gb(m.weight_bytes_without_mtp)),
            Cell::new(&m.formats),
            right(format!(
                "{} B ({})",
                m.kv_bytes_per_token,
                kv_name(m.default_kv_dtype)
            )),
            right(m.max_context_tokens),
        ]);
    }
    t.to_string()
}

/// One model in detail.
pub fn show(s: &ModelShow) -> String {
    let mut out = parts_section(s);
    out += &kv_section(&s.kv);
    out += &footprint_section(s);
    out += &hybrid_lines(s);
    out
}

/// The model's header line, its parts by format and the modules kept BF16.
fn parts_section(s: &ModelShow) -> String {
    let m = &s.summary;
    let mut out = format!(
        "{} ({}) — {} total ({} without MTP), {} active per token\nsource: {}\n\n",
        m.name,
        m.model_type,
        billions(m.total_params),
        billions(m.total_params_without_mtp),
        billions(m.active_params_per_token),
        m.source
    );
    let mut parts = new_table(&["part", "params", "format", "bytes"]);
    for p in &s.parts {
        parts.add_row(vec![
            Cell::new(part_name(p.part)),
            right(billions(p.params)),
            Cell::new(&p.format),
            right(gb(p.bytes)),
        ]);
    }
    out += &format!("{parts}\n\n");
    if !s.bf16_modules.is_empty() {
        out += "kept BF16 by the checkpoint's exclusion list:\n";
        for l in &s.bf16_modules {
            out += &format!("  {l}\n");
        }
        out += "\n";
    }
    out
}

/// KV bytes per token, and the sliding / linear layers' caches.
fn kv_section(k: &super::output::KvSummary) -> String {
    let mut out = String::new();
    let layers = k.full_attention_layers.map_or_else(
        || "all layers".to_string(),
        |n| format!("{n} full-attention layers"),
    );
    out += &format!(
        "KV per token ({layers}): bf16 {} B, fp8 {} B; DSA index-key cache {} B; checkpoint default {}{}\n\n",
        k.bf16_bytes_per_token,
        k.fp8_bytes_per_token,
        k.indexer_cache_bytes_per_token,
        kv_name(k.default_kv_dtype),
        k.attended_tokens_cap
            .map(|c| format!("; attention capped at {c} tokens (DSA top-k)"))
            .unwrap_or_default()
    );
    if let Some((n, window)) = k.sliding_layers {
        out += &format!(
            "{n} sliding-window layers hold at most {window} tokens a request (same bytes per token)\n"
        );
    }
    if let Some((n, bytes)) = k.linear_layers {
        out += &format!(
            "{n} Gated-DeltaNet layers hold a fixed state: {:.1} MB a request (conv bf16 + recurrent state), whatever its length\n",
            bytes as f64 / 1e6
        );
    }
    if k.sliding_layers.is_some() || k.linear_layers.is_some() {
        out += "\n";
    }
    out
}

/// The footprint table: weights per GPU by group, KV per token and tokens, and the fit, per layout.
fn footprint_section(s: &ModelShow) -> String {
    let mut out = String::new();
    let mc = &s.machine;
    out += &format!(
        "Footprint on {} × {} ({:.1} GB each), {} {}, KV {}{}:\n",
        mc.gpus,
        mc.gpu,
        mc.memory_bytes_per_gpu as f64 / 1e9,
        crate::cli::own_flags::sim_flag(sim::engine::Knob::MemoryShare),
        mc.mem_fraction_static.map_or_else(
            || "SGLang's default per layout".to_string(),
            |f| f.to_string()
        ),
        kv_name(mc.kv_dtype),
        if mc.speculative_mtp {
            ", MTP draft loaded"
        } else {
            ""
        }
    );
    let mut t = new_table(&[
        "layout",
        "flags",
        "attention+indexer",
        "experts",
        "other",
        "weights/GPU",
        "KV B/token/GPU",
        "KV tokens",
        "fits",
    ]);
    for l in &s.layouts {
        let mut row = vec![Cell::new(&l.layout), Cell::new(&l.flags)];
        if let Some(reason) = &l.impossible_reason {
            row.extend((0..6).map(|_| Cell::new("")));
            row.push(Cell::new(format!("impossible: {reason}")));
            t.add_row(row);
            continue;
        }
        // The fullest stage's GPU, split into the groups that decide the fit.
        let fullest = l.stages.iter().max_by_key(|st| st.total_weight_bytes);
        let sum = |parts: &[ModelPart]| -> u64 {
            fullest.map_or(0, |st| {
                parts
                    .iter()
                    .filter_map(|p| st.weight_bytes_by_part.get(p))
                    .sum()
            })
        };
        let attn = sum(&[ModelPart::Attention, ModelPart::Indexer]);
        let experts = sum(&[
            ModelPart::RoutedExperts,
            ModelPart::SharedExperts,
            ModelPart::Routers,
        ]);
        let total = fullest.map_or(0, |st| st.total_weight_bytes);
        row.extend([
            right(gb(attn)),
            right(gb(experts)),
            right(gb(total - attn - experts)),
            right(gb(l.max_weight_bytes_per_gpu)),
            right(l.kv_bytes_per_token_per_gpu + l.indexer_cache_bytes_per_token_per_gpu),
            right(l.kv_capacity_tokens),
            Cell::new(match (l.fits, l.fits_max_context) {
                (true, true) => format!(
                    "yes ({})",
                    sim::cost::memory::shown_fraction(l.mem_fraction_static)
                ),
                (true, false) => format!(
                    "yes ({}; KV < one max-context request)",
                    sim::cost::memory::shown_fraction(l.mem_fraction_static)
                ),
                (false, _) => format!(
                    "no: weights exceed the static budget at {} {}",
                    crate::cli::own_flags::sim_flag(sim::engine::Knob::MemoryShare),
                    sim::cost::memory::shown_fraction(l.mem_fraction_static)
                ),
            }),
        ]);
        t.add_row(row);
    }
    out += &t.to_string();
    out
}

/// Per layout: what one request holds per GPU beside the full layers' KV, and the pools SGLang
/// sizes for it.
fn hybrid_lines(s: &ModelShow) -> String {
    let mut out = String::new();
    for l in &s.layouts {
        let Some(h) = &l.hybrid else { continue };
        let mut parts = Vec::new();
        if h.sliding_kv_bytes_per_token_per_gpu > 0 {
            parts.push(format!(
                "sliding KV {} B/token/GPU, pool {} tokens",
                h.sliding_kv_bytes_per_token_per_gpu, h.swa_kv_tokens
            ));
        }
        if h.state_bytes_per_request_per_gpu > 0 {
            parts.push(format!(
                "state {:.2} MB/request/GPU × {} slots = {} state pool",
                h.state_bytes_per_request_per_gpu as f64 / 1e6,
                h.state_slots,
                gb(h.state_pool_bytes_per_gpu)
            ));
        }
        out += &format!(
            "\n{}: {}; a {}-token request holds {}/GPU; max running requests {}",
            l.layout,
            parts.join("; "),
            h.context_len,
            gb(h.cache_bytes_per_max_context_request_per_gpu),
            h.max_running_requests
        );
    }
    out
}
