//! SGLang's DSA (NSA) decode attention on HGX boxes as measured: one decoder layer's whole
//! attention module, by requests and cached tokens, for GLM-5's attention shape
//! (`data/observations/dsa-decode-module-sglang-0.5.14.csv`, distilled by
//! `scripts/distill-dsa-decode-module.py` from NVIDIA aiconfigurator's database: SGLang 0.5.14's
//! own `self_attn.forward` — q_a/kv_a, norms, q_b, the absorbed bmm, the indexer's projections,
//! `fp8_paged_mqa_logits` and its top-k on their second stream, the sparse MLA decode kernel, the
//! v bmm and o_proj — replayed in a CUDA graph on a B200, H200 or H100, one query token a row).
//!
//! Two parts, as the cost model splits a layer: the module without its indexer (the tables'
//! `skip_indexer` rows: what a layer that reuses the previous layer's top-k runs, and the
//! attention block of every layer) and the indexer, read as the full module less that one at the
//! same point (what the indexer adds, after its stream overlaps what it can). Between measured
//! batches the time is interpolated in log2 of the batch; along a batch's own row, linear in
//! cached tokens and, past its longest measured context (the collector ran out of memory
//! there), at the last segment's cost per key: at a fixed batch the indexer's logits grow with
//! the keys it scores, while a smaller batch's row scaled up would carry that batch's poorer
//! parallelism (the indexer above its no-context time costs 1.5 µs a request at 16 requests and
//! 8K tokens, 0.5 at 64 and 4K). Past the largest measured batch (above the graph capture) the
//! time above the one-request row grows with the batch. The sparse kernel reads at most the
//! index's top-k keys a row, so the module without its indexer is read at `min(cached, top-k)`.
//!
//! What the model this replaces priced (kernel floors, GEMMs at the efficiency curves, the
//! indexer's logits at the fp8 decode curve) missed both ends on a B200 at GLM-5's TP8 shape:
//! 92 µs a layer where the module measures 74–81 µs at 1–4 requests and 8K cached tokens, and
//! 101 µs where it measures 117 µs at 64 requests and 4K, nearly all the growth in the indexer
//! (its logits and top-k do not run at bandwidth at these sizes).

use super::decode_table::{Basis, Price, along_context, worst};
use std::collections::BTreeMap;
use std::sync::OnceLock;

const TABLE: &str = include_str!("../../../data/observations/dsa-decode-module-sglang-0.5.14.csv");

/// GLM-5's DSA attention shape, the one the tables measured (GLM-5.2 has the same): query heads,
/// q and kv LoRA ranks, qk nope + rope and v head dims, the indexer's heads × dim and top-k.
pub const GLM5_SHAPE: DsaShape = DsaShape {
    heads: 64,
    q_lora_rank: 2048,
    kv_lora_rank: 512,
    qk_nope: 192,
    qk_rope: 64,
    v_head_dim: 256,
    index_heads: 32,
    index_head_dim: 128,
    index_topk: 2048,
};

/// DeepSeek-V3.2's DSA attention shape (measured whole only: no skip-indexer rows).
pub const DEEPSEEK_V32_SHAPE: DsaShape = DsaShape {
    heads: 128,
    q_lora_rank: 1536,
    kv_lora_rank: 512,
    qk_nope: 128,
    qk_rope: 64,
    v_head_dim: 128,
    index_heads: 64,
    index_head_dim: 128,
    index_topk: 2048,
};

/// The shapes the table measured, by its `model` column.
const SHAPES: [(&str, DsaShape); 2] = [("glm5", GLM5_SHAPE), ("deepseek-v3.2", DEEPSEEK_V32_SHAPE)];

/// A DSA attention layer's dimensions (what decides the module's kernels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DsaShape {
    pub heads: u32,
    pub q_lora_rank: u32,
    pub kv_lora_rank: u32,
    pub qk_nope: u32,
    pub qk_rope: u32,
    pub v_head_dim: u32,
    pub index_heads: u32,
    pub index_head_dim: u32,
    pub index_topk: u32,
}

/// What a measured module is of: GPU preset, attention weights (`fp8` block-scaled or `bf16`),
/// KV dtype, the sparse decode kernel and the query heads one GPU holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleKey<'a> {
    pub gpu: &'a str,
    pub weights: &'a str,
    pub kv_dtype: &'a str,
    pub backend: &'a str,
    pub heads_per_gpu: u32,
}

/// One part's rows: time by batch, then by cached tokens (ascending).
#[derive(Debug, Clone, PartialEq, Default)]
struct Grid(BTreeMap<u32, Vec<(u32, f64)>>);

impl Grid {
    /// Seconds at `batch` rows of `cached` tokens (module docs).
    fn price(&self, batch: f64, cached: f64) -> Price {
        let batch = batch.max(1.0);
        let at = |b: u32| {
            let pts = &self.0[&b];
            let launch = pts.first().map_or(0.0, |p| p.1);
            along_context(pts, cached, launch)
        };
        // a larger batch is never faster: no smaller measured batch's time at this context
        // lies above it (a short row extrapolated past its last point could fall below one)
        let smaller = self
            .0
            .range(..=batch.floor() as u32)
            .map(|(&b, _)| at(b))
            .fold((0.0, Basis::Row), |m, x| if x.0 > m.0 { x } else { m });
        let lo = self
            .0
            .keys()
            .rev()
            .find(|&&b| f64::from(b) <= batch)
            .copied();
        let hi = self.0.keys().find(|&&b| f64::from(b) >= batch).copied();
        let (s, basis) = match (lo, hi) {
            (Some(a), Some(b)) if a == b => at(a),
            (Some(a), Some(b)) => {
                let ((ta, ba), (tb, bb)) = (at(a), at(b));
                let w = (batch.log2() - f64::from(a).log2())
                    / (f64::from(b).log2() - f64::from(a).log2());
                (
                    ta + w * (tb - ta),
                    worst(worst(ba, bb), Basis::Interpolated),
                )
            }
            (Some(a), None) => {
                let (ta, ba) = at(a);
                let t1 = self.0.keys().next().map_or(ta, |&b1| at(b1).0);
                let grown = t1 + (ta - t1).max(0.0) * batch / f64::from(a);
                (grown, worst(ba, Basis::BatchExtrapolated))
            }
            (None, Some(b)) => at(b),
            (None, None) => (0.0, Basis::BatchExtrapolated),
        };
        if smaller.0 > s {
            return Price {
                s: smaller.0,
                basis: worst(smaller.1, Basis::Interpolated),
            };
        }
        Price { s, basis }
    }
}

/// The measured parts of one module.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DsaModule {
    /// The module without its indexer, or, for a `whole` module, the module itself.
    skip: &'static Grid,
    indexer: &'static Grid,
    /// Only the whole module was measured (DeepSeek-V3.2: no skip-indexer rows): it prices a
    /// layer's attention with its indexer, every layer running its own.
    whole: bool,
    topk: f64,
    label: &'static str,
}

/// One module's fields as its [`ModuleKey`] and shape name them (GPU, model shape, weights, KV
/// dtype, kernel, heads).
type Key = (String, String, String, String, String, u32);
/// Each module's parts (without the indexer or whole, the indexer), its label, and whether it is
/// whole.
type Modules = BTreeMap<Key, (Grid, Grid, String, bool)>;

/// The carried rows, parsed once: the `skip` rows as measured, the indexer as full − skip where
/// both were measured (at least 0: a point where the two agree within noise costs nothing); a
/// module measured only whole keeps its `full` rows.
fn modules() -> &'static Modules {
    static M: OnceLock<Modules> = OnceLock::new();
    M.get_or_init(|| parse(TABLE))
}

/// The distilled CSV (header: gpu, model, weights, kv_dtype, backend, part, heads_per_gpu,
/// batch, cached_tokens, time_us); malformed lines are skipped (the file is carried and checked
/// by a test).
fn parse(text: &str) -> Modules {
    let mut full: BTreeMap<(Key, u32, u32), f64> = BTreeMap::new();
    let mut skip = Vec::new();
    for l in text.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<u32>().ok());
        let (10, Some(heads), Some(batch), Some(cached), Some(Ok(us))) = (
            f.len(),
            num(6),
            num(7),
            num(8),
            f.get(9).map(|x| x.parse::<f64>()),
        ) else {
            continue;
        };
        let key: Key = (
            f[0].into(),
            f[1].into(),
            f[2].into(),
            f[3].into(),
            f[4].into(),
            heads,
        );
        match f[5] {
            "full" => {
                full.insert((key, batch, cached), us * 1e-6);
            }
            "skip" => skip.push((key, batch, cached, us * 1e-6)),
            _ => {}
        }
    }
    let label = |(g, m, w, kv, be, h): &Key| {
        format!("{g} {be}, {m}, {w} weights, {kv} KV, {h} heads a GPU")
    };
    let mut out = Modules::new();
    for (key, batch, cached, s) in skip {
        let whole = full.get(&(key.clone(), batch, cached)).copied();
        let m = out
            .entry(key)
            .or_insert_with_key(|k| (Grid::default(), Grid::default(), label(k), false));
        m.0.0.entry(batch).or_default().push((cached, s));
        if let Some(f) = whole {
            m.1.0
                .entry(batch)
                .or_default()
                .push((cached, (f - s).max(0.0)));
        }
    }
    for ((key, batch, cached), s) in full {
        if out.get(&key).is_some_and(|m| !m.3) {
            continue;
        }
        let m = out
            .entry(key)
            .or_insert_with_key(|k| (Grid::default(), Grid::default(), label(k), true));
        m.0.0.entry(batch).or_default().push((cached, s));
    }
    for (a, b, _, _) in out.values_mut() {
        for v in a.0.values_mut().chain(b.0.values_mut()) {
            v.sort_by_key(|p| p.0);
            v.dedup_by_key(|p| p.0);
        }
    }
    out
}

impl DsaModule {
    /// The module measured for `key` and a layer of `shape`; `None` where the tables hold no
    /// such GPU, weights, cache, kernel or heads, or the shape is neither GLM-5's nor
    /// DeepSeek-V3.2's.
    pub fn find(key: &ModuleKey<'_>, shape: DsaShape) -> Option<DsaModule> {
        let model = SHAPES.iter().find(|(_, s)| *s == shape)?.0;
        let k: Key = (
            key.gpu.into(),
            model.into(),
            key.weights.into(),
            key.kv_dtype.into(),
            key.backend.into(),
            key.heads_per_gpu,
        );
        let (skip, indexer, label, whole) = modules().get(&k)?;
        (!skip.0.is_empty() && (*whole || !indexer.0.is_empty())).then_some(DsaModule {
            skip,
            indexer,
            whole: *whole,
            topk: f64::from(shape.index_topk),
            label,
        })
    }

    /// Only the whole module was measured: it prices the attention block with its indexer, so
    /// it holds only where every layer runs its own ([`Self::indexer`] is then 0).
    pub fn whole(&self) -> bool {
        self.whole
    }

    /// One layer's module without its indexer at `rows` decode rows (requests × query tokens a
    /// request) of `cached` tokens each: the sparse kernel reads at most the top-k keys a row.
    /// A whole module is read at the full context (its indexer scores every key).
    pub fn attention(&self, rows: f64, cached: f64) -> Price {
        let keys = if self.whole {
            cached
        } else {
            cached.min(self.topk)
        };
        self.skip.price(rows, keys.max(1.0))
    }

    /// What the layer's indexer adds to it at `rows` rows of `cached` tokens (0 for a whole
    /// module: [`Self::attention`] holds it).
    pub fn indexer(&self, rows: f64, cached: f64) -> Price {
        if self.whole {
            return Price {
                s: 0.0,
                basis: Basis::Row,
            };
        }
        self.indexer.price(rows, cached.max(1.0))
    }

    /// What priced a decode step's attention at `rows` rows of `cached` tokens.
    pub fn note(&self, rows: f64, cached: f64, indexer: bool) -> String {
        let a = self.attention(rows, cached);
        let ix = (indexer && !self.whole).then(|| self.indexer(rows, cached));
        let worst = ix.map_or(a.basis, |i| worst(a.basis, i.basis));
        format!(
            "decode attention: SGLang's measured DSA module ({}) at {} rows × {:.0} cached tokens: {:.1} µs a layer{}, {}",
            self.label,
            rows,
            cached,
            a.s * 1e6,
            ix.map_or(String::new(), |i| format!(
                " + {:.1} µs of indexer",
                i.s * 1e6
            )),
            worst.describe()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GLM-5-FP8 at TP8 on a B200 with an fp8 cache and trtllm-gen's sparse decode.
    const B200_FP8_TP8: ModuleKey<'static> = ModuleKey {
        gpu: "b200",
        weights: "fp8",
        kv_dtype: "fp8",
        backend: "trtllm",
        heads_per_gpu: 8,
    };

    fn b200_fp8() -> DsaModule {
        DsaModule::find(&B200_FP8_TP8, GLM5_SHAPE).expect("B200 fp8 TP8 module carried")
    }

    /// Every carried line parses, and each part of each module is there.
    #[test]
    fn the_carried_table_parses_whole() {
        let lines = TABLE.lines().skip(1).count();
        assert!(lines > 13_000, "{lines}");
        let m = parse(TABLE);
        let points = |g: &Grid| g.0.values().map(Vec::len).sum::<usize>();
        let split = m.values().filter(|v| !v.3);
        let skip: usize = split.clone().map(|v| points(&v.0)).sum();
        let ix: usize = split.map(|v| points(&v.1)).sum();
        let whole: usize = m.values().filter(|v| v.3).map(|v| points(&v.0)).sum();
        // GLM-5's skip rows are half its rows, nearly every one with a full row beside it;
        // DeepSeek-V3.2's rows are whole modules
        assert!(
            2 * skip + whole >= lines - 10,
            "{skip} + {whole} of {lines}"
        );
        assert!(ix * 100 >= skip * 95, "{ix} of {skip}");
        assert!(whole > 3_000, "{whole}");
        for gpu in ["b200", "h200", "h100-sxm"] {
            for heads in [8, 16, 32, 64] {
                let backend = if gpu == "b200" {
                    "trtllm"
                } else {
                    "flashmla_kv"
                };
                let key = ModuleKey {
                    gpu,
                    weights: "fp8",
                    kv_dtype: "fp8",
                    backend,
                    heads_per_gpu: heads,
                };
                assert!(DsaModule::find(&key, GLM5_SHAPE).is_some(), "{gpu} {heads}");
            }
        }
    }

    /// The B200 rows as measured (GLM-5-FP8 at TP8, fp8 cache): the whole module 74.0 µs at one
    /// request and 8,192 cached tokens and 117.0 µs at 64 requests and 4,096; the module
    /// without its indexer flat past the top-k (37.5 µs at 2,048 and 37.4 at 16,384 tokens).
    #[test]
    fn b200_rows_read_as_measured_and_the_sparse_part_stops_at_the_top_k() {
        let m = b200_fp8();
        let whole = |b: f64, c: f64| (m.attention(b, c).s + m.indexer(b, c).s) * 1e6;
        // the module without its indexer is read at the top-k (1 request: 37.5 µs, not 8,192's
        // 37.4; 64: 58.0, not 4,096's 57.8)
        assert!(
            (whole(1.0, 8192.0) - 74.1).abs() < 0.05,
            "{}",
            whole(1.0, 8192.0)
        );
        assert!(
            (whole(64.0, 4096.0) - 117.2).abs() < 0.05,
            "{}",
            whole(64.0, 4096.0)
        );
        // a larger batch is never priced faster than a smaller one at the same context, however
        // short the larger batch's measured row (256 requests reach only 1,024 tokens)
        for c in [1024.0, 8704.0, 32768.0] {
            let mut last = 0.0;
            for b in [1.0, 4.0, 16.0, 64.0, 128.0, 256.0, 512.0, 1024.0] {
                let t = whole(b, c);
                assert!(t >= last, "{b} rows at {c}: {t} < {last}");
                last = t;
            }
        }
        let flat = m.attention(1.0, 100_000.0).s;
        assert_eq!(flat, m.attention(1.0, 2048.0).s);
        assert_eq!(m.attention(1.0, 2048.0).basis, Basis::Row);
        // past the longest measured context the indexer grows by its last segment's rate
        let (a, b) = (m.indexer(1.0, 202_751.0).s, m.indexer(1.0, 400_000.0).s);
        assert!(b > a && m.indexer(1.0, 400_000.0).basis == Basis::ContextExtrapolated);
    }

    /// A shape other than GLM-5's, or a kernel the tables did not run, finds nothing.
    #[test]
    fn other_shapes_and_kernels_are_not_priced_from_the_tables() {
        let mut shape = GLM5_SHAPE;
        shape.heads = 128;
        let key = B200_FP8_TP8;
        assert!(DsaModule::find(&key, shape).is_none());
        let flashmla_on_b200 = ModuleKey {
            backend: "flashmla_kv",
            ..key
        };
        assert!(DsaModule::find(&flashmla_on_b200, GLM5_SHAPE).is_none());
        let rtx = ModuleKey {
            gpu: "rtx-pro-6000-server",
            ..key
        };
        assert!(DsaModule::find(&rtx, GLM5_SHAPE).is_none());
    }
}
