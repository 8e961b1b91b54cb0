//! Built-in machine presets (filled below).

/// Names of the built-in machine presets.
pub fn machine_preset_names() -> Vec<&'static str> {
    Vec::new()
}

/// A built-in machine preset by name.
pub fn machine_preset(_name: &str) -> Option<models::MachineProfile> {
    None
}
