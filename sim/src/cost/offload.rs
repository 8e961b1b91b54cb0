//! CPU weight offload ([`WeightOffload`]) priced from the engines' source and the host link:
//! which bytes of each GPU's decoder layers live in host memory ([`OffloadPlan`], from the
//! footprint), what that takes off the GPU's memory (the plan's footprint, which the memory
//! plans then size the KV pool from), and what bringing them in costs every forward pass
//! ([`OffloadPlan::add_pass_time`]).
//!
//! Per pass and GPU (every rank of a stage reads its own share at once, over its own link):
//! - zero copy (vLLM's UVA default): the GEMMs read the offloaded weights across the link in
//!   place, at [`HostLink::zero_copy_bytes_per_s`], instead of from the GPU's memory; of the
//!   routed experts only those the pass's tokens touch, as from the GPU's memory
//!   ([`super::moe::Routing::max_touched_per_rank`]); a GEMM over many rows reads its weight once
//!   per [`ZERO_COPY_ROWS_PER_READ`] rows (measured), so a prefill chunk reads it many times;
//! - copy in line (SGLang's `--cpu-offload-gb`, vLLM without UVA): every offloaded byte of the
//!   layer, routed experts whole, at the copy engine's [`HostLink::dma_bytes_per_s`], before the
//!   layer runs: added to the pass;
//! - copy ahead (vLLM's prefetch backend, SGLang's group offload): the same bytes on a side
//!   stream beside the compute; the pass takes the longer of the two (the part the GPU's work
//!   does not hide is what is added), except SGLang inside a CUDA graph, whose captured copies
//!   run in line.
//!
//! The weights' HBM reads a zero-copy pass no longer makes come off its weight-read time in
//! proportion to the bytes; copies land in the GPU's memory and are read from there as before.

use std::collections::BTreeMap;

use models::ModelSpec;
use models::footprint::Footprint;
use models::profile::{HostDirection, HostMemory};
use models::spec::ModelPart;
use serde::Serialize;

use super::TimeBreakdown;
use crate::machine::Machine;
use crate::options::{OffloadLayers, OffloadTransfer, WeightOffload};

/// Share of the PCIe link's per-direction rate the copy engine reaches from pinned memory:
/// the lent H200's pinned host→device copies, 55.4 GB/s on its Gen5 x16 link of 63.0 GB/s
/// (`probe/profiles/h200-x1.json` `host_device`, 256 MiB, median of 15; a lent H100's 55.3 GB/s
/// on the same link class, `probe/profiles/h100-x1.host-weight-reads.json`).
pub const DMA_LINK_EFFICIENCY: f64 = 55.41 / 63.015;

/// Rate a GEMM reads pinned host memory in place against the copy engine's rate on the same
/// link, measured on a lent H100 (Gen5 x16, a KVM guest; `probe/bench/host_weight_reads.py`,
/// `probe/profiles/h100-x1.host-weight-reads.json`): bf16 GEMMs of 1, 8 and 64 rows over
/// weights of 32 MB – 1 GB held in mapped pinned memory read them at a median 48.84 GB/s, its
/// pinned host→device copies ran at 55.33 GB/s. Physical bounds (0, 1]: a kernel's loads
/// cross the same link as the copy engine's, with less in flight. Smaller reads reach less
/// (an 8 MB weight 43.5 GB/s, 0.79; eight 8 MB slices in eight GEMMs 36.9 GB/s): a layer's
/// offloaded bytes are read by one kernel each, most of them tens of MB, so the median stands.
pub const ZERO_COPY_OF_DMA: f64 = 48.84 / 55.33;

/// Rows of activations per pass a GEMM makes over a weight it reads in place from host memory:
/// a GEMM tiled over many rows reads the weight once per block of rows, none of it kept on the
/// GPU between blocks. Measured on a lent H100 (`probe/bench/host_weight_reads.py --prefill`,
/// `probe/profiles/h100-x1.host-weight-reads.prefill.json`): bf16 GEMMs of 256–8192 rows over
/// 32–512 MB weights in mapped pinned memory took 1.1–40 times a single read's time at the copy
/// rate, growing with the rows; over the rows ≥ 1024, rows ÷ reads has a median of 233.6
/// (167–272). Physical meaning: the row tile's footprint (two 128-row tiles); bounds 64–512.
pub const ZERO_COPY_ROWS_PER_READ: f64 = 233.6;

/// Times a GEMM of `rows` rows reads a weight held in host memory in place: once for up to
/// [`ZERO_COPY_ROWS_PER_READ`] rows, then once per that many more.
pub fn zero_copy_reads(rows: f64) -> f64 {
    (rows / ZERO_COPY_ROWS_PER_READ).max(1.0)
}

/// PCIe's usable rate per lane and direction after line encoding, bytes/s, by generation
/// (PCI-SIG: 8b/10b to Gen2, 128b/130b from Gen3).
fn pcie_lane_bytes_per_s(generation: u32) -> Option<f64> {
    Some(match generation {
        1 => 0.25e9,
        2 => 0.5e9,
        3 => 8e9 * 128.0 / 130.0 / 8.0,
        4 => 16e9 * 128.0 / 130.0 / 8.0,
        5 => 32e9 * 128.0 / 130.0 / 8.0,
        6 => 64e9 * 242.0 / 256.0 / 8.0,
        _ => return None,
    })
}

/// How fast one GPU brings weights in from host memory while every GPU of the machine does.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostLink {
    /// Pinned host→device copies, bytes/s per GPU.
    pub dma_bytes_per_s: f64,
    /// GEMMs reading pinned host memory in place, bytes/s per GPU.
    pub zero_copy_bytes_per_s: f64,
    /// Where the rate came from.
    pub source: String,
}

impl HostLink {
    /// The machine profile's pinned host→device measurement (all GPUs at once, shared out, else
    /// one GPU's), else the first GPU's PCIe link at [`DMA_LINK_EFFICIENCY`]; `None` where the
    /// profile states neither.
    pub fn of(machine: &Machine) -> Option<HostLink> {
        let p = &machine.profile;
        let n = machine.gpu_count.max(1);
        let pinned_h2d: Vec<_> = p
            .host_device
            .iter()
            .filter(|h| {
                h.memory == HostMemory::Pinned && h.direction == HostDirection::HostToDevice
            })
            .filter(|h| h.gb_per_s.median.is_finite() && h.gb_per_s.median > 0.0)
            .collect();
        let all = pinned_h2d
            .iter()
            .find(|h| h.devices.len() as u32 == n && n > 1);
        let (dma, source) = if let Some(h) = all {
            (
                h.gb_per_s.median * 1e9 / f64::from(n),
                format!(
                    "measured: pinned host→device copies on all {n} GPUs at once, {:.1} GB/s in all (profile)",
                    h.gb_per_s.median
                ),
            )
        } else if let Some(h) = pinned_h2d.first() {
            (
                h.gb_per_s.median * 1e9,
                format!(
                    "measured: pinned host→device copies on one GPU, {:.1} GB/s (profile); all GPUs at once taken to get as much each",
                    h.gb_per_s.median
                ),
            )
        } else {
            let d = p.devices.first()?;
            let (generation, width) = (d.pcie_gen_current?, d.pcie_width_current?);
            let link = pcie_lane_bytes_per_s(generation)? * f64::from(width);
            (
                link * DMA_LINK_EFFICIENCY,
                format!(
                    "assumed, not measured: PCIe Gen{generation} x{width} ({:.1} GB/s a direction) at the {:.0}% the lent H200's copy engine reaches on its link, every GPU at once getting as much (host memory's own bandwidth not checked; `probe run` measures host↔device copies)",
                    link / 1e9,
                    DMA_LINK_EFFICIENCY * 100.0
                ),
            )
        };
        Some(HostLink {
            dma_bytes_per_s: dma,
            zero_copy_bytes_per_s: dma * ZERO_COPY_OF_DMA,
            source,
        })
    }
}

/// What one GPU holds on the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuOffload {
    /// The GPU's pipeline stage.
    pub stage: u32,
    /// Offloaded bytes by part.
    pub by_part: BTreeMap<ModelPart, u64>,
    /// Offloaded bytes other than routed experts' (read or copied whole each pass).
    pub dense_bytes: f64,
    /// Offloaded routed-expert bytes.
    pub expert_bytes: f64,
    /// GPU buffers the copies land in (vLLM's static prefetch pool).
    pub buffer_bytes: u64,
    /// The stage's decoder-layer bytes that stay read from the GPU's memory, routed experts
    /// apart ([`Self::gpu_expert_bytes`]), before offload: what a zero-copy pass's saved HBM
    /// reads are a share of.
    pub gpu_dense_bytes: f64,
    /// The stage's routed-expert bytes before offload.
    pub gpu_expert_bytes: f64,
}

impl GpuOffload {
    /// Puts `bytes` of `part` on the host.
    fn take(&mut self, part: ModelPart, bytes: f64) {
        if bytes <= 0.0 {
            return;
        }
        *self.by_part.entry(part).or_insert(0) += bytes as u64;
        if part == ModelPart::RoutedExperts {
            self.expert_bytes += bytes;
        } else {
            self.dense_bytes += bytes;
        }
    }

    /// Every offloaded byte.
    pub fn total_bytes(&self) -> f64 {
        self.dense_bytes + self.expert_bytes
    }
}

/// What every GPU holds on the host, stage-major as the footprint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffloadPlan {
    pub offload: WeightOffload,
    pub link: HostLink,
    pub per_gpu: Vec<GpuOffload>,
}

/// One parameter group of a decoder layer in the order the engines' modules hold them
/// (attention with its DSA indexer, then the MLP: router, routed experts' `w13` and `w2`, shared
/// experts; a dense layer's MLP), its bytes on this GPU, and whether a budget may take part of
/// it (several parameters) or only all of it (one tensor).
struct Chunk {
    part: ModelPart,
    bytes: f64,
    divisible: bool,
}

/// The parameter groups of `layer` on GPU `g`: each part's bytes shared out over the stage's
/// layers that hold it.
fn layer_chunks(spec: &ModelSpec, g: &models::footprint::GpuFootprint, layer: u32) -> Vec<Chunk> {
    let is_moe = |l: u32| spec.moe_layers.get(l as usize).copied().unwrap_or(false);
    let count = |f: &dyn Fn(u32) -> bool| g.layers.clone().filter(|&l| f(l)).count().max(1) as f64;
    let part = |p: ModelPart| g.weight_bytes_by_part.get(&p).copied().unwrap_or(0) as f64;
    let all = count(&|_| true);
    let moe = count(&is_moe);
    let mut v = vec![Chunk {
        part: ModelPart::Attention,
        bytes: part(ModelPart::Attention) / all,
        divisible: true,
    }];
    if spec.layer_has_indexer(layer) {
        v.push(Chunk {
            part: ModelPart::Indexer,
            bytes: part(ModelPart::Indexer) / count(&|l| spec.layer_has_indexer(l)),
            divisible: true,
        });
    }
    if is_moe(layer) {
        let experts = part(ModelPart::RoutedExperts) / moe;
        v.push(Chunk {
            part: ModelPart::Routers,
            bytes: part(ModelPart::Routers) / moe,
            divisible: false,
        });
        v.push(Chunk {
            part: ModelPart::RoutedExperts,
            bytes: experts * 2.0 / 3.0,
            divisible: false,
        });
        v.push(Chunk {
            part: ModelPart::RoutedExperts,
            bytes: experts / 3.0,
            divisible: false,
        });
        v.push(Chunk {
            part: ModelPart::SharedExperts,
            bytes: part(ModelPart::SharedExperts) / moe,
            divisible: true,
        });
    } else {
        v.push(Chunk {
            part: ModelPart::DenseMlp,
            bytes: part(ModelPart::DenseMlp) / count(&|l| !is_moe(l)),
            divisible: true,
        });
    }
    v
}

/// The share of `chunk` (the `index`-th routed-expert chunk of its layer: 0 = `w13`, 1 = `w2`)
/// the offload's parameters take.
fn taken_share(o: &WeightOffload, chunk: &Chunk, expert_index: usize) -> f64 {
    if chunk.part != ModelPart::RoutedExperts {
        return if o.params.dense { 1.0 } else { 0.0 };
    }
    // expert_share is w13's ⅔ and/or w2's ⅓ of the experts' bytes
    let s = o.params.expert_share;
    let w13 = s >= 2.0 / 3.0 - 1e-9;
    let w2 = (s - if w13 { 2.0 / 3.0 } else { 0.0 }) > 1e-9;
    f64::from(u8::from(if expert_index == 0 { w13 } else { w2 }))
}

impl OffloadPlan {
    /// Which bytes of every GPU of `fp` `offload` holds on the host.
    pub fn new(spec: &ModelSpec, fp: &Footprint, offload: &WeightOffload, link: HostLink) -> Self {
        let per_gpu = per_gpu_plans(spec, fp, offload);
        OffloadPlan {
            offload: offload.clone(),
            link,
            per_gpu,
        }
    }

    /// `fp` with the offloaded bytes taken off each GPU and the copies' buffers put on.
    pub fn on_gpu(&self, fp: &Footprint) -> Footprint {
        held_on_gpu(fp, &self.per_gpu)
    }

    /// The GPU of stage `stage` holding the most on the host.
    pub fn stage(&self, stage: u32) -> Option<&GpuOffload> {
        self.per_gpu
            .iter()
            .filter(|o| o.stage == stage)
            .max_by(|a, b| a.total_bytes().total_cmp(&b.total_bytes()))
    }

    /// The prediction's notes: what is held on the host and how it comes in, then, where the
    /// link's rate is not measured, a line saying so (which flags the prediction's machine
    /// figure as assumed: [`crate::uncertainty::Flag::MachineFigureAssumed`]).
    pub fn notes(&self) -> Vec<String> {
        let mut v = vec![self.note()];
        if self.link.source.starts_with("assumed") {
            v.push(format!(
                "{} (CPU weight offload's host link)",
                self.link.source
            ));
        }
        v
    }

    /// One line: what is held on the host and how it comes in.
    fn note(&self) -> String {
        let most = self
            .per_gpu
            .iter()
            .max_by(|a, b| a.total_bytes().total_cmp(&b.total_bytes()))
            .cloned()
            .unwrap_or_default();
        let how = match self.offload.transfer {
            OffloadTransfer::ZeroCopy => format!(
                "read in place across the link every pass (UVA) at {:.1} GB/s a GPU, routed experts only where tokens go, a GEMM reading each weight once per {:.0} of its rows (prefill reads it many times)",
                self.link.zero_copy_bytes_per_s / 1e9,
                ZERO_COPY_ROWS_PER_READ
            ),
            OffloadTransfer::CopyInLine => format!(
                "copied whole to the GPU before each offloaded layer runs, every pass, at {:.1} GB/s a GPU, nothing overlapped",
                self.link.dma_bytes_per_s / 1e9
            ),
            OffloadTransfer::CopyAhead {
                in_line_under_graphs,
                ..
            } => format!(
                "copied whole every pass on a side stream at {:.1} GB/s a GPU, beside the other layers' work (the pass takes the longer){}",
                self.link.dma_bytes_per_s / 1e9,
                if in_line_under_graphs {
                    "; in line inside a CUDA graph (SGLang captures the copies on the graph's stream)"
                } else {
                    ""
                }
            ),
        };
        let which = match self.offload.layers {
            OffloadLayers::Budget { bytes_per_gpu } => format!(
                "a budget of {:.2} GiB a GPU filled from the first decoder layer",
                bytes_per_gpu as f64 / (1u64 << 30) as f64
            ),
            OffloadLayers::Groups {
                group_size,
                num_in_group,
                prefetch_step,
            } => format!(
                "the last {num_in_group} of every {group_size} decoder layers, {prefetch_step} ahead"
            ),
        };
        format!(
            "CPU weight offload: {which}: {:.2} GB a GPU on the host ({:.2} GB of it routed experts){}; {how}{}",
            most.total_bytes() / 1e9,
            most.expert_bytes / 1e9,
            if most.buffer_bytes > 0 {
                format!(
                    ", {:.2} GB of GPU buffers for the copies",
                    most.buffer_bytes as f64 / 1e9
                )
            } else {
                String::new()
            },
            if self.link.source.starts_with("assumed") {
                String::new()
            } else {
                format!("; host link {}", self.link.source)
            }
        )
    }
}

/// What every GPU of `fp` holds once `offload` has moved its share to the host (the memory
/// plans read it: [`OffloadPlan::on_gpu`], and a server log's check, which needs no link).
pub fn footprint_on_gpu(spec: &ModelSpec, fp: &Footprint, offload: &WeightOffload) -> Footprint {
    let per_gpu = per_gpu_plans(spec, fp, offload);
    held_on_gpu(fp, &per_gpu)
}

/// `fp` less each GPU's `per_gpu` bytes, its copies' buffers added.
fn held_on_gpu(fp: &Footprint, per_gpu: &[GpuOffload]) -> Footprint {
    let mut out = fp.clone();
    for (g, o) in out.per_gpu.iter_mut().zip(per_gpu) {
        for (part, bytes) in &o.by_part {
            if let Some(b) = g.weight_bytes_by_part.get_mut(part) {
                *b = b.saturating_sub(*bytes);
            }
        }
        *g.weight_bytes_by_part
            .entry(ModelPart::LoadOverhead)
            .or_insert(0) += o.buffer_bytes;
        g.total_weight_bytes = g.weight_bytes_by_part.values().sum();
    }
    out
}

/// What every GPU of `fp` holds on the host under `offload`, stage-major as the footprint.
fn per_gpu_plans(spec: &ModelSpec, fp: &Footprint, offload: &WeightOffload) -> Vec<GpuOffload> {
    fp.per_gpu
        .iter()
        .map(|g| gpu_plan(spec, g, offload))
        .collect()
}

/// What GPU `g` holds on the host under `o`.
fn gpu_plan(
    spec: &ModelSpec,
    g: &models::footprint::GpuFootprint,
    o: &WeightOffload,
) -> GpuOffload {
    let mut out = GpuOffload {
        stage: g.stage,
        ..GpuOffload::default()
    };
    let mut largest_layer: f64 = 0.0;
    for (i, layer) in g.layers.clone().enumerate() {
        let chunks = layer_chunks(spec, g, layer);
        let mut expert_index = 0;
        let mut layer_taken = 0.0;
        for c in &chunks {
            out_stage_bytes(&mut out, c);
            let share = taken_share(o, c, expert_index);
            if c.part == ModelPart::RoutedExperts {
                expert_index += 1;
            }
            if share <= 0.0 {
                continue;
            }
            let want = c.bytes * share;
            let bytes = match o.layers {
                OffloadLayers::Budget { bytes_per_gpu } => {
                    let left = bytes_per_gpu as f64 - out.total_bytes();
                    if left <= 0.0 {
                        0.0
                    } else if c.divisible {
                        want.min(left)
                    } else {
                        want
                    }
                }
                OffloadLayers::Groups {
                    group_size,
                    num_in_group,
                    ..
                } => {
                    let g = group_size.max(1) as usize;
                    let n = num_in_group.min(group_size) as usize;
                    if i % g >= g - n { want } else { 0.0 }
                }
            };
            out.take(c.part, bytes);
            layer_taken += bytes;
        }
        largest_layer = largest_layer.max(layer_taken);
    }
    if let OffloadTransfer::CopyAhead {
        static_buffer_layers,
        ..
    } = o.transfer
    {
        out.buffer_bytes = (largest_layer * f64::from(static_buffer_layers)) as u64;
    }
    out
}

/// Adds `c` to the stage's own decoder-layer bytes (what the GPU read before offload).
fn out_stage_bytes(out: &mut GpuOffload, c: &Chunk) {
    if c.part == ModelPart::RoutedExperts {
        out.gpu_expert_bytes += c.bytes;
    } else {
        out.gpu_dense_bytes += c.bytes;
    }
}

/// The rows a pass's GEMMs run, as the host weights' reads depend on them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PassRows {
    /// Tokens of the pass (a dense GEMM's rows).
    pub tokens: f64,
    /// The share of a MoE layer's routed experts the tokens reach (1 without experts).
    pub touched: f64,
    /// Tokens each touched expert takes (an expert GEMM's rows).
    pub expert_rows: f64,
}

impl OffloadPlan {
    /// Adds to `b` (stage `stage`'s pass, its GPU work so far) what bringing in the weights
    /// the stage holds on the host costs (see the module docs): `rows`, the pass's tokens (a
    /// dense GEMM's rows); `touched`, the share of a MoE layer's routed experts the pass's tokens
    /// reach on the busiest GPU, and `expert_rows`, the tokens each of them takes; `graph`, the
    /// pass replays a CUDA graph.
    pub fn add_pass_time(&self, stage: u32, rows: PassRows, graph: bool, b: &mut TimeBreakdown) {
        let Some(o) = self.stage(stage) else {
            return;
        };
        if o.total_bytes() <= 0.0 {
            return;
        }
        let link = &self.link;
        let host_s = match self.offload.transfer {
            OffloadTransfer::ZeroCopy => {
                let once = o.dense_bytes + o.expert_bytes * rows.touched;
                let from_gpu = o.gpu_dense_bytes + o.gpu_expert_bytes * rows.touched;
                if from_gpu > 0.0 {
                    b.weight_read_s -= b.weight_read_s * (once / from_gpu).min(1.0);
                }
                // a GEMM over many rows reads its host weight once per block of rows
                let read = o.dense_bytes * zero_copy_reads(rows.tokens)
                    + o.expert_bytes * rows.touched * zero_copy_reads(rows.expert_rows);
                read / link.zero_copy_bytes_per_s
            }
            OffloadTransfer::CopyInLine => o.total_bytes() / link.dma_bytes_per_s,
            OffloadTransfer::CopyAhead {
                in_line_under_graphs,
                ..
            } => {
                let copy = o.total_bytes() / link.dma_bytes_per_s;
                if in_line_under_graphs && graph {
                    copy
                } else {
                    (copy - b.total_s()).max(0.0)
                }
            }
        };
        b.host_weight_s += host_s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The zero-copy share is the carried measurement's: the median GEMM read rate over
    /// weights of 32 MB and more against the mean pinned copy rate.
    #[test]
    fn the_zero_copy_share_is_the_measured_one() {
        let text = include_str!("../../../probe/profiles/h100-x1.host-weight-reads.json");
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let dma: Vec<f64> = v["dma"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["gb_per_s"].as_f64().unwrap())
            .collect();
        let mut reads: Vec<f64> = v["zero_copy_gemm"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["bytes"].as_f64().unwrap() >= 32.0 * (1u64 << 20) as f64)
            .map(|r| r["host_gb_per_s"].as_f64().unwrap())
            .collect();
        reads.sort_by(f64::total_cmp);
        let median = (reads[reads.len() / 2 - 1] + reads[reads.len() / 2]) / 2.0;
        let mean_dma = dma.iter().sum::<f64>() / dma.len() as f64;
        assert!(
            (median / mean_dma - ZERO_COPY_OF_DMA).abs() < 1e-3,
            "{median} / {mean_dma}"
        );
        const { assert!(ZERO_COPY_OF_DMA > 0.0 && ZERO_COPY_OF_DMA <= 1.0) };
        // the copy on a side stream hid behind GPU work: what copy-ahead pricing assumes
        assert!(v["overlap"]["hidden_share_of_copy"].as_f64().unwrap() > 0.9);
    }

    /// The rows a host weight's pass covers are the carried prefill measurement's: the median
    /// of rows ÷ link reads over its GEMMs of 1024 rows and more.
    #[test]
    fn the_rows_per_host_read_are_the_measured_ones() {
        let text = include_str!("../../../probe/profiles/h100-x1.host-weight-reads.prefill.json");
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let mut per_read: Vec<f64> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["m"].as_f64().unwrap() >= 1024.0)
            .map(|r| r["m"].as_f64().unwrap() / r["link_bytes_per_weight_byte"].as_f64().unwrap())
            .collect();
        per_read.sort_by(f64::total_cmp);
        let median = per_read[per_read.len() / 2];
        assert!((median - ZERO_COPY_ROWS_PER_READ).abs() < 0.1, "{median}");
        const { assert!(ZERO_COPY_ROWS_PER_READ >= 64.0 && ZERO_COPY_ROWS_PER_READ <= 512.0) };
        assert_eq!(zero_copy_reads(1.0), 1.0);
        assert!((zero_copy_reads(8192.0) - 8192.0 / ZERO_COPY_ROWS_PER_READ).abs() < 1e-9);
    }

    /// PCIe generations' usable lane rates: Gen5 x16 is 63.0 GB/s a direction.
    #[test]
    fn pcie_lane_rates() {
        assert!((pcie_lane_bytes_per_s(5).unwrap() * 16.0 / 1e9 - 63.015).abs() < 0.01);
        assert!((pcie_lane_bytes_per_s(4).unwrap() * 16.0 / 1e9 - 31.508).abs() < 0.01);
        assert!(pcie_lane_bytes_per_s(7).is_none());
    }
}
