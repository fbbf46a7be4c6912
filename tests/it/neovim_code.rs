//! The Neovim plugin answers `bareagent/codeIntelligence` from the language
//! servers attached to the file's buffer: a real headless Neovim with a real
//! pyright (`$BAREAGENT_LSP_BIN/pyright-langserver`) that the test's init
//! starts for python buffers, as a user's config does. Skipped without
//! `BAREAGENT_LSP_BIN` unless `BAREAGENT_REQUIRE_LSP=1`, and without
//! Neovim unless `BAREAGENT_REQUIRE_NVIM` (see tests/it/neovim.rs).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::common::{sent_tool_results, workspace};
use crate::neovim::nvim_or_skip;
use crate::neovim_plugin::{run_command, script_command};
use crate::support::model_server::{ModelServer, Reply};

/// The directory holding the test language servers, or `None` to skip.
fn lsp_bin_or_skip() -> Option<PathBuf> {
    match std::env::var_os("BAREAGENT_LSP_BIN") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => {
            crate::support::peers::missing(
                crate::support::peers::Peer::LanguageServers,
                "BAREAGENT_LSP_BIN is not set",
            );
            None
        }
    }
}

/// `PATH` with the language servers' directory first (pyright-langserver
/// runs on `node`).
fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).expect("PATH")
}

const CALC: &str = "def add(a: int, b: int) -> int:\n    return a + b\n";
/// Text search for `add` is wrong here: the comment and the string are no uses.
const MAIN: &str =
    "from calc import add\n\ntotal = add(1, 2)\n# add is not called here\nlabel = \"add\"\n";
const WIDE: &str = "é😀add\n";

/// The handler, called as Neovim calls it, answers from pyright: a file no
/// buffer held is loaded and pyright waited for; the references include the
/// call only in the unsaved buffer, not the comment or the string; hover
/// gives the inferred type; no server, or none supporting the method, is an
/// error saying so; workspace symbols start the server of the file named;
/// positions convert for a UTF-8 server; a server too slow is cancelled.
#[test]
fn neovim_answers_code_intelligence_from_the_attached_pyright() {
    let Some(nvim) = nvim_or_skip() else { return };
    let Some(lsp_bin) = lsp_bin_or_skip() else {
        return;
    };
    let dir = workspace(&[
        ("calc.py", CALC),
        ("main.py", MAIN),
        ("wide.txt", WIDE),
        ("notes.txt", "add things\n"),
        (".git/.keep", ""),
    ]);
    // No model is asked: the script's harness wants one to point at.
    let server = ModelServer::start(vec![]);
    let mut command = script_command(&nvim, "code_handler.lua", dir.path(), &server);
    command
        .env("PYRIGHT", lsp_bin.join("pyright-langserver"))
        .env("PATH", path_with(&lsp_bin));
    let run = run_command(command, dir.path());
    let stderr = &run.stderr;
    assert!(run.ok, "{stderr}");
    let line = |prefix: &str| {
        run.line(prefix)
            .unwrap_or_else(|| panic!("no {prefix}line: {stderr}"))
            .to_string()
    };
    // The import, the call, and the call only in the unsaved buffer (line 5).
    assert_eq!(
        line("REFERENCES "),
        "main.py:0:17 main.py:2:8 main.py:5:8",
        "{stderr}"
    );
    assert!(line("HOVER ").contains("total: int"), "{stderr}");
    assert!(
        line("NO SERVER ").contains("no language server is attached to notes.txt"),
        "{stderr}"
    );
    assert!(
        line("UNSUPPORTED ").contains("(pyright) supports textDocument/implementation"),
        "{stderr}"
    );
    assert!(line("SYMBOLS ").starts_with("table"), "{stderr}");
    // Through a server that counts in UTF-8: asked at byte 6, its range back
    // in UTF-16; one that does not answer in time is cancelled, and said so.
    assert_eq!(line("UTF8 "), "asked at 6, answered 3-6", "{stderr}");
    assert!(
        line("LATE ").contains("utf8-server: did not answer textDocument/definition in time"),
        "{stderr}"
    );
    // UTF-16 character 3 is UTF-8 byte 6, and back, wherever a range is.
    assert_eq!(line("PARAMS "), "6", "{stderr}");
    assert_eq!(line("LOCATION "), "3-6", "{stderr}");
    // A link's origin is in the asked file; its target in calc.py (ASCII).
    assert_eq!(line("LINK "), "3 4", "{stderr}");
    // The server's opaque data is left as it was.
    assert_eq!(line("CALL "), "3 3 data 6", "{stderr}");
    assert_eq!(line("EDIT "), "3", "{stderr}");
    // Figures for the closing note (never asserted).
    for took in stderr.lines().filter(|l| l.starts_with("TOOK ")) {
        eprintln!("{took}");
    }
}

/// The `code` tool in a turn, answered by the plugin from pyright: the
/// references of `add` (in calc.py, which no buffer held) list the call only
/// in main.py's unsaved buffer and not the comment or the string; hover
/// gives the inferred type; definition crosses the import; callers and
/// workspace symbols find it; rename lands in both buffers, the unsaved
/// call included. See tests/neovim/plugin_code.lua.
#[test]
fn neovim_answers_the_code_tool_from_pyright_on_an_unsaved_buffer() {
    let Some(nvim) = nvim_or_skip() else { return };
    let Some(lsp_bin) = lsp_bin_or_skip() else {
        return;
    };
    let dir = workspace(&[("calc.py", CALC), ("main.py", MAIN), (".git/.keep", "")]);
    let code = |input: serde_json::Value| Reply::tool("code", input).into();
    let server = ModelServer::start(vec![
        code(json!({"operation": "references", "path": "calc.py", "symbol": "add"})),
        code(json!({"operation": "hover", "path": "main.py", "symbol": "total"})),
        code(json!({"operation": "definition", "path": "main.py", "line": 3, "column": 9})),
        code(json!({"operation": "callers", "path": "calc.py", "symbol": "add"})),
        code(json!({"operation": "workspace_symbols", "symbol": "add", "path": "calc.py"})),
        code(
            json!({"operation": "rename", "path": "calc.py", "symbol": "add", "new_name": "plus"}),
        ),
        Reply::text("add is called twice.").into(),
    ]);
    let mut command = script_command(&nvim, "plugin_code.lua", dir.path(), &server);
    command
        .env("PYRIGHT", lsp_bin.join("pyright-langserver"))
        .env("PATH", path_with(&lsp_bin));
    let run = run_command(command, dir.path());
    assert!(run.ok, "{}", run.stderr);
    let requests = server.requests();
    let result = |n: usize| {
        sent_tool_results(&requests[n].body)
            .pop()
            .expect("a tool result")
    };
    let ok = |n: usize| {
        let (text, failed) = result(n);
        assert!(!failed, "{text}\n{}", run.stderr);
        text
    };
    let references = ok(1);
    assert!(
        references.contains("main.py\n")
            && references.contains("3:9  total = add(1, 2)")
            && references.contains("6:9  again = add(3, 4)"),
        "the saved call and the unsaved one: {references}"
    );
    assert!(
        !references.contains("not called here") && !references.contains("label"),
        "{references}"
    );
    assert!(ok(2).contains("total: int"), "{}", run.stderr);
    let definition = ok(3);
    assert!(
        definition.contains("calc.py\n") && definition.contains("1:5  def add("),
        "{definition}"
    );
    let callers = ok(4);
    assert!(
        callers.contains("3:9  total = add(1, 2)") && callers.contains("6:9  again = add(3, 4)"),
        "{callers}"
    );
    let symbols = ok(5);
    assert!(symbols.contains("calc.py"), "{symbols}");
    assert!(ok(6).contains("2 files"), "{}", run.stderr);
    assert_eq!(
        run.line("MAIN "),
        Some(
            "from calc import plus |  | total = plus(1, 2) | # add is not called here | label = \"add\" | again = plus(3, 4)"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.line("CALC ")
            .is_some_and(|calc| calc.starts_with("def plus(")),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("main.py")).expect("main.py"),
        MAIN
    );
}
