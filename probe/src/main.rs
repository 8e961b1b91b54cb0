//! `probe` binary.
fn main() {
    eprintln!("error: probe is not built yet");
    std::process::exit(2);
}
