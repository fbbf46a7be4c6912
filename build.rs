//! Release builds lay out the code that runs at start side by side.
//!
//! A process's resident memory is mostly its binary's pages, and the kernel
//! maps them 64 KiB around each page faulted in. Spread over 17 MiB of code,
//! the ~2 MiB that starting a front end runs touched half of it; listed in
//! `build/startup-order.txt` (the functions that `bareagent run`, `lsp` and
//! `acp` run at start and in a turn, first the ones they share), the linker
//! puts them first, and the rest stays on disk. ARCHITECTURE.md says more;
//! `cargo build --release && cargo bench --profile dev --bench startup_order`
//! writes the list.
//!
//! Only where the linker is known to be LLD (Rust's default on
//! x86_64-unknown-linux-gnu since 1.90) and only for optimised builds.
//! A name the list has and the binary lacks is skipped, so a stale list
//! costs memory, never correctness. `BAREAGENT_NO_STARTUP_ORDER=1` opts out.

use std::process::Command;

fn main() {
    let order = "build/startup-order.txt";
    println!("cargo:rerun-if-changed={order}");
    println!("cargo:rerun-if-env-changed=BAREAGENT_NO_STARTUP_ORDER");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    if !orders_here() {
        return;
    }
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let path = std::path::Path::new(&dir).join(order);
    if !path.is_file() {
        return;
    }
    println!(
        "cargo:rustc-link-arg-bin=bareagent=-Wl,--symbol-ordering-file={}",
        path.display()
    );
    println!("cargo:rustc-link-arg-bin=bareagent=-Wl,--no-warn-symbol-ordering");
    // Relative relocations packed (RELR): the loader reads 775 KiB of them
    // at every start otherwise. The binary then needs glibc 2.36, which
    // builds it here.
    if glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bin=bareagent=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the list goes to the linker in this build.
fn orders_here() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("BAREAGENT_NO_STARTUP_ORDER") == "1"
        || var("OPT_LEVEL") == "0"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
    {
        return false;
    }
    // A linker of the user's own choosing may not take the option.
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if flags.contains("linker")
        || flags.contains("fuse-ld")
        || !var("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_empty()
    {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(version) = Command::new(rustc).arg("-V").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&version.stdout);
    // "rustc 1.95.0 (…)": LLD is the default linker from 1.90.
    let minor = text
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    minor.is_some_and(|minor| minor >= 90)
}

/// Whether this machine's glibc (the one the binary will run on: a native
/// build) is at least `major.minor`, per `getconf GNU_LIBC_VERSION`.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    // "glibc 2.36"
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
