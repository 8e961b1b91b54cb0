//! The b12x build a run used (lukealonso/b12x, mirrored as local-inference-lab/b12x), read from
//! a record's engine words, and the switch that takes b12x's MoE off its NVFP4 kernels: the
//! vocabulary `crate::cost::moe::MoeRunner` prices b12x's MoE by.

use serde::{Deserialize, Serialize};

/// The environment variable that makes b12x run its W4A16 MoE kernels (BF16 activations;
/// `default_moe_quant_mode` in b12x `integration/tp_moe.py`, 3dcd574e).
pub const B12X_MOE_FORCE_A16: &str = "B12X_MOE_FORCE_A16";

/// The environment variable that runs b12x's W4A16 MoE at decode sizes (up to 8 tokens) on its
/// tensor-core decode kernel: a small-M specialisation on the packed W4A16 weights (the prefill
/// GEMM's), the packed tensor-core MMA inner loop with the routed top-k sum folded into FC2's
/// store epilogue, fed by direct top-k routes (b12x `b12x/moe/_shared/kernels/w4a16/kernel.py`
/// @36bce2c1, `_TC_DECODE_MAX_M = _W4A16_SMALL_M_DIRECT_MAX_M = 8`; opt-in by this variable in
/// the June–July 2026 builds, always on in later ones). The GLM-5.2 launches of those months set
/// it; the May builds' W4A16 runs do not.
pub const B12X_W4A16_TC_DECODE: &str = "B12X_W4A16_TC_DECODE";

/// The most tokens one MoE call runs on b12x's W4A16 tensor-core decode kernel
/// (`_TC_DECODE_MAX_M`, the direct-top-k route cap; above it expert route-packing runs).
pub const B12X_W4A16_TC_DECODE_MAX_TOKENS: f64 = 8.0;

/// Whether an environment value switches a flag on, as b12x's `_env_flag` reads it (anything
/// but empty, `0`, `false`, `False`).
pub fn env_flag_on(value: &str) -> bool {
    !matches!(value, "" | "0" | "false" | "False")
}

/// The b12x build that ran `b12x_moe_fp4` (lukealonso/b12x, mirrored as
/// local-inference-lab/b12x): its MoE dispatch changed twice in April 2026, and a run's speed
/// by batch depends on which side of those changes it ran. Read from a record's engine version
/// or image words ([`B12xBuild::of_text`]); a run that names none is taken as the newest
/// ([`B12xBuild::NEWEST`]), and its prediction says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum B12xBuild {
    /// Up to 0.7.0 (18 March – 1 April 2026): micro / compact static kernel below 128 routed
    /// pairs, the dynamic kernel from 128 (`_STATIC_COMPACT_CUTOVER_PAIRS_DEFAULT =
    /// _LEVEL_TILE_M`, `select_tp_moe_backend` in `b12x/integration/tp_moe.py` at 8279ee6d,
    /// 0.7.0): the build of the March 2026 SGLang images.
    March2026,
    /// 0.7.1 – 0.8.1 (2 – 10 April 2026): the static kernel up to 640 routed pairs
    /// (`_STATIC_COMPACT_CUTOVER_PAIRS_DEFAULT = 640`, `routed_rows <= cutover`, b12x df84035c,
    /// "Enhance decode graph tuning", with a per-batch cluster ladder tuned by timing both
    /// kernels: `b12x/moe/tuning/decode.max_active_clusters.py`, "static: 20 < routed_rows <=
    /// 640"), i.e. decode up to 80 tokens at top-8 stays on the static kernel.
    Static640,
    /// 0.8.2 on (10 April 2026 –): as [`Self::Static640`], and the micro / static kernels run
    /// 64×128 tiles for experts with few routed rows (b12x ba2b9679, picked from the routed rows
    /// under graph capture since de80e013, 0.8.2).
    UnderfillTiles,
    /// From 3 June 2026 (local-inference-lab/b12x 377083ec, "retire tensor-core static backend;
    /// dynamic gains sub-128 M-tiles", after 0.15.3): no static kernel; the direct-micro kernel
    /// for up to 8 tokens under 64 routed pairs, the dynamic kernel above with 16-row M tiles
    /// (to 640 pairs, then 128; from 731ba9da, 30 June, a ladder of 16 / 32 / 64 / 128 rows by
    /// routed rows per expert) and one 128-column slice a task (`_DYNAMIC_SLICE_CHUNK = 1`).
    /// The micro kernel is the one b12x's `micro` benchmark profile timed up to 0.8.2 and keeps
    /// that share ([`crate::cost::moe::B12X_STATIC_RATIO_0_8_2`]) under 64 pairs. The new
    /// dynamic kernel has no public timing at any shape; it replaced the static kernel because
    /// it beat it (the commit's measured crossover), so from 64 pairs it is priced as the
    /// retired build ([`Self::UnderfillTiles`]) would run, capped at the kernel tables
    /// (FlashInfer CUTLASS) where that build fell onto the March build's slower 128-row rate
    /// (above 640 pairs). Flagged as extrapolated.
    MicroDynamic,
}

impl B12xBuild {
    /// The build a run that names none is taken to have run: the newest whose kernels have a
    /// public timing ([`Self::MicroDynamic`] has none).
    pub const NEWEST: B12xBuild = B12xBuild::UnderfillTiles;

    /// The build of a version `(major, minor, patch)` of the `b12x` package.
    pub fn of_version(v: (u32, u32, u32)) -> B12xBuild {
        if v <= (0, 7, 0) {
            B12xBuild::March2026
        } else if v <= (0, 8, 1) {
            B12xBuild::Static640
        } else if v <= (0, 15, 3) {
            // 0.15.3 holds both sides of 377083ec: the older kernels
            B12xBuild::UnderfillTiles
        } else {
            B12xBuild::MicroDynamic
        }
    }

    /// The newest build released by `(year, month, day)` (a month alone: its last day).
    pub fn of_date(d: (u32, u32, u32)) -> B12xBuild {
        if d <= (2026, 4, 1) {
            B12xBuild::March2026
        } else if d <= (2026, 4, 9) {
            B12xBuild::Static640
        } else if d <= (2026, 6, 2) {
            B12xBuild::UnderfillTiles
        } else {
            B12xBuild::MicroDynamic
        }
    }

    /// The build a record's engine words name: a `b12x` version (`b12x==0.7.2`, `b12x 0.9.5`),
    /// else the newest build by the date the words give (`March 2026`, `2026-04-20`, an image
    /// tag's `20260514`); `None` when they give neither.
    pub fn of_text(text: &str) -> Option<B12xBuild> {
        b12x_version_in(text)
            .map(B12xBuild::of_version)
            .or_else(|| date_in(text).map(B12xBuild::of_date))
    }

    /// Routed pairs on a GPU from which this build runs the dynamic kernel.
    pub fn dynamic_from_pairs(self) -> f64 {
        match self {
            B12xBuild::March2026 => 128.0,
            B12xBuild::Static640 | B12xBuild::UnderfillTiles => 641.0,
            // no static kernel: the micro / dynamic split is not priced (the tables' time)
            B12xBuild::MicroDynamic => 64.0,
        }
    }

    /// How the build reads in a prediction's notes.
    pub fn describe(self) -> &'static str {
        match self {
            B12xBuild::March2026 => "b12x <= 0.7.0 (dynamic MoE kernel from 128 routed pairs)",
            B12xBuild::Static640 => "b12x 0.7.1-0.8.1 (static MoE kernel up to 640 routed pairs)",
            B12xBuild::UnderfillTiles => {
                "b12x 0.8.2-0.15.3 (static MoE kernel up to 640 routed pairs, 64x128 underfill tiles)"
            }
            B12xBuild::MicroDynamic => {
                "b12x from 3 June 2026 (no static kernel: micro under 64 routed pairs at its 0.8.2 benchmark share; dynamic with sub-128-row tiles above, no public timing: no slower than the static kernel it retired, never slower than the kernel tables)"
            }
        }
    }
}

/// b12x's W4A16 MoE kernels (`B12X_MOE_FORCE_A16=1`) by build: which kernel runs a batch changed
/// when they were rewritten (local-inference-lab/b12x 5aa74cb3, "Rewrite W4A16 kernels", 15 May
/// 2026 15:15 UTC). Read from a record's or log's engine words ([`B12xA16Build::of_text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum B12xA16Build {
    /// 0.13.0 (3917cb2f, 9 May 2026) up to the rewrite: `b12x/moe/fused/w4a16/`, the compact
    /// static / direct-micro kernels up to 128 routed pairs and the queue-driven dynamic kernel
    /// above (`_W4A16_STATIC_COMPACT_CUTOVER_PAIRS_DEFAULT = 128`, `select_tp_moe_backend`'s
    /// `routed_rows <= cutover`; 32 × 64 tiles, `_W4A16_LEVEL_TILE_M/N`, `_DYNAMIC_SLICE_CHUNK =
    /// 1`: `b12x/integration/tp_moe.py` at 32679922, 14 May 2026, 0.13.6).
    Fused128,
    /// Any other (before 9 May: a 1024-pair cutover; from the rewrite: other kernels): no public
    /// timing, priced as the kernel tables.
    Other,
}

impl B12xA16Build {
    /// Routed pairs on a GPU above which the build runs its W4A16 dynamic kernel, if modelled.
    pub const FUSED128_STATIC_MAX_PAIRS: f64 = 128.0;

    /// The build the engine words name: a date from 9 to 14 May 2026 (an image tag's
    /// `glmkimirebase20260514`; 15 May holds both sides of the rewrite) or a `b12x` version
    /// 0.13.1–0.13.5 (0.13.0 and 0.13.6 straddle a change) is [`Self::Fused128`]; `None` when the
    /// words give neither a version nor a date.
    pub fn of_text(text: &str) -> Option<B12xA16Build> {
        let fused = |ok: bool| {
            if ok {
                B12xA16Build::Fused128
            } else {
                B12xA16Build::Other
            }
        };
        match (b12x_version_in(text), date_in(text)) {
            (Some(v), _) if ((0, 13, 1)..=(0, 13, 5)).contains(&v) => Some(B12xA16Build::Fused128),
            (_, Some(d)) => Some(fused(((2026, 5, 9)..=(2026, 5, 14)).contains(&d))),
            (Some(_), None) => Some(B12xA16Build::Other),
            (None, None) => None,
        }
    }
}

/// The community vLLM fork's switch (`B12xMLASparseImpl`, `v1/attention/backends/mla/
/// b12x_mla_sparse.py`) that routes a speculative verify batch under `--attention-backend
/// B12X_MLA_SPARSE` through b12x's split-K decode kernel (`1`) or its single-pass extend kernel
/// (`0`); the fork's default for it changed with the build ([`B12xMlaVerify::of`]).
pub const VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE: &str = "VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE";

/// Which of b12x's SM120 sparse-MLA kernels runs vLLM's speculative verify (every request's
/// `k + 1` query tokens) under `--attention-backend B12X_MLA_SPARSE`. The decode kernel splits
/// each row's selected keys over up to 32 CTAs of one 64-key tile each and merges them
/// (`run_unified_decode`, b12x `attention/mla/kernel.py`); the extend kernel does not split over
/// keys: one CTA a (token row, head block) walks all of the row's selected keys, tile after tile
/// (`run_unified_prefill` → `prefill_mg.py`: "prefill is single-pass; no split/merge workspace",
/// local-inference-lab/b12x @afac9d27), so a four-row verify keeps four of the GPU's 188 SMs
/// busy for 32 serial tiles at 2,048 keys (docs/validation.md, nineteenth session).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum B12xMlaVerify {
    /// The decode kernel: the May 2026 builds' default (`VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE`
    /// defaulting to "1", local-inference-lab/vllm @28be48fa9, 2026-05-24) and the `auto`
    /// default of local-inference-lab/vllm PR #164 (merged 2026-07-22, "restore B12X MTP decode
    /// fast path").
    Decode,
    /// The extend kernel: the builds between the fork's unified SM120 backend (@779e0acaa,
    /// 2026-05-29: `is_decode = max_query_len <= 1`) and PR #164, whose switch defaulted to "0";
    /// PR #164 says MTP verification "unnecessarily used the substantially slower sparse extend
    /// kernel", the cause of the B12X-versus-FlashInfer MTP gap its authors observed. Not priced.
    Extend,
}

/// The community vLLM fork's `--attention-backend` name for b12x's SM120 sparse MLA.
pub const B12X_MLA_SPARSE: &str = "B12X_MLA_SPARSE";

/// Whether an `--attention-backend` value names b12x's sparse MLA (in any case).
pub fn is_b12x_sparse_mla(backend: Option<&str>) -> bool {
    backend.is_some_and(|b| b.trim().eq_ignore_ascii_case(B12X_MLA_SPARSE))
}

impl B12xMlaVerify {
    /// The route a run took: the switch where it was set (`0` the extend kernel, any other value
    /// the decode kernel: the fork reads it as `os.getenv(…) != "0"`, and after PR #164 `0` is
    /// its kill switch, `1` the legacy force, `auto` the decode route for a real verify batch),
    /// else by the build's date (`None` when neither is known).
    pub fn of(switch: Option<&str>, date: Option<(u32, u32, u32)>) -> Option<B12xMlaVerify> {
        match switch.map(str::trim) {
            Some("0") => return Some(B12xMlaVerify::Extend),
            Some(_) => return Some(B12xMlaVerify::Decode),
            None => {}
        }
        let extend = (2026, 5, 29)..(2026, 7, 22);
        date.map(|d| {
            if extend.contains(&d) {
                B12xMlaVerify::Extend
            } else {
                B12xMlaVerify::Decode
            }
        })
    }

    /// [`Self::of`] with the build's date read from a record's engine words.
    pub fn of_text(switch: Option<&str>, text: &str) -> Option<B12xMlaVerify> {
        Self::of(switch, date_in(text))
    }
}

/// The `(major, minor, patch)` written after a `b12x` word (`b12x==0.7.2`, `b12x-0.9.5`,
/// `b12x v0.8.3`), if any.
fn b12x_version_in(text: &str) -> Option<(u32, u32, u32)> {
    let lower = text.to_ascii_lowercase();
    lower.match_indices("b12x").find_map(|(at, _)| {
        let rest = lower[at + 4..].trim_start_matches([' ', '=', '-', '_', ':', 'v']);
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let mut parts = word.split('.').map(|p| p.parse::<u32>().ok());
        match (parts.next(), parts.next(), parts.next()) {
            (Some(Some(a)), Some(Some(b)), Some(Some(c))) => Some((a, b, c)),
            (Some(Some(a)), Some(Some(b)), None) => Some((a, b, 0)),
            _ => None,
        }
    })
}

/// Month names, January first (a record may write any prefix of three letters or more).
const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// `(year, month, day)` when it is a plausible date of this century.
fn plausible_date(d: (u32, u32, u32)) -> Option<(u32, u32, u32)> {
    ((2020..2100).contains(&d.0) && (1..=12).contains(&d.1) && (1..=31).contains(&d.2)).then_some(d)
}

/// The date a word of `-`-joined parts gives: `2026-04-20`, or an eight-digit run `20260514`
/// within one part (an image tag's `glmkimirebase20260514`).
fn date_in_word(word: &str) -> Option<(u32, u32, u32)> {
    let parts: Vec<&str> = word.split('-').collect();
    let ymd = parts.windows(3).find_map(|w| {
        let n: Vec<u32> = w.iter().filter_map(|p| p.parse().ok()).collect();
        (w[0].len() == 4 && n.len() == 3)
            .then(|| plausible_date((n[0], n[1], n[2])))
            .flatten()
    });
    ymd.or_else(|| {
        parts
            .iter()
            .flat_map(|p| p.split(|c: char| !c.is_ascii_digit()))
            .filter(|run| run.len() == 8)
            .find_map(|run| {
                let n: u32 = run.parse().ok()?;
                plausible_date((n / 10000, n / 100 % 100, n % 100))
            })
    })
}

/// The first date in `text`: `2026-04-20`, an eight-digit `20260514`, or a month and year
/// `March 2026` (taken at its end: 31 stands for every month's last day).
pub(crate) fn date_in(text: &str) -> Option<(u32, u32, u32)> {
    let lower = text.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().enumerate().find_map(|(i, w)| {
        date_in_word(w).or_else(|| {
            let month = MONTHS
                .iter()
                .position(|m| w.len() >= 3 && m.starts_with(w))?;
            let year: u32 = words.get(i + 1)?.parse().ok()?;
            plausible_date((year, month as u32 + 1, 31))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fork's verify route by build: the switch wins (only `0` is the extend kernel); unset,
    /// the builds from 29 May to 21 July 2026 ran the extend kernel, the others the decode
    /// kernel; no date, no answer.
    #[test]
    fn b12x_verify_runs_the_extend_kernel_only_in_the_june_builds() {
        use B12xMlaVerify::{Decode, Extend};
        let of = |switch, text| B12xMlaVerify::of_text(switch, text);
        let june = "image voipmonitor/vllm:eldritch-20260626";
        assert_eq!(of(None, june), Some(Extend));
        assert_eq!(of(Some("1"), june), Some(Decode));
        assert_eq!(of(Some("0"), "gilded-gnosis 2026-07-27"), Some(Extend));
        assert_eq!(of(None, "2026-07-27 candidate"), Some(Decode));
        assert_eq!(of(None, "2026-07-22"), Some(Decode));
        assert_eq!(of(None, "2026-05-28"), Some(Decode));
        assert_eq!(of(None, "20260529"), Some(Extend));
        assert_eq!(of(Some("auto"), "2026-06-05"), Some(Decode));
        assert_eq!(of(None, "no date here"), None);
        assert_eq!(of(Some("1"), "no date here"), Some(Decode));
    }

    /// The build from a record's engine words: a b12x version first, else the date.
    #[test]
    fn b12x_build_from_engine_words() {
        use B12xBuild::*;
        let of = B12xBuild::of_text;
        assert_eq!(
            of("community docker (voipmonitor/sglang, March 2026)"),
            Some(March2026)
        );
        assert_eq!(of("sglang 0.5.9 with b12x==0.7.0"), Some(March2026));
        assert_eq!(of("b12x 0.7.2, image built 2026-05-01"), Some(Static640));
        assert_eq!(of("b12x-0.9.5"), Some(UnderfillTiles));
        assert_eq!(of("image foo-20260514-bar"), Some(UnderfillTiles));
        assert_eq!(of("built 2026-04-05"), Some(Static640));
        assert_eq!(of("April 2026"), Some(UnderfillTiles));
        assert_eq!(of("voipmonitor/sglang:cu130 community image"), None);
        assert_eq!(of("b12xc929144"), None);
        let kimi =
            "image voipmonitor/vllm:glm-kimi-layered-vllm68b3569f-b12xc929144-cutedsl45-20260514";
        assert_eq!(of(kimi), Some(UnderfillTiles));
        assert_eq!(of("marlin 2026"), None);
        // the static kernel retired on 3 June 2026 (377083ec, after 0.15.3)
        assert_eq!(of("b12x 0.15.3"), Some(UnderfillTiles));
        assert_eq!(of("b12x==0.30.0"), Some(MicroDynamic));
        assert_eq!(of("built 2026-06-02"), Some(UnderfillTiles));
        assert_eq!(of("built 2026-06-03"), Some(MicroDynamic));
        let v14 = "image voipmonitor/vllm:eldritch-enlightenment-v56a5c3e-b12x7bfc945-glm52-dcp-fp8nvfp4fix-cu132-20260705";
        assert_eq!(of(v14), Some(MicroDynamic));
    }

    /// The W4A16 build: the 9–14 May 2026 window (or 0.13.1–0.13.5) ran the fused kernels with
    /// the 128-pair cutover; other dates and versions are other kernels; no words, no build.
    #[test]
    fn b12x_a16_build_from_engine_words() {
        use B12xA16Build::*;
        let of = B12xA16Build::of_text;
        assert_eq!(of("0.20.2rc1.dev249+glmkimirebase20260514"), Some(Fused128));
        assert_eq!(of("b12x 0.13.3"), Some(Fused128));
        assert_eq!(of("built 2026-05-09"), Some(Fused128));
        assert_eq!(of("built 2026-05-15"), Some(Other));
        assert_eq!(of("b12x 0.13.6"), Some(Other));
        assert_eq!(of("b12x 0.13.6 built 2026-05-12"), Some(Fused128));
        assert_eq!(of("image 20260601"), Some(Other));
        assert_eq!(of("community image"), None);
    }
}
