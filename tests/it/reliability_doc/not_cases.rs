//! The case tables that hold no fault, bad-input or attack case, and why:
//! `every_case_table_is_listed` fails on a case table in no list.

/// Case tables that hold no fault, bad-input or attack case, and why.
pub const NOT_CASES: &[(&str, &str, &str)] = &[
    (
        "tests/it/attacks.rs",
        "const NARROW",
        "the rules the attack cases run under",
    ),
    (
        "tests/it/docs_commands.rs",
        "const NOT_RUN",
        "the docs' commands that need a model or a terminal",
    ),
    (
        "tests/it/docs_commands.rs",
        "const RUN_AS",
        "the docs' synopses, as commands",
    ),
    (
        "tests/it/layers.rs",
        "const LAYERS",
        "the module layers, an architecture rule",
    ),
    (
        "tests/it/layers.rs",
        "let cases in fn the_cycle_finder_finds_cycles",
        "the layer test's own cycle finder",
    ),
    (
        "tests/it/reliability_doc/tables.rs",
        "const TABLES",
        "this registry",
    ),
    (
        "tests/it/reliability_doc/tables.rs",
        "const BUILT",
        "this registry",
    ),
    (
        "tests/it/reliability_doc/not_cases.rs",
        "const NOT_CASES",
        "this list",
    ),
    (
        "tests/it/caching.rs",
        "let cases in fn the_prompt_cache_key_is_sent_where_the_settings_say_and_never_changes",
        "a feature's settings",
    ),
    (
        "tests/it/cli.rs",
        "let cases in fn a_denial_suggests_accept_edits_only_where_it_would_allow",
        "the wording of a denial",
    ),
    (
        "tests/it/costs.rs",
        "let cases in fn costs_match_the_price_table_and_unknown_models_cost_unknown",
        "prices",
    ),
    (
        "tests/it/helix.rs",
        "let cases in fn all_languages_adds_bareagent_keeps_each_languages_servers_and_refuses_what_it_cannot_read",
        "the Helix configuration generator",
    ),
    (
        "tests/it/provider_setup.rs",
        "let cases in fn a_gateway_token_and_custom_headers_arrive_at_the_server",
        "a feature: gateway credentials",
    ),
    (
        "tests/it/responses.rs",
        "let cases in fn without_an_effort_the_model_picks_and_a_model_that_does_not_reason_gets_no_reasoning",
        "request shapes per model",
    ),
    (
        "tests/it/thinking.rs",
        "let cases in fn max_tokens_and_the_effort_from_config_toml_follow_the_model",
        "request shapes per model",
    ),
    (
        "src/acp/calls.rs",
        "let cases in fn a_touched_file_is_located_on_its_call_and_its_text_forgotten",
        "what an ACP client is shown",
    ),
    (
        "src/acp/config_options.rs",
        "let cases in fn options_show_the_current_values_and_take_known_ones_only",
        "a feature's options",
    ),
    (
        "src/agent/context.rs",
        "let cases in fn windows_come_from_the_table_by_prefix",
        "model metadata",
    ),
    (
        "src/cli/line_editor.rs",
        "let cases in fn input_goes_on_after_a_backslash_and_inside_a_fence",
        "line editing",
    ),
    (
        "src/cli/output.rs",
        "let cases in fn a_command_shows_its_status_and_last_lines_and_the_hint_whole",
        "terminal layout",
    ),
    (
        "src/cli/slash.rs",
        "let cases in fn lines_read_as_prompts_or_commands",
        "the chat's commands",
    ),
    (
        "src/config.rs",
        "let cases in fn adding_a_rule_keeps_comments_and_layout",
        "editing a settings file",
    ),
    (
        "src/workspace/reported.rs",
        "let cases in fn what_the_model_is_told_after_an_edit",
        "a feature: diagnostics",
    ),
    (
        "tests/it/mcp.rs",
        "let cases in fn a_server_still_starting_joins_at_the_next_request",
        "a feature: MCP servers starting beside the first request",
    ),
    (
        "src/session/change.rs",
        "let cases in fn a_change_is_the_sessions_layer_and_a_models_name_picks_its_api",
        "a feature: changing a session's model",
    ),
    (
        "tests/it/layers.rs",
        "const BUILT_BY_THE_CORE",
        "the code's structure",
    ),
    (
        "src/diff.rs",
        "let cases in fn new_binary_empty_and_unchanged_files",
        "diff rendering",
    ),
    (
        "src/language_servers/capabilities.rs",
        "let cases in fn a_method_is_offered_by_its_capability_or_a_registration",
        "a feature: language servers",
    ),
    (
        "src/language_servers/connection.rs",
        "let cases in fn configuration_is_answered_by_section",
        "a feature: language servers",
    ),
    (
        "src/lsp/editor.rs",
        "let cases in fn minimal_edits_reproduce_the_new_text",
        "edit computation",
    ),
    (
        "src/mcp/result.rs",
        "let cases in fn every_kind_of_content_becomes_text",
        "MCP result conversion",
    ),
    (
        "src/mcp/tool.rs",
        "let cases in fn names_fit_the_providers_and_split_one_way",
        "MCP tool naming",
    ),
    (
        "src/provider/anthropic.rs",
        "let cases in fn breakpoints_mark_the_last_two_user_messages_that_can_carry_one",
        "prompt caching",
    ),
    (
        "src/provider/anthropic.rs",
        "let cases in fn the_wire_names_of_thinking",
        "request shapes",
    ),
    (
        "src/provider/anthropic.rs",
        "let cases in fn thinking_and_effort_follow_the_model",
        "request shapes per model",
    ),
    (
        "src/provider/error.rs",
        "let cases in fn a_refused_setting_says_in_one_line_which_setting_to_change",
        "the wording of an error",
    ),
    (
        "src/provider/http.rs",
        "let cases in fn a_context_too_long_answer_is_told_from_other_bad_requests",
        "reading a provider's error to name its cause",
    ),
    (
        "src/provider/http.rs",
        "let cases in fn a_refused_setting_is_told_from_other_bad_requests",
        "reading a provider's error to name its cause",
    ),
    (
        "src/provider/http.rs",
        "let cases in fn what_was_sent_is_read_from_either_apis_body",
        "reading a request back",
    ),
    (
        "src/provider/models.rs",
        "let cases in fn an_effort_is_clamped_to_the_nearest_level_the_model_takes",
        "model metadata",
    ),
    (
        "src/provider/models.rs",
        "let cases in fn cache_prices_follow_the_pricing_page",
        "prices",
    ),
    (
        "src/provider/models.rs",
        "let cases in fn snapshots_are_priced_as_their_model_and_near_names_are_not",
        "prices",
    ),
    (
        "src/provider/models.rs",
        "let cases in fn thinking_modes_follow_the_docs",
        "model metadata",
    ),
    (
        "src/provider/models.rs",
        "let cases in fn windows_and_output_limits_come_from_the_table",
        "model metadata",
    ),
    (
        "src/provider/openai.rs",
        "let cases in fn reasoning_goes_back_only_with_the_tool_calls_it_led_to",
        "request shapes",
    ),
    (
        "src/provider/openai.rs",
        "let cases in fn the_cache_key_goes_by_default_only_to_openai_itself",
        "prompt caching",
    ),
    (
        "src/provider/openai.rs",
        "let cases in fn the_error_flag_alone_marks_a_tool_result_as_an_error",
        "request shapes",
    ),
    (
        "src/provider/responses.rs",
        "let cases in fn effort_goes_to_the_nearest_level_the_model_takes",
        "request shapes per model",
    ),
    (
        "src/session/tally.rs",
        "let cases in fn a_files_count_says_its_lines_and_the_tools_it_changed_under",
        "a summary's wording",
    ),
    (
        "src/session_files/load.rs",
        "let cases in fn the_last_turn_is_found_whatever_came_before_it",
        "a feature: rewind",
    ),
    (
        "src/text.rs",
        "let cases in fn cuts_on_char_boundaries",
        "text cutting",
    ),
    (
        "src/tool_line.rs",
        "let cases in fn the_words_that_say_most",
        "a summary's wording",
    ),
    (
        "src/tools/code/rename.rs",
        "let cases in fn edits_land_at_their_utf16_ranges_or_not_at_all",
        "a feature: rename",
    ),
    (
        "src/tools/code/target.rs",
        "let cases in fn a_name_finds_its_one_declaration_or_lists_them",
        "a feature: code navigation",
    ),
    (
        "src/tools/mod.rs",
        "let cases in fn only_failures_of_a_tool_that_ran_or_was_refused_by_it_read_as_errors",
        "the wording of tool errors",
    ),
    (
        "src/workspace/encoding.rs",
        "let cases in fn each_encoding_reads_and_writes_back_as_it_was",
        "text encodings",
    ),
    (
        "src/workspace/look.rs",
        "let cases in fn two_looks_see_what_a_tool_did_and_nothing_else",
        "change detection",
    ),
];
