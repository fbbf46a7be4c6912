//! The registry: where each table of fault, bad-input and attack cases is,
//! and how its rows read as a case and an outcome.

use super::Category::{self, *};
use super::cells::*;
use crate::case_tables::{Part, Place};

/// A table read from the source.
pub struct Table {
    pub category: Category,
    pub file: &'static str,
    pub place: Place,
    /// The enum whose variants are the outcomes: their doc comments are
    /// the table's legend, and [`Row::outcome`] finds them in a row.
    pub outcomes: Option<&'static str>,
    pub case: fn(&Row) -> String,
    pub outcome: fn(&Row) -> String,
}

/// A table a test builds at run time, read as the values it holds.
pub struct Built {
    pub category: Category,
    pub file: &'static str,
    /// The places the scan finds in the file that this table is made of.
    pub covers: &'static [&'static str],
    pub test: &'static str,
    pub outcomes: Option<&'static str>,
    pub rows: fn() -> Vec<[String; 2]>,
}

/// The sandbox's tables: `case(name, command, on, …)`, outcome with the
/// sandbox on.
fn sandbox_case(row: &Row) -> String {
    format!("{}: {}", name(row.item(0)), value(row.item(1)))
}

fn sandbox_outcome(row: &Row) -> String {
    said(row.outcome())
}

/// A frame's (or a call's) case and its code, for tables of `(case, code)`.
fn first_as_code(row: &Row) -> String {
    value(row.item(0))
}

fn second_said(row: &Row) -> String {
    said(row.item(1))
}

/// Every table read from the source.
pub const TABLES: &[Table] = &[
    // ---- sandbox ----
    Table {
        category: Sandbox,
        file: "tests/it/sandbox.rs",
        place: Place::Returned("cases"),
        outcomes: Some("Expect"),
        case: sandbox_case,
        // `case(name, command, on, off, secret)`: the off run proves it is
        // the sandbox that stopped it.
        outcome: |row| {
            format!(
                "{}; with the sandbox off: {}",
                said(row.item(2)),
                said(row.item(3))
            )
        },
    },
    Table {
        category: Sandbox,
        file: "tests/it/sandbox.rs",
        place: Place::Let(
            "a_workspace_at_home_keeps_its_secrets_and_startup_files",
            "cases",
        ),
        outcomes: Some("Expect"),
        case: sandbox_case,
        outcome: sandbox_outcome,
    },
    Table {
        category: Sandbox,
        file: "tests/it/sandbox.rs",
        place: Place::Let(
            "an_agent_run_by_an_ordinary_user_protects_the_same",
            "cases",
        ),
        outcomes: Some("Expect"),
        case: sandbox_case,
        outcome: sandbox_outcome,
    },
    Table {
        category: Sandbox,
        file: "tests/it/sandbox.rs",
        place: Place::Let("a_command_has_no_terminal_to_type_into", "cases"),
        outcomes: Some("Expect"),
        case: sandbox_case,
        outcome: sandbox_outcome,
    },
    Table {
        category: Sandbox,
        file: "tests/it/sandbox.rs",
        place: Place::Let("a_read_deny_rule_is_enforced_by_the_kernel", "cases"),
        outcomes: Some("Expect"),
        case: sandbox_case,
        outcome: sandbox_outcome,
    },
    Table {
        category: Sandbox,
        file: "tests/it/acp.rs",
        place: Place::Let(
            "commands_allowed_without_asking_never_run_in_the_editors_terminal",
            "cases",
        ),
        outcomes: None,
        case: |row| name(row.item(0)),
        outcome: |row| {
            either(
                row.item(4),
                "runs in the editor's terminal",
                "runs in bareagent's own sandbox, never the editor's terminal",
            )
        },
    },
    Table {
        category: Sandbox,
        file: "src/sandbox/denial.rs",
        place: Place::Let(
            "refusals_are_explained_with_the_path_from_the_message",
            "cases",
        ),
        outcomes: None,
        case: first_as_code,
        outcome: |row| match row.item(1).head() {
            Some((none, _)) if none == "None" => "no explanation added".into(),
            _ => format!("explained: {}", said(row.item(1))),
        },
    },
    // ---- the permission gate ----
    Table {
        category: Gate,
        file: "tests/it/attacks.rs",
        place: Place::Let("a_session_answer_does_not_outlive_a_mode_switch", "rows"),
        outcomes: Some("Outcome"),
        case: |row| name(row.item(0)),
        outcome: |row| said(row.outcome()),
    },
    Table {
        category: Gate,
        file: "src/permission/rules.rs",
        place: Place::Let("rules_match_what_runs", "cases"),
        outcomes: None,
        case: |row| {
            let mut under = Vec::new();
            if let Some(allow) = rules(row.item(0)) {
                under.push(format!("allow {allow}"));
            }
            if let Some(deny) = rules(row.item(1)) {
                under.push(format!("deny {deny}"));
            }
            format!("{} ({})", value(row.item(2)), under.join("; "))
        },
        outcome: |row| verdict(row.item(3)),
    },
    Table {
        category: Gate,
        file: "src/permission/file_set.rs",
        place: Place::Let("a_folder_is_matched_by_its_name_literally", "cases"),
        outcomes: None,
        case: |row| format!("folder {}, path {}", value(row.item(0)), value(row.item(1))),
        outcome: |row| either(row.item(2), "under it (a power file)", "not under it"),
    },
    Table {
        category: Gate,
        file: "src/permission/file_set.rs",
        place: Place::Let("matches_what_case_insensitive_globs_match", "cases"),
        outcomes: None,
        case: |row| format!("path {}", value(row.item(0))),
        outcome: |row| either(row.item(1), "matches, whatever its case", "does not match"),
    },
    Table {
        category: Gate,
        file: "src/permission/rules.rs",
        place: Place::Let("mcp_rules_name_servers_and_tools_and_nothing_else", "cases"),
        outcomes: None,
        case: |row| format!("rule {} on tool {}", value(row.item(0)), value(row.item(1))),
        outcome: |row| {
            format!(
                "{} as a deny rule, {} as an allow rule",
                either(row.item(2), "matches", "does not match"),
                either(row.item(3), "matches", "does not match")
            )
        },
    },
    Table {
        category: Gate,
        file: "src/permission/rules.rs",
        place: Place::For("mcp_rules_name_servers_and_tools_and_nothing_else", "bad"),
        outcomes: None,
        case: |row| format!("rule {}", value(row.item(0))),
        outcome: |_| "refused as a rule (it could name no MCP tool)".into(),
    },
    Table {
        category: Gate,
        file: "src/permission/command.rs",
        place: Place::Let("writing_and_running_options_are_known", "cases"),
        outcomes: None,
        case: first_as_code,
        outcome: |row| {
            let written = match rules(row.item(1)) {
                Some(files) => format!("writes {files}"),
                None => "writes no file".to_string(),
            };
            format!(
                "{written}{}",
                either(row.item(2), "; runs a program (asks)", "")
            )
        },
    },
    Table {
        category: Gate,
        file: "src/permission/command.rs",
        place: Place::Let("git_object_reads_are_reads", "cases"),
        outcomes: None,
        case: first_as_code,
        outcome: |row| {
            let mut said = vec![match rules(row.item(1)) {
                Some(paths) => format!("reads {paths}"),
                None => "reads no path by name".to_string(),
            }];
            said.push(either(row.item(2), "a concern (asks)", "").to_string());
            said.push(either(row.item(3), "reads history (read rules ask)", "").to_string());
            said.retain(|s| !s.is_empty());
            said.join("; ")
        },
    },
    Table {
        category: Gate,
        file: "src/permission/mod.rs",
        place: Place::Let("every_precedence_case", "cases"),
        outcomes: None,
        case: |row| {
            let lists = row.item(1);
            let mut under = vec![format!("mode {}", words(&row.item(0).source()))];
            for (n, kind) in ["allow", "ask", "deny"].into_iter().enumerate() {
                if let Some(rules) = lists.item(n).filter(|_| lists.source() != "none()") {
                    under.extend(rules_of(rules).map(|r| format!("{kind} {r}")));
                }
            }
            format!("{} ({})", value(row.item(2)), under.join("; "))
        },
        outcome: |row| {
            let asked = row.item(3).source() == "true";
            let allowed = row.item(4).source() == "true";
            match (asked, allowed) {
                (true, _) => "asked (answered no)".into(),
                (false, true) => "runs".into(),
                (false, false) => "refused".into(),
            }
        },
    },
    Table {
        category: Gate,
        file: "src/config.rs",
        place: Place::Let("untrusted_projects_only_restrict", "cases"),
        outcomes: None,
        case: |row| {
            format!(
                "project settings {} ({}), user mode {}",
                value(row.item(1)),
                either(row.item(2), "trusted", "untrusted"),
                mode(row.item(0))
            )
        },
        outcome: |row| {
            format!(
                "mode {}, {} taken, {} ignored",
                mode(row.item(3)),
                count(&row.item(4).source(), "allow rule"),
                count(&row.item(5).source(), "setting")
            )
        },
    },
    Table {
        category: Gate,
        file: "tests/it/concurrency.rs",
        place: Place::Let(
            "a_link_made_earlier_in_the_response_is_seen_by_the_rules",
            "cases",
        ),
        outcomes: None,
        case: |row| {
            format!(
                "{}: {} {} under deny {}",
                name(row.item(0)),
                value(row.item(2)),
                value(row.item(3)),
                value(row.item(1))
            )
        },
        outcome: |_| "refused by the deny rule: the key never reaches the model".into(),
    },
    // ---- paths ----
    Table {
        category: Paths,
        file: "tests/it/escapes.rs",
        place: Place::Returned("first_cases"),
        outcomes: Some("Expect"),
        case: tool_call_case,
        outcome: |row| said(row.outcome()),
    },
    Table {
        category: Paths,
        file: "tests/it/escapes.rs",
        place: Place::Returned("after_bash_cases"),
        outcomes: Some("Expect"),
        case: tool_call_case,
        outcome: |row| said(row.outcome()),
    },
    Table {
        category: Paths,
        file: "tests/it/acp.rs",
        place: Place::Let(
            "the_editor_is_never_asked_for_a_path_outside_the_workspace",
            "attacks",
        ),
        outcomes: None,
        case: |row| format!("{} {}", value(row.item(0)), value(row.item(1))),
        outcome: |_| "fails; the editor never hears of it".into(),
    },
    Table {
        category: Paths,
        file: "tests/it/instructions.rs",
        place: Place::Let("a_planted_link_is_never_read_as_instructions", "cases"),
        outcomes: None,
        case: |row| name(row.item(0)),
        outcome: |row| match row.item(3).text().as_str() {
            "" => "nothing outside is read as instructions".into(),
            file => format!("{} is not read as instructions", code(file)),
        },
    },
    Table {
        category: Secrets,
        file: "tests/it/sessions.rs",
        place: Place::Let(
            "the_sessions_gitignore_always_ends_ignoring_everything",
            "cases",
        ),
        outcomes: None,
        case: |row| {
            format!(
                "`.bareagent/sessions/.gitignore` held {}",
                value(row.item(0))
            )
        },
        outcome: |row| {
            either(
                row.item(1),
                "ignores everything; the file is left as it was",
                "ignores everything after the session",
            )
        },
    },
    Table {
        category: Paths,
        file: "tests/it/sessions.rs",
        place: Place::Let("sessions_never_go_through_a_planted_link", "cases"),
        outcomes: None,
        case: planted_link,
        outcome: |row| {
            either(
                row.item(2),
                "nothing written through it; the session is saved",
                "nothing written through it; the session is not saved",
            )
        },
    },
    Table {
        category: Paths,
        file: "tests/it/diffs.rs",
        place: Place::Let("show_diff_never_writes_through_a_planted_link", "cases"),
        outcomes: None,
        case: planted_link,
        outcome: |row| {
            either(
                row.item(2),
                "nothing written through it; the diff still shows",
                "nothing written through it; showing the diff fails",
            )
        },
    },
    Table {
        category: Paths,
        file: "tests/it/integrity.rs",
        place: Place::Let("no_write_goes_through_a_hard_link", "cases"),
        outcomes: None,
        case: |row| {
            either(
                row.item(0),
                "a hard link to an outside file, the ACP client writing files",
                "a hard link to an outside file, bareagent writing",
            )
        },
        outcome: |row| {
            format!(
                "the tool says {}; the outside file keeps its text",
                value(row.item(2))
            )
        },
    },
    Table {
        category: Paths,
        file: "tests/it/integrity.rs",
        place: Place::For(
            "the_editor_is_never_asked_to_edit_through_a_hard_link",
            "(linked, said, edits)",
        ),
        outcomes: None,
        case: |row| {
            either(
                row.item(0),
                "an edit of a hard-linked file, in an editor",
                "an edit of a file with one link, in an editor",
            )
        },
        outcome: |row| {
            format!(
                "the tool says {}; {} `workspace/applyEdit`",
                value(row.item(1)),
                row.item(2).source()
            )
        },
    },
    // ---- secrets ----
    Table {
        category: Secrets,
        file: "src/secrets.rs",
        place: Place::Let(
            "every_occurrence_is_replaced_and_the_longest_first",
            "cases",
        ),
        outcomes: None,
        case: first_as_code,
        outcome: |row| format!("shown as {}", value(row.item(1))),
    },
    Table {
        category: Secrets,
        file: "tests/it/editor_diagnostics.rs",
        place: Place::Let(
            "code_action_diagnostics_reach_the_tool_and_hidden_files_stay_hidden",
            "cases",
        ),
        outcomes: None,
        case: |row| format!("`diagnostics` {}", value(row.item(0))),
        outcome: |row| {
            format!(
                "the answer holds {} and never {}",
                value(row.item(1)),
                value(row.item(2))
            )
        },
    },
    Table {
        category: Secrets,
        file: "tests/it/provider_setup.rs",
        place: Place::Let(
            "malformed_custom_headers_are_a_startup_error_that_quotes_no_value",
            "cases",
        ),
        outcomes: None,
        case: |row| format!("{} = {}", value(row.item(0)), value(row.item(1))),
        outcome: |row| {
            format!(
                "refused at start, saying {}, quoting no value",
                value(row.item(2))
            )
        },
    },
    // ---- model-server faults ----
    Table {
        category: Faults,
        file: "tests/it/https.rs",
        place: Place::Let(
            "the_model_is_reached_over_https_only_through_a_trusted_certificate",
            "cases",
        ),
        outcomes: Some("Roots"),
        case: |row| {
            format!(
                "{} (roots: {}; the base URL names {})",
                prose(&row.item(0).text()),
                said(row.item(1)),
                value(row.item(2))
            )
        },
        outcome: |row| {
            either(
                row.item(3),
                "the turn reaches the model",
                "refused at once, never retried: the certificate does not verify; nothing sent",
            )
        },
    },
    Table {
        category: Faults,
        file: "tests/it/faults.rs",
        place: Place::For("status_errors_before_output_are_retried", "fault"),
        outcomes: None,
        case: |row| value(row.whole()),
        outcome: |_| {
            "retried with the same request (after its `retry-after`, when given), then answered"
                .into()
        },
    },
    Table {
        category: Faults,
        file: "tests/it/faults.rs",
        place: Place::Let("stream_faults_before_output_fall_back_to_create", "faults"),
        outcomes: None,
        case: |row| value(row.whole()),
        outcome: |_| "falls back to a plain call, then answered".into(),
    },
    Table {
        category: Faults,
        file: "tests/it/faults.rs",
        place: Place::Let(
            "stream_faults_after_output_are_errors_not_retries",
            "faults",
        ),
        outcomes: None,
        case: |row| value(row.whole()),
        outcome: |_| {
            "the turn ends: `cut off after output began`; nothing retried, the history as it was"
                .into()
        },
    },
    Table {
        category: Faults,
        file: "tests/it/faults.rs",
        place: Place::For("non_streamed_calls_retry_a_cut_body_and_a_stall", "fault"),
        outcomes: None,
        case: |row| format!("{}, not streamed", value(row.whole())),
        outcome: |_| "retried, then answered".into(),
    },
    // ---- protocol ----
    Table {
        category: Protocol,
        file: "tests/it/lsp_frames.rs",
        place: Place::Returned("cases"),
        outcomes: Some("Outcome"),
        case: |row| name(row.item(0)),
        outcome: |row| said(row.outcome()),
    },
    Table {
        category: Protocol,
        file: "src/lsp/pump.rs",
        place: Place::Let(
            "ids_the_server_cannot_hold_are_answered_with_null_or_dropped",
            "cases",
        ),
        outcomes: None,
        case: |row| match row.item(0).head() {
            Some((helper, args)) if args.len() == 1 => {
                let kind = if helper == "call" {
                    "a call"
                } else {
                    "an answer"
                };
                format!("{kind} with id {}", value(args[0].clone()))
            }
            _ => value(row.item(0)),
        },
        outcome: |row| {
            let refusal = row.item(1);
            let Some((code, id)) = refusal.item(0).and_then(|t| Some((t.item(0)?, t.item(1)?)))
            else {
                return "passes".into();
            };
            let code = code.source();
            match id.head() {
                Some((none, _)) if none == "None" => format!("error {code}, not answered"),
                _ => {
                    let id = id.source().replace(".clone()", "");
                    let id = id.trim_start_matches("Some(").trim_end_matches(')');
                    format!("answered: error {code}, id {}", code_of_id(id))
                }
            }
        },
    },
    Table {
        category: Protocol,
        file: "tests/it/acp.rs",
        place: Place::Let(
            "malformed_frames_are_answered_and_the_agent_keeps_serving",
            "cases",
        ),
        outcomes: None,
        case: first_as_code,
        outcome: |row| format!("answered: error {}", row.item(1).source()),
    },
    Table {
        category: Protocol,
        file: "src/acp/list.rs",
        place: Place::For("a_cursor_reads_back_as_its_place", "bad"),
        outcomes: None,
        case: |row| format!("`session/list` cursor {}", value(row.item(0))),
        outcome: |_| "no cursor (refused, no panic)".into(),
    },
    Table {
        category: Protocol,
        file: "src/cli/approve.rs",
        place: Place::Let("json_answers_count_only_for_their_own_id", "cases"),
        outcomes: None,
        case: |row| format!("the answer {} to approval 3", value(row.item(0))),
        outcome: |row| match row.item(1).head() {
            Some((err, args)) if err == "Err" => format!("not taken: {}", value(args[0].clone())),
            _ => format!("taken: {}", said(row.item(1)).replace("ok: ", "")),
        },
    },
    Table {
        category: Protocol,
        file: "tests/it/lsp.rs",
        place: Place::Let(
            "a_malformed_setting_never_takes_the_deny_rules_with_it",
            "cases",
        ),
        outcomes: None,
        case: |row| format!("editor settings {}", value(row.item(0))),
        outcome: |row| {
            format!(
                "the turn ends with {}; the `bash` call gets {}",
                value(row.item(1)),
                value(row.item(2))
            )
        },
    },
    Table {
        category: Protocol,
        file: "src/history.rs",
        place: Place::Let("images_are_refused_unless_plainly_acceptable", "cases"),
        outcomes: None,
        case: |row| {
            format!(
                "an image {}, data {}",
                value(row.item(0)),
                value(row.item(1))
            )
        },
        outcome: |row| either(row.item(2), "refused", "taken"),
    },
    // ---- command lines and settings ----
    Table {
        category: Settings,
        file: "tests/it/cli.rs",
        place: Place::Let("configuration_errors_are_clear", "cases"),
        outcomes: None,
        case: |row| format!("arguments {}", arguments(row.item(0))),
        outcome: |row| format!("refused: {}", value(row.item(1))),
    },
    Table {
        category: Settings,
        file: "tests/it/cli.rs",
        place: Place::Let(
            "a_prompt_comes_from_stdin_and_the_json_names_the_session_first",
            "cases",
        ),
        outcomes: None,
        case: |row| {
            format!(
                "arguments {}, stdin {}",
                arguments(row.item(0)),
                value(row.item(1))
            )
        },
        outcome: |row| format!("exit 2: {}", value(row.item(2))),
    },
    Table {
        category: Settings,
        file: "tests/it/cli.rs",
        place: Place::Let(
            "zero_counts_and_an_empty_model_are_refused_at_start",
            "cases",
        ),
        outcomes: None,
        case: |row| format!("arguments {}", arguments(row.item(0))),
        outcome: |row| format!("exit 2 naming {}; nothing sent", value(row.item(1))),
    },
    Table {
        category: Settings,
        file: "tests/it/settings_commands.rs",
        place: Place::Let(
            "mcp_add_and_remove_write_the_settings_as_other_agents_commands_do",
            "cases",
        ),
        outcomes: None,
        case: |row| format!("arguments {}", arguments(row.item(0))),
        outcome: |row| format!("refused: {}; nothing written", value(row.item(1))),
    },
    Table {
        category: Settings,
        file: "tests/it/provider_setup.rs",
        place: Place::Let(
            "what_cannot_work_is_a_usage_error_before_any_request",
            "cases",
        ),
        outcomes: None,
        case: |row| name(row.item(0)),
        outcome: |row| format!("usage error: {}; nothing sent", value(row.item(2))),
    },
    Table {
        category: Settings,
        file: "src/provider/choice.rs",
        place: Place::Let("only_absolute_http_urls_with_a_host_are_base_urls", "cases"),
        outcomes: None,
        case: |row| format!("base URL {}", value(row.item(0))),
        outcome: |row| either(row.item(1), "taken", "refused"),
    },
    Table {
        category: Settings,
        file: "src/mcp/config.rs",
        place: Place::Let("server_names_split_one_way_only", "cases"),
        outcomes: None,
        case: |row| format!("MCP server name {}", value(row.item(0))),
        outcome: |row| either(row.item(1), "taken", "refused"),
    },
    Table {
        category: Settings,
        file: "src/mcp/config.rs",
        place: Place::Let("variables_expand_or_fail_naming_the_variable", "cases"),
        outcomes: None,
        case: first_as_code,
        outcome: second_said,
    },
    // ---- crashes ----
    Table {
        category: Crashes,
        file: "tests/it/dying.rs",
        place: Place::Const("CASES"),
        outcomes: None,
        case: death,
        outcome: |_| "every command it started, their children and the reaper are gone".into(),
    },
    Table {
        category: Crashes,
        file: "tests/it/dying.rs",
        place: Place::Let("escaped_descendants_die_with_the_agent", "cases"),
        outcomes: None,
        case: death,
        outcome: |_| {
            "a `setsid` child and a double-forked daemon of a finished command are gone too".into()
        },
    },
    Table {
        category: Crashes,
        file: "tests/it/sessions.rs",
        place: Place::Let(
            "a_run_killed_anywhere_in_a_turn_continues_with_a_valid_complete_history",
            "cases",
        ),
        outcomes: None,
        case: |row| format!("`bareagent run` killed {}", prose(&row.item(0).text())),
        outcome: |row| {
            format!(
                "`--continue` goes on from a valid history: {}",
                value(row.item(3))
            )
        },
    },
    Table {
        category: Crashes,
        file: "tests/it/client_process.rs",
        place: Place::For(
            "the_server_accepts_client_flags_and_exits_when_the_editor_process_ends",
            "told",
        ),
        outcomes: None,
        case: |row| {
            let told = row.variant_doc("Told", row.item(0));
            format!(
                "the editor's process id given by {}",
                told.trim_end_matches('.')
            )
        },
        outcome: |_| "the language server exits when that process ends".into(),
    },
    // ---- integrity ----
    Table {
        category: Integrity,
        file: "tests/it/integrity.rs",
        place: Place::Returned("cases"),
        outcomes: None,
        case: |row| name(row.item(0)),
        outcome: resumes_or_refuses,
    },
    Table {
        category: Integrity,
        file: "src/session_files/load.rs",
        place: Place::Let("a_bad_line_fails_the_load_but_a_torn_last_one", "cases"),
        outcomes: None,
        case: first_as_code,
        outcome: loads,
    },
    Table {
        category: Integrity,
        file: "src/session_files/load.rs",
        place: Place::Let("a_line_the_agent_did_not_write_fails_the_load", "cases"),
        outcomes: None,
        case: first_as_code,
        outcome: |row| loads_at(row.item(2)),
    },
    Table {
        category: Integrity,
        file: "tests/it/rewind.rs",
        place: Place::Let("a_rewind_writes_nothing_it_cannot_vouch_for", "cases"),
        outcomes: None,
        case: |row| name(row.item(0)),
        outcome: |row| format!("nothing restored; says {}", value(row.item(4))),
    },
    Table {
        category: Integrity,
        file: "tests/it/read_ledger.rs",
        place: Place::Returned("cases"),
        outcomes: None,
        case: |row| prose(&row.field("name").text()),
        outcome: |row| {
            let want = row.field("want");
            let mut said = Vec::new();
            let mut n = 0;
            while let Some(result) = want.item(n) {
                said.push(match result.head() {
                    Some((err, args)) if err == "Err" && args.len() == 1 => {
                        format!("refused: {}", value(args[0].clone()))
                    }
                    _ => "done".into(),
                });
                n += 1;
            }
            format!(
                "{}; the file holds {}",
                said.join(", then "),
                value(row.field("left"))
            )
        },
    },
    Table {
        category: Integrity,
        file: "src/tools/mod.rs",
        place: Place::Let(
            "the_ledger_refuses_changes_to_text_the_model_did_not_see",
            "cases",
        ),
        outcomes: None,
        case: |row| {
            let saw = match row.item(0).head() {
                Some((none, _)) if none == "None" => "nothing read".to_string(),
                _ => format!("read {}", value(row.item(0))),
            };
            format!(
                "{saw}; now {}; read first: {}",
                value(row.item(1)),
                words(&row.item(2).source())
            )
        },
        outcome: |row| {
            let answer = row.item(3).source();
            match answer.as_str() {
                "Ok(())" => "the change is made".into(),
                "not_read()" => "refused: not read".into(),
                other => format!("refused: {}", code(other)),
            }
        },
    },
    Table {
        category: Integrity,
        file: "tests/it/integrity.rs",
        place: Place::Let("the_file_tools_refuse_what_is_over_their_cap", "cases"),
        outcomes: None,
        case: |row| value(row.item(1)),
        outcome: |row| format!("says {}", value(row.item(2))),
    },
    // ---- terminal ----
    Table {
        category: Terminal,
        file: "src/cli/diff_view.rs",
        place: Place::Let("model_text_cannot_drive_the_terminal", "cases"),
        outcomes: None,
        case: first_as_code,
        outcome: |row| format!("shown as {}", value(row.item(1))),
    },
    Table {
        category: Terminal,
        file: "src/cli/diff_view.rs",
        place: Place::Let("nothing_in_a_diff_can_steer_the_terminal", "cases"),
        outcomes: None,
        case: first_as_code,
        outcome: |row| format!("shown as {}", value(row.item(1))),
    },
    Table {
        category: Terminal,
        file: "src/cli/markdown.rs",
        place: Place::For(
            "model_text_cannot_steer_the_terminal_through_markdown",
            "markdown",
        ),
        outcomes: None,
        case: |row| format!("markdown {}", value(row.item(0))),
        outcome: |_| {
            "shown escaped; only the renderer's own colour sequences reach the terminal".into()
        },
    },
    Table {
        category: Terminal,
        file: "src/cli/turn_keys.rs",
        place: Place::Let(
            "a_lone_esc_is_told_from_the_sequences_that_start_with_one",
            "cases",
        ),
        outcomes: None,
        case: |row| format!("keys {} during a turn", value(row.item(0))),
        outcome: |row| {
            format!(
                "{}; typed-ahead text kept: {}",
                either(row.item(2), "a lone Esc: cancels", "not a cancel"),
                value(row.item(1))
            )
        },
    },
];

/// `(name, tool, input, expect)`: the name, then the call.
fn tool_call_case(row: &Row) -> String {
    format!(
        "{}: {} {}",
        name(row.item(0)),
        value(row.item(1)),
        value(row.item(2))
    )
}

/// `(link, to a directory, …)`: a planted link and what it points at.
fn planted_link(row: &Row) -> String {
    format!(
        "a link at {} to {} outside",
        value(row.item(0)),
        either(row.item(1), "a directory", "a file")
    )
}

/// `(front end, how it dies)`.
fn death(row: &Row) -> String {
    let front = match row.item(0).head().map(|(name, _)| name).as_deref() {
        Some("Run") => "`bareagent run`",
        Some("Lsp") => "the language server",
        other => panic!("{}: front end {other:?}", row.at()),
    };
    let how = row.item(1);
    let how = match how.head() {
        Some((signal, args)) if signal == "Signal" && args.len() == 1 => {
            let name = args[0].source();
            format!("killed by {}", name.trim_start_matches("libc::"))
        }
        Some((closed, _)) if closed == "StdinClosed" => "left by its editor (stdin closes)".into(),
        Some((exits, _)) if exits == "Exits" => "exiting by itself".into(),
        _ => value(how),
    };
    format!("{front}, {how}")
}

/// A rule set's verdict: `deny(…)` or `Verdict::…`.
fn verdict(part: Part) -> String {
    let source = part.source();
    let kind = source.trim_start_matches("Verdict::");
    if kind.starts_with("deny") || kind.starts_with("Deny") {
        "denied".into()
    } else if kind.starts_with("Allow") || kind.starts_with("allow") {
        "allowed by the rule".into()
    } else if kind.starts_with("Ask") || kind.starts_with("ask") {
        "asked by the rule".into()
    } else if kind.starts_with("Unmatched") {
        "no rule matches (the mode decides)".into()
    } else {
        value(part)
    }
}

/// `Ok(())` or `Err("…")`: what `--resume` does.
fn resumes_or_refuses(row: &Row) -> String {
    match row.item(2).head() {
        Some((err, args)) if err == "Err" && args.len() == 1 => {
            format!("refused on resume: {}", value(args[0].clone()))
        }
        _ => "resumes".into(),
    }
}

/// `(bytes, Ok(messages) | Err(why))`.
fn loads(row: &Row) -> String {
    loads_at(row.item(1))
}

fn loads_at(result: Part) -> String {
    match result.head() {
        Some((err, args)) if err == "Err" && args.len() == 1 => {
            format!("refused: {}", value(args[0].clone()))
        }
        Some((ok, args)) if ok == "Ok" && args.len() == 1 => {
            format!("loads ({})", count(&args[0].source(), "message"))
        }
        _ => value(result),
    }
}

/// Tables a test builds at run time.
pub const BUILT: &[Built] = &[Built {
    category: Gate,
    file: "tests/it/attacks.rs",
    covers: &["fn all_cases", "fn cases", "let cases in fn cases"],
    test: "attacks::every_attack_gets_its_outcome",
    outcomes: Some("Outcome"),
    rows: attack_rows,
}];

fn attack_rows() -> Vec<[String; 2]> {
    use crate::attacks::Outcome;
    crate::attacks::all_cases()
        .into_iter()
        .map(|case| {
            let call = match case.input.get("command").and_then(|c| c.as_str()) {
                Some(command) if case.tool == "bash" => code(command),
                _ => format!("{} {}", code(case.tool), code(&case.input.to_string())),
            };
            let mut under = Vec::new();
            if case.mode != bareagent::permission::PermissionMode::Default {
                let mode = serde_json::to_value(case.mode).unwrap_or_default();
                under.push(format!("mode {}", mode.as_str().unwrap_or_default()));
            }
            let rules = |rules: &[&str]| rules.iter().map(|r| code(r)).collect::<Vec<_>>();
            if !case.allow.is_empty() {
                under.push(format!("allow {}", rules(case.allow).join(" ")));
            }
            if !case.deny.is_empty() {
                under.push(format!("deny {}", rules(case.deny).join(" ")));
            }
            let under = if under.is_empty() {
                String::new()
            } else {
                format!(" ({})", under.join("; "))
            };
            let mut outcome = match case.expected {
                Outcome::Allowed => "runs".to_string(),
                Outcome::Asked => "asked (answered no)".to_string(),
                Outcome::Denied => "refused".to_string(),
                Outcome::RulesRefused => "the rules are refused as loaded".to_string(),
            };
            if let Some(secret) = case.never_shows {
                outcome.push_str(&format!("; the result never shows {}", code(secret)));
            }
            [format!("{}: {call}{under}", prose(case.name)), outcome]
        })
        .collect()
}
