//! `mcpx-tui`: the admin console for mcpx. Until the admin socket lands it only reports its version.

fn main() {
    println!("mcpx-tui {}", env!("CARGO_PKG_VERSION"));
}
