//! Project instructions: which `AGENTS.md`/`CLAUDE.md`/`BAREAGENT.md` reach
//! the system prompt, in what order and size, which are refused (a link
//! planted to make the agent read what it must not), and what
//! `bareagent.status` says was loaded.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use bareagent::agent::{InstructionFile, load_instructions};
use bareagent::permission::{DenyAll, PermissionGate, PermissionMode, RuleLists, RuleSet};
use bareagent::workspace::PathResolver;
use serde_json::json;

use crate::common::{bareagent, run_against_model, workspace};
use crate::lsp::{ask, options, start, turn_end, with_user_config};
use crate::support::model_server::{ModelServer, Reply};

const SECRET: &str = "TOP-SECRET-NOT-INSTRUCTIONS";

/// The system prompt the model was sent.
fn system_sent(server: &ModelServer) -> String {
    let requests = server.requests();
    requests[0].body["system"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn instructions_from_the_user_the_root_and_the_path_to_the_files_named_go_in_capped() {
    let big = "x".repeat(20 * 1024);
    let dir = workspace(&[
        (
            "AGENTS.md",
            "ROOT-AGENTS: run cargo test before you answer.",
        ),
        ("CLAUDE.md", &big),
        ("src/AGENTS.md", &"y".repeat(20 * 1024)),
        (
            "src/deep/BAREAGENT.md",
            "DEEP-BAREAGENT: keep functions short.",
        ),
        ("src/deep/x.rs", "fn x() {}\n"),
        (
            "other/AGENTS.md",
            "OTHER: not on the way to any file named.",
        ),
        (
            ".no-user-config/bareagent/AGENTS.md",
            "USER-AGENTS: answer in English.",
        ),
    ]);
    let server = ModelServer::start(vec![Reply::text("ok").into()]);
    let out = run_against_model(&mut bareagent(dir.path()), &server)
        .arg("Tidy `src/deep/x.rs`, please.")
        .output()
        .unwrap();
    crate::common::assert_succeeded(&out);
    let system = system_sent(&server);
    let at = |needle: &str| {
        system
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing from the system prompt"))
    };
    // The user's first, then the root's, then deeper: most specific last.
    assert!(at("USER-AGENTS") < at("ROOT-AGENTS"));
    assert!(at("ROOT-AGENTS") < at("<instructions file=\"CLAUDE.md\">"));
    assert!(at("<instructions file=\"CLAUDE.md\">") < at("<instructions file=\"src/AGENTS.md\">"));
    assert!(
        at("<instructions file=\"src/AGENTS.md\">")
            < at("<instructions file=\"src/deep/BAREAGENT.md\">")
    );
    assert!(
        !system.contains("OTHER:"),
        "not on the path to a file named"
    );
    // Each file cut at 16 KiB, all of them at 32 KiB, each cut said.
    assert!(system.contains(&format!("[cut: 16384 of {} bytes shown", 20 * 1024)));
    let kept_x = system.matches('x').count();
    let kept_y = system.matches('y').count();
    assert!((16 * 1024..16 * 1024 + 200).contains(&kept_x), "{kept_x}");
    assert!(kept_x + kept_y <= 32 * 1024 + 400, "{kept_x} + {kept_y}");
    assert!(
        system.contains("[cut: 0 of 37 bytes shown"),
        "over the total: said"
    );
}

/// A place outside the workspace holding something no instruction may bring in.
fn outside() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret.md"), SECRET).unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), SECRET).unwrap();
    dir
}

#[test]
fn a_planted_link_is_never_read_as_instructions() {
    let out = outside();
    let secret = out.path().join("secret.md");
    // (what is planted, where the prompt points, the file that must be
    // refused, the user's deny rules)
    type Plant = fn(&Path, &Path);
    let cases: Vec<(&str, Plant, &str, &str, &[&str])> = vec![
        (
            "the root's AGENTS.md links to /etc/passwd",
            |root, _| symlink("/etc/passwd", root.join("AGENTS.md")).unwrap(),
            "src/a.rs",
            "AGENTS.md",
            &[],
        ),
        (
            "a nested CLAUDE.md links outside",
            |root, secret| symlink(secret, root.join("src/CLAUDE.md")).unwrap(),
            "src/a.rs",
            "src/CLAUDE.md",
            &[],
        ),
        (
            "a directory on the path links outside",
            |root, secret| symlink(secret.parent().unwrap(), root.join("src/linked")).unwrap(),
            "src/linked/secret.md",
            "",
            &[],
        ),
        (
            "a link to a file inside the workspace",
            |root, _| symlink(root.join("README.md"), root.join("BAREAGENT.md")).unwrap(),
            "src/a.rs",
            "BAREAGENT.md",
            &[],
        ),
        (
            "a directory the user's deny rule hides",
            |root, _| {
                std::fs::create_dir_all(root.join("private")).unwrap();
                std::fs::write(root.join("private/AGENTS.md"), SECRET).unwrap();
            },
            "private/notes.txt",
            "private/AGENTS.md",
            &["read(private/**)"],
        ),
    ];
    for (name, plant, near, refused, deny) in cases {
        let dir = workspace(&[("src/a.rs", "fn a() {}\n"), ("README.md", SECRET)]);
        plant(dir.path(), &secret);
        let paths = PathResolver::new(dir.path()).unwrap();
        let rules = RuleLists {
            deny: deny.iter().map(|r| r.to_string()).collect(),
            ..RuleLists::default()
        };
        let gate = PermissionGate::new(PermissionMode::Default, Box::new(DenyAll("no".into())))
            .with_rules(RuleSet::from_lists(&rules).unwrap());
        let loaded = load_instructions(&paths, &gate, None, &[PathBuf::from(near)]);
        assert!(!loaded.prompt.contains(SECRET), "{name}: {}", loaded.prompt);
        assert!(!loaded.prompt.contains("root:x:0:0"), "{name}");
        if !refused.is_empty() {
            let entry = loaded
                .files
                .iter()
                .find(|f| f.path == refused)
                .unwrap_or_else(|| panic!("{name}: {refused} not named: {:?}", loaded.files));
            assert!(
                entry.refused.is_some() && entry.included == 0,
                "{name}: {entry:?}"
            );
        }
    }
}

#[test]
fn status_lists_the_instructions_the_last_turn_loaded() {
    let dir = workspace(&[
        ("AGENTS.md", "ROOT-AGENTS"),
        ("lib/CLAUDE.md", "LIB-CLAUDE"),
        ("lib/x.py", "x = 1\n"),
    ]);
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("bareagent")).unwrap();
    std::fs::write(home.path().join("bareagent/AGENTS.md"), "USER-AGENTS").unwrap();
    let server = ModelServer::start(vec![Reply::text("ok").into()]);
    let mut options = options(dir.path(), &server, "default");
    with_user_config(&mut options, home.path());
    let client = start(dir.path(), options);
    // Open in the editor, not named in the prompt: its directory counts.
    client.open("lib/x.py", "x = 1\n");
    let turn = ask(&client, json!("hello"))["turn"].as_u64().unwrap();
    let end = turn_end(&client, turn);
    assert_eq!(end["type"], "turn_finished", "{end}");
    let system = system_sent(&server);
    assert!(
        system.contains("LIB-CLAUDE") && system.contains("USER-AGENTS"),
        "{system}"
    );
    let status = client.execute("bareagent.status", json!([])).unwrap();
    let session = &status["sessions"][0];
    let files: Vec<InstructionFile> =
        serde_json::from_value(session["instructions"].clone()).unwrap();
    let names: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let user = home
        .path()
        .join("bareagent/AGENTS.md")
        .display()
        .to_string();
    assert_eq!(
        names,
        [user.as_str(), "AGENTS.md", "lib/CLAUDE.md"],
        "{status}"
    );
    assert!(
        files
            .iter()
            .all(|f| f.included == f.bytes && f.refused.is_none())
    );
    // The session's spend is there too, priced (the default model).
    assert!(session["spend"]["cost_usd"].as_f64().is_some(), "{status}");
}
