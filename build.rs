//! Release builds lay out the code that runs at start side by side.
//!
//! A process's resident memory is mostly its binary's pages, and the kernel
//! maps them 64 KiB around each page faulted in. Spread over 17 MiB of code,
//! the ~2 MiB that starting a front end runs touched half of it; listed in
//! `build/startup-order.txt` (the functions that `bareagent run`, `lsp` and
//! `acp` run at start and in a turn), the linker puts them side by side,
//! and the rest stays on disk. ARCHITECTURE.md says more;
//! `cargo build --release && cargo bench --profile dev --bench startup_order`
//! writes the list.
//!
//! Only in optimised builds for Linux, and only where the linker this build
//! uses takes the option (LLD, Rust's own default on x86_64 Linux since
//! 1.90; not GNU ld, which a distribution's rustc may use): an empty
//! program is linked with it first. A name the list has and the binary
//! lacks is skipped, so a stale list costs memory, never correctness.
//! `BAREAGENT_NO_STARTUP_ORDER=1` opts out.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let order = "build/startup-order.txt";
    println!("cargo:rerun-if-changed={order}");
    println!("cargo:rerun-if-env-changed=BAREAGENT_NO_STARTUP_ORDER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("BAREAGENT_NO_STARTUP_ORDER") == "1"
        || var("OPT_LEVEL") == "0"
        || var("CARGO_CFG_TARGET_OS") != "linux"
    {
        return;
    }
    let path = Path::new(&var("CARGO_MANIFEST_DIR")).join(order);
    if !path.is_file() {
        return;
    }
    // Two arguments each, so a comma in the path stays in the path.
    let ordering = [
        "-Xlinker".to_string(),
        format!("--symbol-ordering-file={}", path.display()),
        "-Xlinker".to_string(),
        "--no-warn-symbol-ordering".to_string(),
    ];
    if !links_with(&ordering) {
        return;
    }
    // Relative relocations packed (RELR): the loader reads 775 KiB of them
    // at every start otherwise. The binary then needs glibc 2.36 where it
    // runs; it is taken only where the glibc building it has it, so a
    // binary built here and copied to an older system will not start.
    let relr = ["-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"].map(String::from);
    let packed = var("CARGO_CFG_TARGET_ENV") == "gnu"
        && glibc_at_least(2, 36)
        && links_with(&[&ordering[..], &relr[..]].concat());
    let args = if packed {
        [&ordering[..], &relr[..]].concat()
    } else {
        ordering.to_vec()
    };
    for arg in args {
        println!("cargo:rustc-link-arg-bin=bareagent={arg}");
    }
}

/// Whether the linker this build uses links an empty program with `args`:
/// the same rustc, target, flags and linker cargo gives the real link.
fn links_with(args: &[String]) -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let out = PathBuf::from(var("OUT_DIR"));
    let source = out.join("probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let mut probe = Command::new(rustc);
    probe
        .arg("--crate-type=bin")
        .args(["--target", &var("TARGET")])
        .arg("-o")
        .arg(out.join("probe"))
        .arg(&source);
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    probe.args(flags.split('\u{1f}').filter(|flag| !flag.is_empty()));
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        probe.arg(format!("-Clinker={linker}"));
    }
    for arg in args {
        probe.arg(format!("-Clink-arg={arg}"));
    }
    probe
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether this machine's glibc (the one a native build runs on) is at
/// least `major.minor`, per `getconf GNU_LIBC_VERSION` ("glibc 2.36").
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut numbers = text
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .split('.')
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let found = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    found >= (major, minor)
}
