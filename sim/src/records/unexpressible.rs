//! Why a record cannot be expressed ([`Unexpressible`], its [`UnexpressibleKind`]) and the one
//! reader of a record's whole-number fields every mapping step shares ([`stated`]).

use super::Whole;
use serde::{Deserialize, Serialize};

/// Kinds of reasons a record cannot be expressed; a record's reasons are sorted in this order and
/// the first is the one counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnexpressibleKind {
    /// Words where a count belongs (`"concurrency": "1 and high"`), or a figure that is no
    /// usable number (negative, zero, beyond f64, physically impossible).
    UnreadableValue,
    /// Servers over several nodes.
    MultiNode,
    /// No machine preset for that GPU, count or setup.
    UnknownMachine,
    /// The checkpoint maps onto no model preset.
    UnknownModel,
    /// The engine is neither SGLang nor vLLM.
    UnknownEngine,
    /// vLLM's decode context parallelism with a DCP size that does not divide the TP size.
    Dcp,
    /// A knob shardwise does not model (DP replicas, a pinned NCCL protocol, …).
    KnobNotModelled,
    /// Parallel sizes not stated, or not the box's GPU count.
    MissingLayout,
    /// Concurrency, context or lengths not stated.
    MissingWorkload,
    /// No metric shardwise predicts, or its family is unknown.
    MetricNotModelled,
    /// The simulation refused it (the model does not fit the layout, …).
    SimulationFailed,
}

impl UnexpressibleKind {
    /// The key used in tables and JSON (`unknown-machine`).
    pub fn key(self) -> &'static str {
        match self {
            UnexpressibleKind::UnreadableValue => "unreadable-value",
            UnexpressibleKind::UnknownModel => "unknown-model",
            UnexpressibleKind::MultiNode => "multi-node",
            UnexpressibleKind::UnknownMachine => "unknown-machine",
            UnexpressibleKind::Dcp => "dcp",
            UnexpressibleKind::KnobNotModelled => "knob-not-modelled",
            UnexpressibleKind::MissingLayout => "missing-layout",
            UnexpressibleKind::MissingWorkload => "missing-workload",
            UnexpressibleKind::MetricNotModelled => "metric-not-modelled",
            UnexpressibleKind::UnknownEngine => "unknown-engine",
            UnexpressibleKind::SimulationFailed => "simulation-failed",
        }
    }
}

/// Why a record cannot be simulated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unexpressible {
    pub kind: UnexpressibleKind,
    pub detail: String,
}

impl Unexpressible {
    pub fn new(kind: UnexpressibleKind, detail: impl Into<String>) -> Self {
        Unexpressible {
            kind,
            detail: detail.into(),
        }
    }
}

/// The whole number `field` of record `id` states; words instead are a reason naming both.
pub(super) fn stated(
    id: &str,
    field: &str,
    v: &Option<Whole>,
) -> Result<Option<u32>, Unexpressible> {
    match v {
        None => Ok(None),
        Some(Whole::Stated(n)) => Ok(Some(*n)),
        Some(w @ Whole::Unreadable(_)) => Err(Unexpressible::new(
            UnexpressibleKind::UnreadableValue,
            format!(
                "record `{id}`: {field} {}",
                w.why_unreadable().unwrap_or_default()
            ),
        )),
    }
}
