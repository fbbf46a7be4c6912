//! What showing an edit's diff costs: `bareagent::diff::unified` on the
//! edits an approval previews — one line changed in files of growing size,
//! and a whole file replaced by unrelated text (the diff's worst case,
//! bounded by its time limit).
//!
//! `cargo bench --bench diff` (ROUNDS=N to change the repeat count).

use std::time::Instant;

use bareagent::diff::{Before, unified};

fn file(lines: usize, seed: &str) -> String {
    (0..lines)
        .map(|n| {
            format!(
                "{seed} line {n}: let value_{n} = compute({n}, {});\n",
                n * 7
            )
        })
        .collect()
}

fn time(label: &str, rounds: usize, before: &str, after: &str) {
    let start = Instant::now();
    let mut size = 0;
    for _ in 0..rounds {
        size = unified("src/big.rs", Before::Text(before), after).len();
    }
    let each = start.elapsed() / rounds as u32;
    println!("{label:<48} {each:>12.2?} per diff ({size} bytes of diff)");
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    for lines in [100, 1_000, 10_000, 100_000] {
        let before = file(lines, "a");
        let after = before.replacen("line 3:", "line three:", 1);
        time(
            &format!("one line changed in {lines} lines"),
            rounds,
            &before,
            &after,
        );
    }
    for lines in [1_000, 10_000] {
        let before = file(lines, "a");
        let after = file(lines, "b");
        time(
            &format!("{lines} lines replaced by {lines} others"),
            rounds.min(5),
            &before,
            &after,
        );
    }
}
