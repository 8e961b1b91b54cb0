//! Shared clap argument groups (machine, model, server flags, layout, format).
