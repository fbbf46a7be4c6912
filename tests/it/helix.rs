//! What Helix relies on, through the LSP test client speaking as Helix does
//! (no registry ships a Helix binary): its real client capabilities, the
//! JSON-value arguments of `:lsp-workspace-command`, command results ignored,
//! and the two approval paths of its versions — releases up to 25.07.1 answer
//! `window/showMessageRequest` with -32601, so approvals go through code
//! actions and typed commands; master shows the dialog as a picker.
//! Also the `editors/helix/all-languages` generator, run with python3 (with
//! tests/fixtures/helix/fake-hx printing `hx --health` as Helix does).
//!
//! The fixtures under tests/fixtures/helix/ are Helix's `initialize`
//! capabilities and clientInfo, written from helix-lsp/src/client.rs
//! (`Client::initialize`) of helix-editor/helix at tag 25.07.1 (commit
//! a05c151bb6e8e9c65ec390b0ae2afe7a5efd619b) and at master commit
//! 079a789e8cb08ead67f19e1971a1b7438b37354b (2026-07-23), serialized the way
//! helix-lsp-types does (camelCase, unset options left out).

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::workspace;
use crate::lsp::{
    LONG, ON_DISK, UNSAVED, ask, binary, events_of, options, requests_of, start, turn_end,
};
use crate::support::lsp_client::{ClientOptions, LspClient, MessageRequestAnswer};
use crate::support::model_server::{ModelServer, Reply, Step};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/helix")
        .join(name)
}

/// Helix's `initialize` params from a fixture: every key but the `_` notes.
fn helix_initialize(version: &str) -> serde_json::Map<String, Value> {
    let path = fixture(&format!("initialize-{version}.json"));
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let Value::Object(mut params) = serde_json::from_str(&text).expect("fixture is JSON") else {
        panic!("{}: not an object", path.display());
    };
    params.retain(|key, _| !key.starts_with('_'));
    params
}

/// What `:lsp-workspace-command NAME REST` sends as `arguments` in Helix
/// 25.07 and master (helix-term/src/commands/typed.rs): REST is taken raw and
/// read as a stream of JSON values; nothing typed means no arguments. Helix
/// refuses to send anything when REST is not JSON.
fn typed_command(line: &str) -> Result<Value, String> {
    let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
    let arguments = serde_json::Deserializer::from_str(rest.trim_start())
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("failed to parse arguments: {e}"))?;
    let mut params = json!({"command": command});
    if !arguments.is_empty() {
        params["arguments"] = Value::Array(arguments);
    }
    Ok(params)
}

/// A diagnostic of another server of greet.py, as Helix passes it on.
fn pyright_nme() -> Value {
    json!({
        "range": {"start": {"line": 1, "character": 23}, "end": {"line": 1, "character": 26}},
        "severity": 1, "code": "reportUndefinedVariable", "source": "Pyright",
        "message": "\"nme\" is not defined",
    })
}

/// Runs a command the way Helix does: sent, and its result never read.
fn run_ignoring_result(client: &LspClient, params: Value) {
    client.request_async("workspace/executeCommand", params);
}

/// Three edits of greet.py after reading it, so one turn asks three times.
const EDITS: [(&str, &str); 3] = [
    ("+ nme", "+ name"),
    ("# unsaved", "# fixed"),
    ("def greet(name):", "def greet(name: str):"),
];
const FIXED: &str = "def greet(name: str):\n    return 'Hello, ' + name  # fixed\n";

fn three_edits() -> Vec<Step> {
    let mut steps = vec![Reply::tool("read_file", json!({"path": "greet.py"})).into()];
    for (old, new) in EDITS {
        steps.push(
            Reply::tool(
                "edit_file",
                json!({"path": "greet.py", "old_string": old, "new_string": new}),
            )
            .into(),
        );
    }
    steps.push(Reply::text("Fixed greet.py.").into());
    steps
}

fn helix_client(
    version: &str,
    dir: &Path,
    server: &ModelServer,
    answers: Vec<MessageRequestAnswer>,
) -> LspClient {
    start(dir, helix_options(version, dir, server, answers))
}

/// The test client set up as Helix `version` ("25.07.1" or "master").
fn helix_options(
    version: &str,
    dir: &Path,
    server: &ModelServer,
    answers: Vec<MessageRequestAnswer>,
) -> ClientOptions {
    let mut opts: ClientOptions = options(dir, server, "default");
    opts.initialize_overrides = helix_initialize(version);
    opts.message_answers = answers;
    // What each Helix answers once the scripted answers are used up.
    opts.default_message_answer = match version {
        "25.07.1" => MessageRequestAnswer::MethodNotFound,
        _ => MessageRequestAnswer::Null, // the picker closed with Esc
    };
    opts
}

/// The ids of the pending approvals, from `bareagent.status`.
fn pending(client: &LspClient) -> Vec<u64> {
    let status = client
        .request(
            "workspace/executeCommand",
            json!({"command": "bareagent.status"}),
        )
        .unwrap_or_default();
    status["pendingApprovals"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["id"].as_u64())
        .collect()
}

/// The id of a pending approval not in `done`, once there is one.
fn wait_for_pending(client: &LspClient, done: &[u64]) -> u64 {
    let found = Cell::new(None);
    client.wait_until(LONG, "a new pending approval", |c| {
        found.set(pending(c).into_iter().find(|id| !done.contains(id)));
        found.get().is_some()
    });
    found.get().expect("found")
}

/// The edits of greet.py the server sent through `workspace/applyEdit`.
fn applied_edits_of(client: &LspClient, uri: &str) -> usize {
    requests_of(client, "workspace/applyEdit")
        .iter()
        .filter(|p| {
            p["edit"]["documentChanges"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|change| change["textDocument"]["uri"] == uri)
        })
        .count()
}

#[test]
fn helix_25_07_approves_through_code_actions_and_typed_commands() {
    let dir = workspace(&[("greet.py", ON_DISK)]);
    let server = ModelServer::start(three_edits());
    let client = helix_client("25.07.1", dir.path(), &server, Vec::new());
    let greet = client.open("greet.py", UNSAVED);
    // `:lsp-workspace-command bareagent.ask "fix greet.py"`
    let ask = typed_command(r#"bareagent.ask "fix greet.py""#).unwrap();
    assert_eq!(ask["arguments"], json!(["fix greet.py"]));
    let answer = client
        .request("workspace/executeCommand", ask)
        .expect("ask answers at once");
    let turn = answer["turn"].as_u64().expect("a turn number");

    // 1. `space a` in greet.py, the cursor on `nme`: the code actions of the
    // pending approval.
    let first = wait_for_pending(&client, &[]);
    // 25.07 advertises no `window.showMessage`, so the server shows no
    // dialog; were one sent, Helix's -32601 must leave the approval pending.
    if !requests_of(&client, "window/showMessageRequest").is_empty() {
        client.wait_until(LONG, "the -32601 to be judged", |c| {
            c.stderr().contains("it stays pending")
        });
    }
    assert_eq!(pending(&client), vec![first], "still pending");
    assert_eq!(
        client.text(&greet).unwrap(),
        UNSAVED,
        "nothing before the answer"
    );
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": greet},
                "range": {"start": {"line": 1, "character": 24}, "end": {"line": 1, "character": 24}},
                // As Helix sends it: every server's diagnostics under the
                // cursor (helix-term/src/commands/lsp.rs, code_action).
                "context": {"diagnostics": [pyright_nme()], "triggerKind": 1},
            }),
        )
        .expect("code actions");
    let action = |prefix: &str| -> Value {
        actions
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["title"].as_str().is_some_and(|t| t.starts_with(prefix)))
            .unwrap_or_else(|| panic!("no {prefix:?} action in {actions}"))["command"]
            .clone()
    };
    // Another server's diagnostic under the cursor can start a turn.
    action("Fix with agent: \"nme\" is not defined");
    // "Show diff" writes the whole diff and opens it: 25.07 handles
    // showDocument without advertising it (the server knows Helix by
    // name); the approval stays pending.
    run_ignoring_result(&client, action("Show diff: edit_file"));
    let diff_path = dir.path().join(format!(".bareagent/diffs/{first}.diff"));
    client.wait_until(LONG, "the diff file", |_| {
        std::fs::read_to_string(&diff_path)
            .is_ok_and(|d| d.contains("+    return 'Hello, ' + name"))
    });
    assert_eq!(
        wait_for_pending(&client, &[]),
        first,
        "still pending after Show diff"
    );
    let diff_uri = client.uri(&format!(".bareagent/diffs/{first}.diff"));
    client.wait_until(LONG, "the diff opened", |c| {
        requests_of(c, "window/showDocument")
            .iter()
            .any(|r| r["uri"] == diff_uri.as_str())
    });
    run_ignoring_result(&client, action("Allow: edit_file"));

    // 2. `:lsp-workspace-command bareagent.approve {"id":N}`. A wrong id
    // approves nothing (not the oldest instead): the answer, which Helix
    // drops, is awaited here only to know the server has handled it.
    let second = wait_for_pending(&client, &[first]);
    let wrong = typed_command(&format!(r#"bareagent.approve {{"id":{}}}"#, second + 100)).unwrap();
    assert!(client.request("workspace/executeCommand", wrong).is_err());
    assert_eq!(
        pending(&client),
        vec![second],
        "a wrong id approves nothing"
    );
    run_ignoring_result(
        &client,
        typed_command(&format!(r#"bareagent.approve {{"id":{second}}}"#)).unwrap(),
    );

    // 3. The keybinding's bare `:lsp-workspace-command bareagent.approve`:
    // no arguments, the oldest pending approval.
    let third = wait_for_pending(&client, &[first, second]);
    let bare = typed_command("bareagent.approve").unwrap();
    assert!(bare.get("arguments").is_none(), "{bare}");
    run_ignoring_result(&client, bare);

    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    assert_eq!(client.text(&greet).unwrap(), FIXED);
    assert_eq!(applied_edits_of(&client, &greet), 3);
    assert!(
        pending(&client).is_empty(),
        "{first} {second} {third} all answered"
    );
    assert_eq!(client.shutdown().code(), Some(0));
}

#[test]
fn helix_master_approves_in_the_picker_and_opens_the_diff() {
    let dir = workspace(&[("greet.py", ON_DISK)]);
    let server = ModelServer::start(three_edits());
    let pick = |title: &str| MessageRequestAnswer::Pick(title.to_string());
    let answers = vec![
        pick("Show diff"),
        pick("Allow once"),
        pick("Allow once"),
        pick("Allow once"),
    ];
    let client = helix_client("master", dir.path(), &server, answers);
    let greet = client.open("greet.py", UNSAVED);
    let turn = ask(&client, json!("fix greet.py"))["turn"]
        .as_u64()
        .expect("a turn number");

    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    assert_eq!(client.text(&greet).unwrap(), FIXED);
    assert_eq!(applied_edits_of(&client, &greet), 3);
    let dialogs = requests_of(&client, "window/showMessageRequest");
    // Show diff asks the same question again: four dialogs for three edits.
    assert_eq!(dialogs.len(), 4, "{dialogs:#?}");
    let shown = requests_of(&client, "window/showDocument");
    assert!(
        shown
            .iter()
            .any(|p| p["uri"].as_str().is_some_and(|u| u.ends_with(".diff"))),
        "master advertises showDocument: the diff is opened: {shown:?}"
    );
    assert_eq!(events_of(&client, "approval_requested").len(), 3);
    assert_eq!(client.shutdown().code(), Some(0));
}

#[test]
fn helix_refuses_typed_arguments_that_are_not_json() {
    // The README tells Helix users to quote a prompt; this is why.
    for (line, expected) in [
        (r#"bareagent.ask "fix the bug""#, Ok(json!(["fix the bug"]))),
        (
            r#"bareagent.ask {"prompt": "fix it"}"#,
            Ok(json!([{"prompt": "fix it"}])),
        ),
        ("bareagent.approve 3", Ok(json!([3]))),
        ("bareagent.ask fix the bug", Err(())),
    ] {
        let got = typed_command(line).map(|p| p["arguments"].clone());
        assert_eq!(got.map_err(|_| ()), expected, "{line}");
    }
}

// ---------------------------------------------------------------------------
// editors/helix/all-languages
// ---------------------------------------------------------------------------

/// Runs the generator on `user` and `builtin` (as Helix's languages.toml),
/// fixtures in tests/fixtures/helix/languages/; `user` None: a file that
/// does not exist.
fn generate(user: Option<&Path>, builtin: &Path) -> (i32, String, String) {
    let missing = std::env::temp_dir().join("bareagent-no-such-languages.toml");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/helix/all-languages");
    let out = Command::new("python3")
        .arg(&script)
        .arg("--builtin")
        .arg(builtin)
        .arg(user.unwrap_or(&missing))
        .env("PATH", "/usr/bin:/bin") // no hx: the built-in list comes from --builtin
        .output()
        .expect("run python3");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn languages_fixture(name: &str) -> PathBuf {
    fixture("languages").join(name)
}

/// Each language's `language-servers` in the generator's output, as Helix
/// reads them (TOML parsed, not text compared).
fn servers_by_language(output: &str) -> Vec<(String, Value)> {
    let parsed: toml::Table = toml::from_str(output)
        .unwrap_or_else(|e| panic!("the output is not TOML ({e}):\n{output}"));
    let languages = parsed
        .get("language")
        .and_then(|l| l.as_array())
        .cloned()
        .unwrap_or_default();
    languages
        .iter()
        .map(|l| {
            let name = l["name"].as_str().expect("name").to_string();
            let servers = serde_json::to_value(&l["language-servers"]).expect("to JSON");
            (name, servers)
        })
        .collect()
}

enum Expect {
    /// Exit 0, and these languages' `language-servers`, in this order.
    Servers(Vec<(&'static str, Value)>),
    /// Exit 2, nothing on stdout, and stderr names this fixture.
    Refused(&'static str),
}

struct GeneratorCase {
    what: &'static str,
    /// The user's languages.toml (a fixture's name); None: there is none.
    user: Option<&'static str>,
    /// Helix's built-in languages.toml (a fixture's name).
    builtin: &'static str,
    expect: Expect,
}

#[test]
fn all_languages_adds_bareagent_keeps_each_languages_servers_and_refuses_what_it_cannot_read() {
    use Expect::{Refused, Servers};
    let ts = || json!([{"name": "typescript-language-server", "except-features": ["format"]}, "bareagent"]);
    let case = |what, user, expect| GeneratorCase {
        what,
        user,
        builtin: "builtin.toml",
        expect,
    };
    let cases = [
        case(
            "no user file: Helix's servers, and a language without servers",
            None,
            Servers(vec![
                ("rust", json!(["rust-analyzer", "bareagent"])),
                ("python", json!(["ruff", "jedi", "pylsp", "bareagent"])),
                ("git-commit", json!(["bareagent"])),
                ("typescript", ts()),
            ]),
        ),
        case(
            "the user's servers win, their own language is kept, one already done is left out",
            Some("user-servers.toml"),
            Servers(vec![
                ("python", json!(["pyright", "bareagent"])),
                ("git-commit", json!(["bareagent"])),
                ("typescript", ts()),
                ("mylang", json!(["mylang-lsp", "bareagent"])),
            ]),
        ),
        case(
            "an entry without language-servers keeps Helix's; the last entry of a name wins",
            Some("user-last-entry-wins.toml"),
            Servers(vec![
                (
                    "rust",
                    json!([{"name": "rust-analyzer", "except-features": ["inlay-hints"]}, "bareagent"]),
                ),
                ("python", json!(["ruff", "jedi", "pylsp", "bareagent"])),
                ("git-commit", json!(["bareagent"])),
                ("typescript", ts()),
            ]),
        ),
        case(
            "an empty list in the user's file: no servers of its own",
            Some("user-empty-list.toml"),
            Servers(vec![
                ("rust", json!(["rust-analyzer", "bareagent"])),
                ("python", json!(["bareagent"])),
                ("git-commit", json!(["bareagent"])),
                ("typescript", ts()),
            ]),
        ),
        case(
            "not TOML",
            Some("bad-not-toml.toml"),
            Refused("bad-not-toml.toml"),
        ),
        case(
            "a language without a name",
            Some("bad-no-name.toml"),
            Refused("bad-no-name.toml"),
        ),
        case(
            "language-servers not a list",
            Some("bad-servers-not-a-list.toml"),
            Refused("bad-servers-not-a-list.toml"),
        ),
        case(
            "a server entry without a name",
            Some("bad-server-without-name.toml"),
            Refused("bad-server-without-name.toml"),
        ),
        case(
            "language not a list of tables",
            Some("bad-language-not-tables.toml"),
            Refused("bad-language-not-tables.toml"),
        ),
        case(
            "not UTF-8",
            Some("bad-not-utf8.toml"),
            Refused("bad-not-utf8.toml"),
        ),
        case(
            "`language` written inline, which appended [[language]] blocks would break",
            Some("bad-inline-language-array.toml"),
            Refused("bad-inline-language-array.toml"),
        ),
        GeneratorCase {
            what: "Helix's own list unreadable",
            user: None,
            builtin: "bad-builtin.toml",
            expect: Refused("bad-builtin.toml"),
        },
    ];
    for GeneratorCase {
        what,
        user,
        builtin,
        expect,
    } in cases
    {
        let user_path = user.map(languages_fixture);
        let (code, stdout, stderr) = generate(user_path.as_deref(), &languages_fixture(builtin));
        match expect {
            Refused(file) => {
                assert_eq!(code, 2, "{what}: exit code; stdout:\n{stdout}");
                assert!(stdout.is_empty(), "{what}: nothing printed: {stdout}");
                assert!(stderr.contains(file), "{what}: names {file}: {stderr}");
            }
            Servers(expected) => {
                assert_eq!(code, 0, "{what}: {stderr}");
                let expected: Vec<(String, Value)> = expected
                    .into_iter()
                    .map(|(name, servers)| (name.to_string(), servers))
                    .collect();
                assert_eq!(servers_by_language(&stdout), expected, "{what}:\n{stdout}");
                // The server's definition comes along when the user's file lacks it.
                let parsed: toml::Table = toml::from_str(&stdout).unwrap();
                let defines = parsed
                    .get("language-server")
                    .and_then(|s| s.get("bareagent"))
                    .is_some();
                let user_defines = user_path.as_ref().is_some_and(|path| {
                    std::fs::read_to_string(path)
                        .unwrap()
                        .contains("[language-server.bareagent]")
                });
                assert_eq!(defines, !user_defines, "{what}:\n{stdout}");
            }
        }
    }
}

/// Helix's languages from `hx --health`, as each version prints them
/// (tests/fixtures/helix/fake-hx): names too long for an 80-column table
/// must not arrive cut, and master's filtered `languages` list is not used.
#[test]
fn all_languages_reads_helix_health_without_cut_names() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(fixture("fake-hx"), bin.join("hx")).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/helix/all-languages");
    for version in ["25.07.1", "master"] {
        let out = Command::new("python3")
            .arg(&script)
            .arg(dir.path().join("no-such-languages.toml"))
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("FAKE_HX_VERSION", version)
            .output()
            .expect("run python3");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{version}: {stderr}");
        assert_eq!(
            servers_by_language(&stdout),
            vec![
                (
                    "a-rather-long-language-name".to_string(),
                    json!(["first-server", "second-server", "bareagent"])
                ),
                ("rust".to_string(), json!(["rust-analyzer", "bareagent"])),
                ("text".to_string(), json!(["bareagent"])),
            ],
            "{version}:\n{stdout}"
        );
    }
}

/// The shipped snippets: every key of config.toml runs a command the server
/// offers to Helix, and languages.toml defines the server once, with a
/// timeout longer than Helix's 20 s, in a shape the generator accepts.
#[test]
fn the_shipped_snippets_name_what_the_server_offers() {
    let helix_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/helix");
    let read = |name: &str| -> toml::Table {
        let text = std::fs::read_to_string(helix_dir.join(name)).expect("snippet");
        toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let config = read("config.toml");
    assert_eq!(
        config["editor"]["lsp"]["display-progress-messages"].as_bool(),
        Some(true)
    );
    let keys = config["keys"]["normal"]["space"]["B"]
        .as_table()
        .expect("space B");

    let dir = workspace(&[]);
    let server = ModelServer::start(Vec::new());
    let client = LspClient::start(
        binary(),
        helix_options("25.07.1", dir.path(), &server, Vec::new()),
    );
    let init = client.initialize();
    let offered: Vec<&str> = init
        .pointer("/capabilities/executeCommandProvider/commands")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (key, action) in keys {
        let line = action.as_str().expect("a typed command");
        let command = line
            .strip_prefix(":lsp-workspace-command ")
            .unwrap_or_else(|| panic!("space B {key}: {line}"));
        assert!(
            offered.contains(&command),
            "space B {key} runs {command}, which the server does not offer: {offered:?}"
        );
    }

    let languages = read("languages.toml");
    let definition = &languages["language-server"]["bareagent"];
    assert_eq!(definition["command"].as_str(), Some("bareagent"));
    assert!(definition["timeout"].as_integer().is_some_and(|t| t > 20));
    // The generator's definition of the server is the snippet's.
    let (code, stdout, stderr) = generate(None, &languages_fixture("builtin.toml"));
    assert_eq!(code, 0, "{stderr}");
    let generated: toml::Table = toml::from_str(&stdout).unwrap();
    assert_eq!(&generated["language-server"]["bareagent"], definition);
    let (code, stdout, stderr) = generate(
        Some(&helix_dir.join("languages.toml")),
        &languages_fixture("builtin.toml"),
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !servers_by_language(&stdout)
            .iter()
            .any(|(name, _)| name == "rust"),
        "rust already lists bareagent in the snippet:\n{stdout}"
    );
}
