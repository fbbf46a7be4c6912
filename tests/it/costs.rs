//! What a turn costs, end to end: `bareagent run --json` against the
//! scripted server, whose replies report fixed usage, checked against
//! figures worked out by hand from the published prices.

use serde_json::{Value, json};

use crate::common::{TEST_KEY, bareagent, workspace};
use crate::support::model_server::{ModelServer, Reply, Step};

/// Two calls (a read, then the answer), each reporting this usage.
fn script(input: u64, output: u64, write: u64, read: u64) -> Vec<Step> {
    let with_usage = |reply: Reply| Reply {
        input_tokens: input,
        output_tokens: output,
        cache_creation_input_tokens: write,
        cache_read_input_tokens: read,
        ..reply
    };
    vec![
        with_usage(Reply::tool("read_file", json!({"path": "a.txt"}))).into(),
        with_usage(Reply::text("Done.")).into(),
    ]
}

struct Case {
    api: &'static str,
    model: &'static str,
    /// Lines for the user's config.toml.
    config: &'static str,
    /// A call's cost in USD, worked out by hand; `None`: unknown.
    call_usd: Option<f64>,
    /// The last call's context as a share of the window, in percent.
    context_percent: Option<f64>,
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn costs_match_the_price_table_and_unknown_models_cost_unknown() {
    // Each Anthropic call: 1,000 input, 500 output, 2,000 cache write,
    // 10,000 cache read tokens; its context is all of them, 13,500.
    let cases = [
        Case {
            api: "anthropic",
            model: "claude-sonnet-4-5",
            config: "",
            // 1000×3 + 500×15 + 2000×3.75 + 10000×0.30 = 21,000 µ$
            call_usd: Some(0.021),
            context_percent: Some(6.75),
        },
        Case {
            api: "anthropic",
            model: "claude-sonnet-4-5-20250929",
            config: "",
            call_usd: Some(0.021),
            context_percent: Some(6.75),
        },
        Case {
            api: "anthropic",
            model: "claude-opus-4-1",
            config: "",
            // 1000×15 + 500×75 + 2000×18.75 + 10000×1.50 = 105,000 µ$
            call_usd: Some(0.105),
            context_percent: Some(6.75),
        },
        Case {
            api: "anthropic",
            model: "claude-haiku-4-5",
            config: "",
            // 1000×1 + 500×5 + 2000×1.25 + 10000×0.10 = 7,000 µ$
            call_usd: Some(0.007),
            context_percent: Some(6.75),
        },
        Case {
            api: "anthropic",
            model: "claude-sonnet-4-5",
            config: "[prices.\"claude-sonnet-4-5\"]\ninput = 1.0\noutput = 1.0\ncache_write = 1.0\ncache_read = 1.0\n",
            // 13,500 tokens at 1 $/MTok: the user's price wins.
            call_usd: Some(0.0135),
            context_percent: Some(6.75),
        },
        Case {
            api: "anthropic",
            model: "my-local-model",
            config: "[prices.\"my-local-model\"]\ninput = 1.0\noutput = 2.0\n",
            // Cache prices unset: the input price. 1000 + 500×2 + 2000 + 10000.
            call_usd: Some(0.014),
            context_percent: None,
        },
        Case {
            api: "anthropic",
            model: "my-local-model",
            config: "",
            call_usd: None,
            context_percent: None,
        },
        Case {
            api: "anthropic",
            model: "my-local-model",
            config: "[context]\nwindow = 50000\n",
            // The window the user set counts, as compaction counts it.
            call_usd: None,
            context_percent: Some(13_500.0 * 100.0 / 50_000.0),
        },
        Case {
            api: "openai",
            model: "gpt-4.1",
            config: "",
            // OpenAI reports 11,000 prompt tokens of which 10,000 cached:
            // 1000×2 + 500×8 + 10000×0.50 = 11,000 µ$; window 1,047,576.
            call_usd: Some(0.011),
            context_percent: Some(11_500.0 * 100.0 / 1_047_576.0),
        },
    ];
    for case in cases {
        let dir = workspace(&[("a.txt", "hello\n")]);
        let config = dir.path().join(".no-user-config/bareagent");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.toml"), case.config).unwrap();
        let steps = || match case.api {
            "openai" => script(11_000, 500, 0, 10_000),
            _ => script(1_000, 500, 2_000, 10_000),
        };
        let server = ModelServer::start(steps());
        let (base, key) = match case.api {
            "openai" => (server.openai_base(), "OPENAI_API_KEY"),
            _ => (server.anthropic_base(), "ANTHROPIC_API_KEY"),
        };
        let out = bareagent(dir.path())
            .args(["run", "--json", "--provider", case.api, "--base-url", &base])
            .args(["--model", case.model])
            .env(key, TEST_KEY)
            .arg("read a.txt")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}: {stderr}", case.model);
        let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let usage: Vec<&Value> = events.iter().filter(|e| e["type"] == "usage").collect();
        let last = events.last().unwrap();
        assert_eq!(last["type"], "final");
        let what = format!("{} {:?}", case.model, case.config);
        match case.call_usd {
            Some(usd) => {
                assert_eq!(usage.len(), 2);
                assert!(
                    close(usage[0]["call_cost_usd"].as_f64().unwrap(), usd),
                    "{what}: {usage:?}"
                );
                assert!(
                    close(usage[1]["cost_usd"].as_f64().unwrap(), 2.0 * usd),
                    "{what}"
                );
                assert!(
                    close(last["cost_usd"].as_f64().unwrap(), 2.0 * usd),
                    "{what}: {last}"
                );
            }
            None => {
                assert!(usage[0]["call_cost_usd"].is_null(), "{what}");
                assert!(last["cost_usd"].is_null(), "{what}: never a guess of 0");
            }
        }
        match case.context_percent {
            Some(percent) => assert!(
                close(last["context_percent"].as_f64().unwrap(), percent),
                "{what}: {last}"
            ),
            None => assert!(last["context_percent"].is_null(), "{what}"),
        }
        // The terminal's line: the same figures for people.
        for step in steps() {
            server.push(step);
        }
        let out = bareagent(dir.path())
            .args(["run", "--provider", case.api, "--base-url", &base])
            .args(["--model", case.model])
            .env(key, TEST_KEY)
            .arg("read a.txt")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.lines().last().unwrap_or_default();
        assert!(out.status.success(), "{what}: {stderr}");
        let shown = |line: &str| match case.call_usd {
            Some(usd) => assert!(line.contains(&format!("${:.4}", 2.0 * usd)), "{line}"),
            None => assert!(line.contains("cost unknown"), "{line}"),
        };
        shown(line);
        // The session list: both runs' sessions, at the same figure (read
        // back from their files).
        let listed = bareagent(dir.path()).arg("sessions").output().unwrap();
        let listed = String::from_utf8_lossy(&listed.stdout);
        assert_eq!(listed.lines().count(), 2, "{what}: {listed}");
        listed.lines().for_each(shown);
    }
}
