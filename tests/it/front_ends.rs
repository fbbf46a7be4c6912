//! The three front ends behave alike where they used to drift apart (issue
//! 20): each is the same session core behind its own transport, so a retry
//! is told, the sandbox's state is said, the iteration cap and the idle
//! timeout hold, idle compaction sends what a turn sends, and a sub-agent's
//! edit is counted — in `bareagent run`, the language server and
//! `bareagent acp` alike. The real binary over real stdio, against the
//! scripted model server.

use std::path::Path;

use serde_json::{Value, json};

use crate::acp::{drive, of_type, python};
use crate::common::{bareagent, run_against_model, user_config, workspace};
use crate::compaction::{SUMMARY, big_file, is_summary, reads};
use crate::lsp::{LONG, ask, events_of, is_event, options, requests_of, start, turn_end};
use crate::support::model_server::{Fault, ModelServer, Reply, Step};

/// Where a turn runs.
#[derive(Clone, Copy, Debug)]
enum FrontEnd {
    Run,
    Lsp,
    Acp,
}

/// The settings a turn is given, each in its front end's own words.
#[derive(Clone, Copy, Debug, Default)]
struct Given {
    max_iterations: Option<usize>,
    idle_timeout_secs: Option<u64>,
}

/// What the user saw of one turn: the words the front end showed them
/// (notices, the answer, the error), and how the turn ended (`Ok`: it
/// answered; `Err`: what the front end said went wrong — for ACP a stop
/// reason other than `end_turn`, or the error the prompt was answered with).
struct Seen {
    told: String,
    end: Result<(), String>,
}

/// One prompt in `front` against `server`, in `dir`; `None` when the ACP
/// SDK is missing (the test skips, as the ACP suite does).
fn one_turn(front: FrontEnd, dir: &Path, server: &ModelServer, given: Given) -> Option<Seen> {
    const PROMPT: &str = "go on";
    match front {
        FrontEnd::Run => {
            let mut command = bareagent(dir);
            run_against_model(&mut command, server).args(["--permission-mode", "bypass"]);
            if let Some(cap) = given.max_iterations {
                command.args(["--max-iterations", &cap.to_string()]);
            }
            if let Some(secs) = given.idle_timeout_secs {
                command.args(["--idle-timeout", &secs.to_string()]);
            }
            let out = command.arg(PROMPT).output().expect("bareagent run");
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let told = format!("{}{stderr}", String::from_utf8_lossy(&out.stdout));
            let end = if out.status.success() {
                Ok(())
            } else {
                Err(stderr)
            };
            Some(Seen { told, end })
        }
        FrontEnd::Lsp => {
            let mut options = options(dir, server, "bypass");
            let editor = &mut options.initialization_options;
            if let Some(cap) = given.max_iterations {
                editor["maxIterations"] = json!(cap);
            }
            if let Some(secs) = given.idle_timeout_secs {
                editor["idleTimeoutSecs"] = json!(secs);
            }
            let client = start(dir, options);
            let turn = ask(&client, json!({"prompt": PROMPT}))["turn"]
                .as_u64()
                .expect("a turn");
            let end = turn_end(&client, turn);
            let notices: String = events_of(&client, "notice")
                .iter()
                .map(|notice| format!("{}\n", notice["text"].as_str().unwrap_or_default()))
                .collect();
            let chat = std::fs::read_to_string(dir.join(".bareagent/chat.md")).expect("chat");
            let end = match end["type"].as_str() {
                Some("turn_finished") => Ok(()),
                _ => Err(end["message"].as_str().unwrap_or_default().to_string()),
            };
            Some(Seen {
                told: format!("{notices}\n{chat}"),
                end,
            })
        }
        FrontEnd::Acp => {
            let python = python()?;
            let mut args = Vec::new();
            if let Some(cap) = given.max_iterations {
                args.extend(["--max-iterations".to_string(), cap.to_string()]);
            }
            if let Some(secs) = given.idle_timeout_secs {
                args.extend(["--idle-timeout".to_string(), secs.to_string()]);
            }
            let root = dir.canonicalize().expect("root");
            let transcript = drive(
                &python,
                &root,
                server,
                json!({
                    "fs": true, "agent_args": args,
                    "steps": [{"new": {}}, {"prompt": PROMPT}],
                }),
            );
            let told = said(&transcript);
            let end = match (
                of_type(&transcript, "prompt_response").first(),
                of_type(&transcript, "error").first(),
            ) {
                (Some(response), _) => match response["response"]["stopReason"].as_str() {
                    Some("end_turn") => Ok(()),
                    other => Err(format!("stop reason {other:?}")),
                },
                (None, Some(error)) => Err(error.to_string()),
                (None, None) => panic!("the prompt was not answered: {transcript:#?}"),
            };
            Some(Seen { told, end })
        }
    }
}

/// What the ACP agent said to the user: its message chunks, in order.
fn said(transcript: &[Value]) -> String {
    of_type(transcript, "update")
        .into_iter()
        .filter(|e| e["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|e| e["update"]["content"]["text"].as_str())
        .collect()
}

const ALL: [FrontEnd; 3] = [FrontEnd::Run, FrontEnd::Lsp, FrontEnd::Acp];

/// Runs `check` in every front end; fails naming each front end it failed
/// in, not only the first.
fn in_every_front_end(check: impl Fn(FrontEnd) -> Result<(), String>) {
    let failed: Vec<String> = ALL
        .into_iter()
        .filter_map(|front| check(front).err().map(|why| format!("{front:?}: {why}")))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// `Err(why)` unless `holds`.
fn expect(holds: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if holds { Ok(()) } else { Err(why()) }
}

/// A model call answered 429 once is retried, and every front end tells
/// the user so: `run` on stderr, the language server as a `notice` event
/// and a line in the chat file, ACP as an agent message. (Before the one
/// core only `run` did; the others retried in silence.)
#[test]
fn every_front_end_tells_of_a_retry() {
    in_every_front_end(|front| {
        let dir = workspace(&[]);
        let server = ModelServer::start(vec![
            // `retry-after: 0`: the retry comes at once.
            Fault::RateLimited {
                retry_after_secs: 0,
            }
            .into(),
            Reply::text("answered after all").into(),
        ]);
        let Some(seen) = one_turn(front, dir.path(), &server, Given::default()) else {
            return Ok(());
        };
        expect(seen.end.is_ok(), || format!("failed: {:?}", seen.end))?;
        let requests = server.requests().len();
        expect(requests == 2, || {
            format!("{requests} requests, not one retry")
        })?;
        expect(
            seen.told
                .contains("retrying in 0.0 s (attempt 2/4): HTTP 429"),
            || format!("the retry is not told: {}", seen.told),
        )?;
        if let FrontEnd::Lsp = front {
            let chat =
                std::fs::read_to_string(dir.path().join(".bareagent/chat.md")).expect("chat");
            expect(chat.contains("- _retrying in 0.0 s"), || {
                format!("not in the chat file: {chat}")
            })?;
        }
        Ok(())
    });
}

/// With the sandbox off (the user's `[sandbox] mode = "off"`), `bareagent
/// acp` says so in its first prompt's updates — its bypass mode promises
/// commands stay in the sandbox — and only there, not at every prompt.
#[test]
fn acp_says_when_the_sandbox_is_not_enforced() {
    let Some(python) = python() else { return };
    let dir = workspace(&[]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![
        Reply::text("first").into(),
        Reply::text("second").into(),
    ]);
    let transcript = drive(
        &python,
        &root,
        &server,
        json!({
            "user_config": "[sandbox]\nmode = \"off\"\n",
            "steps": [{"new": {}}, {"prompt": "one"}, {"prompt": "two"}],
        }),
    );
    let notice = "_sandbox off (sandbox.mode = \"off\"): commands run with the agent's own rights_";
    let first_answer = transcript
        .iter()
        .position(|e| e["type"] == "prompt_response")
        .expect("the first prompt answered");
    assert!(
        said(&transcript[..first_answer]).contains(notice),
        "not in the first prompt's updates: {transcript:#?}"
    );
    assert_eq!(
        said(&transcript).matches(notice).count(),
        1,
        "said once: {transcript:#?}"
    );
}

/// The iteration cap, from each front end's own setting (`--max-iterations`,
/// the editor's `maxIterations`), ends a turn whose model keeps calling
/// tools after two calls, saying so.
#[test]
fn every_front_end_takes_the_iteration_cap_from_its_setting() {
    in_every_front_end(|front| {
        let dir = workspace(&[("a.txt", "a\n")]);
        // More tool calls than the cap: past it the script would run out.
        let server = ModelServer::start(
            (0..3)
                .map(|_| Reply::tool("read_file", json!({"path": "a.txt"})).into())
                .collect(),
        );
        let given = Given {
            max_iterations: Some(2),
            ..Given::default()
        };
        let Some(seen) = one_turn(front, dir.path(), &server, given) else {
            return Ok(());
        };
        let requests = server.requests().len();
        expect(requests == 2, || format!("{requests} model calls, not 2"))?;
        let error = seen.end.err().unwrap_or_default();
        let expected = match front {
            FrontEnd::Acp => "stop reason Some(\"max_turn_requests\")",
            FrontEnd::Run | FrontEnd::Lsp => "reached its cap of 2 iterations",
        };
        expect(error.contains(expected), || {
            format!("not ended by the cap: {error:?}")
        })
    });
}

/// The idle timeout, from each front end's own setting (`--idle-timeout`,
/// the editor's `idleTimeoutSecs`), fails a model call whose stream goes
/// silent: after 1 s, not after the 6 s the model server waits (then the
/// reply would complete and the turn succeed).
#[test]
fn every_front_end_takes_the_idle_timeout_from_its_setting() {
    in_every_front_end(|front| {
        let dir = workspace(&[]);
        let server = ModelServer::start(vec![
            Fault::Stall {
                reply: Reply::text("a slow answer"),
                after_text: true,
                secs: 6,
            }
            .into(),
        ]);
        let given = Given {
            idle_timeout_secs: Some(1),
            ..Given::default()
        };
        let Some(seen) = one_turn(front, dir.path(), &server, given) else {
            return Ok(());
        };
        let error = seen.end.err().unwrap_or_default();
        expect(error.contains("no data for 1 s (idle timeout)"), || {
            format!("not failed by the idle timeout: {error:?}")
        })
    });
}

/// `bareagent.compact` on an idle language-server session asks for the
/// summary with the system prompt and the tools the session's turns send:
/// the project's instructions in the one, the MCP servers' tools in the
/// other (before the one core it sent the bare editor prompt and our tools
/// alone, so the provider's prompt cache missed).
#[test]
fn idle_compaction_sends_the_turns_system_prompt_and_tools() {
    let Some(everything) = crate::mcp::everything() else {
        return;
    };
    let dir = workspace(&[
        ("big.txt", &big_file()),
        ("AGENTS.md", "Answer in haiku.\n"),
    ]);
    let mut script: Vec<Step> = reads(4);
    script.push(Reply::text("read it").into());
    let server = ModelServer::start(script);
    server.answer_matching(is_summary, Reply::text(SUMMARY));
    let mut options = options(dir.path(), &server, "bypass");
    options.initialization_options["mcp"] = json!({"servers": {
        "everything": {"command": everything, "args": ["stdio"]},
    }});
    // The editor answers the `code` tool: the turn offers it.
    options.initialization_options["codeIntelligence"] = json!(true);
    let client = start(dir.path(), options);
    let turn = ask(&client, json!({"prompt": "read big.txt"}))["turn"]
        .as_u64()
        .expect("a turn");
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    let answer = client
        .execute("bareagent.compact", json!([]))
        .expect("compact answers");
    assert_eq!(answer["when"], "now", "{answer}");
    client.wait_for_notification(LONG, "the compaction", |m, p| is_event(m, p, "compacted"));

    let requests = server.requests();
    let turns: Vec<&Value> = requests
        .iter()
        .map(|r| &r.body)
        .filter(|b| !is_summary(b))
        .collect();
    let summaries: Vec<&Value> = requests
        .iter()
        .map(|r| &r.body)
        .filter(|b| is_summary(b))
        .collect();
    assert_eq!(summaries.len(), 1, "one summary call");
    // The turn's last request: the MCP server's tools had joined by then.
    let (turn, summary) = (turns[turns.len() - 1], summaries[0]);
    assert!(
        turn["system"].to_string().contains("Answer in haiku."),
        "the turn has the instructions: {}",
        turn["system"]
    );
    assert!(
        turn["tools"].to_string().contains("mcp__everything__echo")
            && turn["tools"].to_string().contains("\"name\":\"code\""),
        "the turn has the MCP tools and the editor's code: {}",
        turn["tools"]
    );
    assert_eq!(summary["system"], turn["system"], "the same system prompt");
    assert_eq!(summary["tools"], turn["tools"], "the same tools");
}

/// A sub-agent's edit (the model hands the change to `task`) is in the
/// chat file's footer, counted as the main agent's own would be: the core
/// counts `FileChanged`, which reaches the turn from a sub-agent too.
#[test]
fn a_sub_agents_edit_is_in_the_chat_footer() {
    let dir = workspace(&[("greet.py", "print('helo')\n")]);
    let server = ModelServer::start(vec![
        Reply::tool(
            "task",
            json!({"description": "fix the typo", "prompt": "fix the typo in greet.py", "kind": "general"}),
        )
        .into(),
        // The sub-agent's calls: it reads the file, then edits it.
        Reply::tool("read_file", json!({"path": "greet.py"})).into(),
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": "helo", "new_string": "hello"}),
        )
        .into(),
        Reply::text("fixed greet.py").into(),
        // The main agent's answer.
        Reply::text("the sub-agent fixed it").into(),
    ]);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    let turn = ask(&client, json!({"prompt": "fix greet.py"}))["turn"]
        .as_u64()
        .expect("a turn");
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    // The sub-agent's edit went to the editor, as the main agent's would.
    let edits = requests_of(&client, "workspace/applyEdit");
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert!(edits[0].to_string().contains("print('hello')"), "{edits:?}");
    let chat = std::fs::read_to_string(dir.path().join(".bareagent/chat.md")).expect("chat");
    assert!(chat.contains("**Edited:** `greet.py` (+1 −1)"), "{chat}");
}

/// A retry of an idle compaction's summary call is told too (a `notice`
/// event of no turn), not kept for the next turn and dropped there.
#[test]
fn an_idle_compactions_retry_is_told() {
    let dir = workspace(&[("big.txt", &big_file())]);
    let mut script: Vec<Step> = reads(4);
    script.push(Reply::text("read it").into());
    script.push(
        Fault::RateLimited {
            retry_after_secs: 0,
        }
        .into(),
    );
    script.push(Reply::text(SUMMARY).into());
    let server = ModelServer::start(script);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    let turn = ask(&client, json!({"prompt": "read big.txt"}))["turn"]
        .as_u64()
        .expect("a turn");
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    let answer = client
        .execute("bareagent.compact", json!([]))
        .expect("compact answers");
    assert_eq!(answer["when"], "now", "{answer}");
    let told = client.wait_for_notification(LONG, "the retry's notice", |m, p| {
        is_event(m, p, "notice")
            && p["text"]
                .as_str()
                .is_some_and(|t| t.contains("retrying in 0.0 s"))
    });
    assert!(told["turn"].is_null(), "{told}");
    client.wait_for_notification(LONG, "the compaction", |m, p| is_event(m, p, "compacted"));
}

/// Files an MCP tool changed are counted as the file tools' edits are, in
/// every front end: mcp-server-git's `git_checkout` rewrites one file and
/// adds another, and emits no `FileChanged` (it is not our file tool); the
/// look at the workspace around the call finds both. `run` says so on
/// stderr, the language server in the chat file's footer, ACP as the
/// call's locations.
#[test]
fn an_mcp_tools_changes_are_counted_in_every_front_end() {
    let Some(program) = crate::mcp::git_server() else {
        return;
    };
    const TOOL: &str = "mcp__git__git_checkout";
    in_every_front_end(|front| {
        let dir = workspace(&[("greet.py", "print('helo')\n")]);
        let root = dir.path().canonicalize().expect("root");
        let git = |args: &[&str]| crate::mcp::git(&root, args);
        git(&["init", "-q"]);
        git(&["add", "greet.py"]);
        git(&["commit", "-qm", "first"]);
        git(&["checkout", "-qb", "fix"]);
        std::fs::write(root.join("greet.py"), "print('hello')\n").expect("write");
        std::fs::write(root.join("NEW.md"), "new\n").expect("write");
        git(&["add", "greet.py", "NEW.md"]);
        git(&["commit", "-qm", "fix"]);
        git(&["checkout", "-q", "-"]);
        let server = ModelServer::start(vec![
            Reply::tool(TOOL, json!({"repo_path": root, "branch_name": "fix"})).into(),
            Reply::text("checked out").into(),
        ]);
        let server_args = json!(["--repository", root]);
        let told = match front {
            FrontEnd::Run => {
                let toml = format!(
                    "[mcp.servers.git]\ncommand = {}\nargs = {server_args}\n",
                    json!(program)
                );
                user_config(&root, &toml);
                let out = run_against_model(&mut bareagent(&root), &server)
                    .args(["--permission-mode", "bypass", "check out fix"])
                    .output()
                    .expect("bareagent run");
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                expect(out.status.success(), || stderr.clone())?;
                let want = [
                    format!("(NEW.md created while {TOOL} ran)"),
                    format!("(greet.py modified while {TOOL} ran)"),
                ];
                expect(want.iter().all(|line| stderr.contains(line)), || {
                    format!("{want:?} on stderr: {stderr}")
                })?;
                stderr
            }
            FrontEnd::Lsp => {
                let mut options = options(&root, &server, "bypass");
                options.initialization_options["mcp"] = json!({"servers": {
                    "git": {"command": program, "args": server_args},
                }});
                let client = start(&root, options);
                let turn = ask(&client, json!({"prompt": "check out fix"}))["turn"]
                    .as_u64()
                    .expect("a turn");
                let end = turn_end(&client, turn);
                expect(end["type"] == "turn_finished", || end.to_string())?;
                let chat = std::fs::read_to_string(root.join(".bareagent/chat.md")).expect("chat");
                let want = format!(
                    "**Edited:** `NEW.md` (created while `{TOOL}` ran), \
                     `greet.py` (modified while `{TOOL}` ran)"
                );
                expect(chat.contains(&want), || {
                    format!("{want} in the chat: {chat}")
                })?;
                chat
            }
            FrontEnd::Acp => {
                let Some(python) = python() else {
                    return Ok(());
                };
                let transcript = drive(
                    &python,
                    &root,
                    &server,
                    json!({"fs": true, "steps": [
                        {"new": {"mcp": [{"name": "git", "command": program, "args": server_args}]}},
                        {"set_mode": "bypass"},
                        {"prompt": "check out fix"},
                    ]}),
                );
                let located: Vec<&Value> = of_type(&transcript, "update")
                    .into_iter()
                    .filter(|e| e["update"]["sessionUpdate"] == "tool_call_update")
                    .filter_map(|e| e["update"].get("locations"))
                    .collect();
                let want = json!([
                    {"path": root.join("NEW.md")},
                    {"path": root.join("greet.py")},
                ]);
                expect(located.last() == Some(&&want), || {
                    format!("the call's locations {want}: {located:?}")
                })?;
                format!("{located:?}")
            }
        };
        // The checkout happened: what was counted is what the tool did.
        let greet = std::fs::read_to_string(root.join("greet.py")).expect("greet.py");
        expect(greet == "print('hello')\n", || format!("{greet:?}; {told}"))
    });
}

/// The effort set in each front end's own words reaches the model request
/// (`output_config.effort` on Anthropic's wire), over a lower layer that
/// says another: `run`'s `--effort` over config.toml's, the language
/// server's `bareagent.setEffort` over the editor's setting, an ACP
/// client's `session/set_config_option` over config.toml's. (`chat`'s
/// `/effort` is tested with the chat, tests/it/chat.rs.)
#[test]
fn the_effort_each_front_end_sets_reaches_the_request() {
    // A model that takes every level from low to max (provider::models).
    const MODEL: &str = "claude-opus-4-6";
    let files = format!("model = \"{MODEL}\"\neffort = \"low\"\n");
    in_every_front_end(|front| {
        let dir = workspace(&[]);
        let root = dir.path().canonicalize().expect("root");
        let server = ModelServer::start(vec![Reply::text("done").into()]);
        match front {
            FrontEnd::Run => {
                user_config(&root, &files);
                let out = run_against_model(&mut bareagent(&root), &server)
                    .args(["--effort", "high", "go on"])
                    .output()
                    .expect("bareagent run");
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                expect(out.status.success(), || stderr)?;
            }
            FrontEnd::Lsp => {
                let mut options = options(&root, &server, "bypass");
                options.initialization_options["model"] = json!(MODEL);
                options.initialization_options["effort"] = json!("low");
                let client = start(&root, options);
                let set = client
                    .execute("bareagent.setEffort", json!([{"effort": "high"}]))
                    .map_err(|error| error.to_string())?;
                expect(set["current"]["effort"] == "high", || set.to_string())?;
                let turn = ask(&client, json!({"prompt": "go on"}))["turn"]
                    .as_u64()
                    .expect("a turn");
                let end = turn_end(&client, turn);
                expect(end["type"] == "turn_finished", || end.to_string())?;
            }
            FrontEnd::Acp => {
                let Some(python) = python() else {
                    return Ok(());
                };
                let transcript = drive(
                    &python,
                    &root,
                    &server,
                    json!({"fs": true, "user_config": files, "steps": [
                        {"new": {}},
                        {"set_config": ["effort", "high"]},
                        {"prompt": "go on"},
                    ]}),
                );
                let offered = of_type(&transcript, "session");
                let shown = offered
                    .first()
                    .map(|s| s["response"]["configOptions"][0]["currentValue"].clone());
                expect(shown == Some(json!("low")), || {
                    format!("session/new offers the files' effort: {offered:?}")
                })?;
                let set = of_type(&transcript, "config_set");
                let now = set
                    .first()
                    .map(|s| s["response"]["configOptions"][0]["currentValue"].clone());
                expect(now == Some(json!("high")), || format!("{set:?}"))?;
            }
        }
        let requests = server.requests();
        let sent = requests.first().map(|r| r.body.clone()).unwrap_or_default();
        expect(sent["model"] == MODEL, || format!("the model: {sent}"))?;
        expect(sent["output_config"]["effort"] == "high", || {
            format!("the effort in the request: {sent}")
        })
    });
}
