//! The judging of the memory budgets (`benches/budgets.rs` applies it to
//! the figures the benches measure in CI), on figures either side of each
//! budget's slack.

#[path = "../../benches/support/budgets.rs"]
#[allow(dead_code)]
mod budgets;

use budgets::{KIB, MIB, check};
use serde_json::Value;

/// The check itself, on figures either side of each budget's slack.
#[test]
fn a_figure_over_its_budget_by_more_than_the_slack_fails() {
    let peers_with = |anthropic_kib: f64, https_kib: f64, build: &str| {
        serde_json::json!({"build": build, "bareagent_bin": null, "agents": {
            "bareagent-anthropic": {"peak_rss_largest_kib": {"median": 9000.0, "max": anthropic_kib}},
            "bareagent-openai": {"peak_rss_largest_kib": {"median": 9000.0, "max": 9000.0}},
            "bareagent-anthropic-https": {"peak_rss_largest_kib": {"median": https_kib, "max": 12000.0}},
        }})
        .to_string()
    };
    let peers = |anthropic_kib: f64, build: &str| peers_with(anthropic_kib, 9000.0, build);
    let lsp = |mib: f64| {
        format!(
            "{{\"bench\":\"lsp\",\"name\":\"language server: spawn → `initialize` answer (median)\",\"value\":3.0}}\n\
             {{\"bench\":\"lsp\",\"name\":\"language server: idle RSS 500 ms after `initialized` (median)\",\"value\":{mib}}}\n"
        )
    };
    // 10.9 MB and 8.7 MB: over budget, within the slack.
    let within = check(&peers(10.9e6 / KIB, "release"), &lsp(8.7e6 / MIB));
    assert_eq!(within, Ok(vec![]));
    // 11.1 MB: over by more than 10%.
    let failures = check(&peers(11.1e6 / KIB, "release"), &lsp(5.0)).expect("parsed");
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("bareagent-anthropic"), "{failures:?}");
    let failures = check(&peers(9000.0, "release"), &lsp(8.9e6 / MIB)).expect("parsed");
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("language server"), "{failures:?}");
    // The HTTPS row is checked on its median (its highest run, 12 MB here,
    // is not).
    let failures = check(&peers_with(9000.0, 11.1e6 / KIB, "release"), &lsp(5.0)).expect("parsed");
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("https, median"), "{failures:?}");
    // A debug build's figures are not the release binary's.
    assert!(check(&peers(9000.0, "dev"), &lsp(5.0)).is_err());
    let measured = |bin: &str| {
        let mut peers: Value = serde_json::from_str(&peers(9000.0, "dev")).expect("json");
        peers["bareagent_bin"] = bin.into();
        check(&peers.to_string(), &lsp(5.0)).map(|failures| failures.len())
    };
    assert_eq!(measured("/src/bareagent/target/release/bareagent"), Ok(0));
    assert_eq!(
        measured("/src/bareagent/target/bench/bareagent-release"),
        Ok(0)
    );
    assert!(measured("/src/bareagent/target/debug/bareagent").is_err());
    // A file without the figure is an error, not a pass.
    assert!(check(&peers(9000.0, "release"), "").is_err());
}
