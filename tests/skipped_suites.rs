//! Runs after the other test binaries of a `cargo test` run (cargo runs
//! them in the order of their names) and says, one line each, which suites
//! skipped for want of a real peer, and how to get it.

#[path = "support/peers.rs"]
#[allow(dead_code)]
mod peers;

use peers::Peer;

const ALL: [Peer; 7] = [
    Peer::Neovim,
    Peer::McpServers,
    Peer::LanguageServers,
    Peer::AcpSdk,
    Peer::ProviderSdks,
    Peer::VsCode,
    Peer::Landlock,
];

fn main() {
    let dir = peers::notes_dir();
    let skipped: Vec<(&str, &str)> = ALL
        .iter()
        .map(|peer| peer.how())
        .filter(|(suite, _)| dir.join(suite).exists())
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    if skipped.is_empty() {
        return;
    }
    println!("\nSuites skipped for want of their real peers (.ci/run installs them all):");
    for (suite, how) in skipped {
        println!("  {suite}: {how}");
    }
    println!();
}
