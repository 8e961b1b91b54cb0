//! Sets of layer indices, written `0-2,78` (the form exclusion summaries and presets use).

use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Layer indices, written `0-2,78` in JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LayerSet(pub Vec<Range<u32>>);

impl LayerSet {
    /// The set of `layers` (any order, duplicates allowed), merged into runs.
    pub fn from_layers(mut layers: Vec<u32>) -> LayerSet {
        layers.sort_unstable();
        layers.dedup();
        let mut runs: Vec<Range<u32>> = Vec::new();
        for l in layers {
            match runs.last_mut() {
                Some(r) if r.end == l => r.end = l + 1,
                _ => runs.push(l..l + 1),
            }
        }
        LayerSet(runs)
    }

    pub fn contains(&self, layer: u32) -> bool {
        self.0.iter().any(|r| r.contains(&layer))
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|r| r.is_empty())
    }

    /// Layers in the set.
    pub fn len(&self) -> u32 {
        self.0.iter().map(|r| r.end.saturating_sub(r.start)).sum()
    }
}

impl std::fmt::Display for LayerSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|r| match r.end - r.start {
                1 => r.start.to_string(),
                _ => format!("{}-{}", r.start, r.end - 1),
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

impl std::str::FromStr for LayerSet {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut layers = Vec::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let bad = || format!("`{item}` is not a layer index or a range like 0-77");
            let (a, b) = match item.split_once('-') {
                Some((a, b)) => (a, b),
                None => (item, item),
            };
            let (a, b): (u32, u32) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
            if b < a || b >= 1 << 16 {
                return Err(bad());
            }
            layers.extend(a..=b);
        }
        Ok(LayerSet::from_layers(layers))
    }
}

impl Serialize for LayerSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for LayerSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
