//! The NCCL state a record ran under, read from the `NCCL_*` settings its engine flags or hardware
//! notes state, and the machine preset that carries curves for it.

use super::Record;

/// The NCCL state a record ran under, from `NCCL_*` settings in its engine flags or hardware notes.
pub(super) enum NcclTuning {
    /// Nothing said: NCCL's defaults.
    Default,
    /// Cross-socket P2P allowed / protocols set by hand, LL128 not among them (the evidence).
    Tuned(String),
    /// `NCCL_PROTO` lists LL128 (NCCL keeps it off on PCIe paths unless asked).
    Ll128(String),
    /// `NCCL_PROTO=Simple` alone: Simple at every size, LL's small-message latency gone.
    Simple(String),
}

impl NcclTuning {
    /// The value of `NCCL_<key>=…` in the record's flags or hardware notes.
    fn stated(r: &Record, key: &str) -> Option<String> {
        let text = format!(
            "{} {}",
            r.engine.flags.as_deref().unwrap_or_default(),
            r.hardware.notes.as_deref().unwrap_or_default()
        );
        text.split(|c: char| c.is_whitespace() || c == ';' || c == '(' || c == ')')
            .filter_map(|t| t.split_once('='))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.trim_end_matches([',', '.']).to_string())
    }

    /// The lower-cased protocols of `NCCL_PROTO`, sorted; `None` when unset or `default`.
    fn protocols(r: &Record) -> Option<Vec<String>> {
        let v = Self::stated(r, "NCCL_PROTO")?;
        if v.eq_ignore_ascii_case("default") {
            return None;
        }
        let mut parts: Vec<String> = v
            .split(',')
            .map(|s| s.trim().to_ascii_lowercase())
            .filter(|s| !s.is_empty())
            .collect();
        parts.sort();
        Some(parts)
    }

    /// The `NCCL_GRAPH_FILE` the record runs NCCL with: a ring/channel layout NCCL takes instead
    /// of its own topology search (`crate::nccl_graph_variant` says what the community's file
    /// changes). A text saying no file was used states no `NCCL_GRAPH_FILE=` and reads `None`.
    pub(super) fn graph_file(r: &Record) -> Option<String> {
        Self::stated(r, "NCCL_GRAPH_FILE").filter(|v| !v.is_empty())
    }

    /// Whether the record runs NCCL with `NCCL_P2P_DISABLE` set to a non-zero integer.
    pub(super) fn p2p_disabled(r: &Record) -> bool {
        Self::stated(r, "NCCL_P2P_DISABLE")
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|v| v != 0)
    }

    pub(super) fn of(r: &Record) -> NcclTuning {
        if let Some(p) = Self::protocols(r).filter(|p| p.iter().any(|s| s == "ll128")) {
            return NcclTuning::Ll128(format!("NCCL_PROTO={}", p.join(",")));
        }
        if Self::protocols(r).is_some_and(|p| p == ["simple"]) {
            return NcclTuning::Simple("NCCL_PROTO=simple".into());
        }
        if let Some(p) = Self::stated(r, "NCCL_PROTO") {
            return NcclTuning::Tuned(format!("NCCL_PROTO={p}"));
        }
        if let Some(f) = Self::graph_file(r) {
            // the file's rings and channels are the layout the tuned curves were measured in
            return NcclTuning::Tuned(format!(
                "NCCL_GRAPH_FILE={f} (a ring/channel layout: 4 channels, LL for small messages)"
            ));
        }
        match Self::stated(r, "NCCL_P2P_LEVEL") {
            Some(l) => NcclTuning::Tuned(format!("NCCL_P2P_LEVEL={l}")),
            None => NcclTuning::Default,
        }
    }

    /// An `NCCL_PROTO` set with no curve: anything but `default`, `LL` alone, `Simple` alone,
    /// `LL,Simple` (NCCL's own choice on PCIe, where LL128 is off) or a set holding LL128.
    pub(super) fn unmodelled_proto(r: &Record) -> Option<String> {
        let p = Self::protocols(r)?;
        let modelled = p == ["ll"]
            || p == ["simple"]
            || p == ["ll", "simple"]
            || p.iter().any(|s| s == "ll128");
        (!modelled).then(|| p.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::RecordSet;
    use std::path::Path;

    fn record(flags: &str, notes: &str) -> Record {
        let text = format!(
            r#"{{"records": [{{"id": "a", "hardware": {{"gpu": "NVIDIA RTX PRO 6000", "count": 8,
            "notes": "{notes}"}}, "engine": {{"name": "vllm", "flags": "{flags}"}}}}]}}"#
        );
        RecordSet::parse(text.as_bytes(), Path::new("r.json"))
            .unwrap()
            .records
            .remove(0)
    }

    fn kind(r: &Record) -> &'static str {
        match NcclTuning::of(r) {
            NcclTuning::Default => "default",
            NcclTuning::Tuned(_) => "tuned",
            NcclTuning::Ll128(_) => "ll128",
            NcclTuning::Simple(_) => "simple",
        }
    }

    #[test]
    fn the_stated_nccl_settings_pick_the_curves() {
        assert_eq!(kind(&record("--tp 8", "")), "default");
        let kimi = record(
            "TP_SIZE=8 VLLM_ENABLE_PCIE_ALLREDUCE=1 (cpp, 56KB cutoff) NCCL_PROTO=LL,LL128,Simple",
            "",
        );
        assert_eq!(kind(&kimi), "ll128");
        assert_eq!(
            kind(&record("x", "patched NCCL, NCCL_P2P_LEVEL=SYS, no XML")),
            "tuned"
        );
        assert_eq!(kind(&record("pure NCCL, NCCL_PROTO=default", "")), "tuned");
        assert_eq!(kind(&record("NCCL_PROTO=LL128", "")), "ll128");
        assert_eq!(NcclTuning::unmodelled_proto(&kimi), None);
        assert_eq!(
            NcclTuning::unmodelled_proto(&record("NCCL_PROTO=LL", "")),
            None
        );
        let simple = record("pure NCCL allreduce, NCCL_PROTO=Simple", "");
        assert_eq!(kind(&simple), "simple");
        assert_eq!(NcclTuning::unmodelled_proto(&simple), None);
        assert_eq!(kind(&record("NCCL_PROTO=LL,Simple", "")), "tuned");
        let graph = record(
            "PCIe custom allreduce: off; NCCL_GRAPH_FILE=/mnt/nccl_graph_opt.xml",
            "",
        );
        assert_eq!(kind(&graph), "tuned");
        assert_eq!(
            NcclTuning::graph_file(&graph).as_deref(),
            Some("/mnt/nccl_graph_opt.xml")
        );
        let none = record("TP=16; NCCL graph file not used", "");
        assert_eq!(
            (kind(&none), NcclTuning::graph_file(&none)),
            ("default", None)
        );
        assert_eq!(
            NcclTuning::unmodelled_proto(&record("NCCL_PROTO=Tree", "")).as_deref(),
            Some("tree")
        );
    }
}
