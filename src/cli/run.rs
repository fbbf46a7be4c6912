//! `bareagent run`: one turn in the current directory, on the terminal.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use super::RunArgs;
use super::approve::TerminalApprover;
use super::output::{JsonSink, TerminalSink, TurnSink};
use tokio_util::sync::CancellationToken;

use crate::agent::{
    Agent, AgentParts, Compaction, CompactionSettings, Inbox, LoopConfig, LoopError, Message,
    load_instructions, paths_in, run_loop, system_prompt, user_instructions_path,
};
use crate::config::Config;
use crate::provider::openai::session_cache_key;
use crate::provider::retry::{RetryObserver, RetryPolicy};
use crate::provider::{HttpSettings, ProviderChoice, context_window};
use crate::sandbox::{Sandbox, SandboxStatus};
use crate::sessions::{Entry, Transcript};
use crate::tools::{BackgroundTasks, ToolRegistry};
use crate::workspace::{DiskWorkspace, Workspace};

pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let root = std::env::current_dir().context("cannot read the current directory")?;
    let workspace = DiskWorkspace::new(&root).context("cannot open the workspace")?;
    if args.rewind {
        return super::sessions::rewind(&workspace, &args).await;
    }
    let mut settings = Config::load(workspace.paths().root()).map_err(anyhow::Error::msg)?;
    if let Some(notice) = settings.ignored_notice(workspace.paths().root()) {
        eprintln!("bareagent: {notice}");
        // On a terminal, the user can trust the directory here and now.
        if !args.json
            && std::io::stdin().is_terminal()
            && super::approve::ask_to_trust(workspace.paths().root()).await
        {
            let written = crate::config::trust_project(workspace.paths().root())
                .map_err(anyhow::Error::msg)?;
            eprintln!("bareagent: trusted (recorded in {})", written.display());
            settings = Config::load(workspace.paths().root()).map_err(anyhow::Error::msg)?;
        }
    }
    let sink: Arc<dyn TurnSink> = if args.json {
        Arc::new(JsonSink::default())
    } else {
        Arc::new(TerminalSink::new(args.quiet))
    };
    let notices = sink.clone();
    let mcp = crate::mcp::McpServers::new(
        &settings.mcp,
        workspace.paths().root(),
        Arc::new(move |notice| notices.notice(&format!("bareagent: {}", notice.message))),
    );
    mcp.start_in_background();
    let choice = provider_choice(&args, &settings, workspace.paths().root(), sink.clone());
    let provider = choice.build()?;
    let model = choice.resolved_model().ok().flatten();
    let compaction = Compaction::new(CompactionSettings::for_model(
        model.as_deref().unwrap_or_default(),
        settings.context.window,
        settings.context.compact_at,
    ));

    let approver = TerminalApprover::for_run(args.json, std::io::stdin().is_terminal());
    let mode = args
        .permission_mode
        .or(settings.permissions.mode)
        .unwrap_or_default();
    let gate = settings.gate(mode, Box::new(approver), workspace.paths().root())?;
    let mut tools = ToolRegistry::standard();
    mcp.add_to(&mut tools).await;
    let prompt = args.prompt.join(" ");
    let instructions = load_instructions(
        workspace.paths(),
        &gate,
        user_instructions_path().as_deref(),
        &paths_in(&prompt),
    );
    for file in &instructions.files {
        if let Some(why) = &file.refused {
            eprintln!("bareagent: not reading {}: {why}", file.path);
        }
    }
    let config = LoopConfig {
        system: system_prompt(workspace.paths().root()) + &instructions.prompt,
        max_iterations: args.max_iterations,
        stream: !args.no_stream,
        price: model.as_deref().and_then(|m| settings.price(m)),
        context_window: model.as_deref().and_then(context_window),
        ..LoopConfig::default()
    };
    let sandbox = Sandbox::for_commands(
        &settings.sandbox,
        workspace.paths().root(),
        gate.denied_read_prefixes(),
    )
    .context("cannot set up the sandbox")?;
    if !matches!(sandbox.status(), SandboxStatus::Enforced { .. }) {
        eprintln!("bareagent: {}", sandbox.status());
    }
    let inbox = Inbox::new();
    let background = BackgroundTasks::new(inbox.clone());
    let cancel = CancellationToken::new();
    tokio::spawn(cancel_on_ctrl_c(cancel.clone(), sink.clone()));
    let agent = Agent::new(AgentParts {
        provider: provider.as_ref(),
        tools: &tools,
        gate: &gate,
        workspace: &workspace,
        sandbox: &sandbox,
        sink: sink.as_event_sink(),
        config: &config,
    })
    .with_inbox(&inbox)
    .with_background(&background)
    .with_compactor(&compaction)
    .with_cancel(cancel);
    let (session, mut messages) = super::sessions::open(workspace.paths(), &args)?;
    let agent = agent.with_transcript(&session);
    crate::sessions::append(&mut messages, Message::user_text(prompt), &session);
    sink.started();
    let outcome = run_loop(&agent, &mut messages).await;
    session.record(Entry::TurnEnd);
    background.kill_all();
    mcp.stop().await;
    match outcome {
        Ok(outcome) => {
            sink.finished(&outcome);
            Ok(ExitCode::SUCCESS)
        }
        Err(LoopError::Cancelled) => {
            sink.failed("cancelled");
            Ok(ExitCode::from(130))
        }
        Err(error) => {
            sink.failed(&error.to_string());
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The first Ctrl-C cancels the turn (running commands are killed, the
/// history stays valid); a second one quits at once.
async fn cancel_on_ctrl_c(cancel: CancellationToken, sink: Arc<dyn TurnSink>) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    sink.notice("\nbareagent: cancelling (Ctrl-C again to quit now)");
    cancel.cancel();
    if tokio::signal::ctrl_c().await.is_ok() {
        // Clears the spinner: exit does not wait for its thread to.
        sink.failed("interrupted");
        std::process::exit(130);
    }
}

/// Which provider to build, with each retry told to the user as one line.
fn provider_choice(
    args: &RunArgs,
    config: &Config,
    root: &std::path::Path,
    sink: Arc<dyn TurnSink>,
) -> ProviderChoice {
    ProviderChoice {
        kind: args.provider.or(config.provider),
        model: args.model.clone().or_else(|| config.model.clone()),
        base_url: args.base_url.clone(),
        replay: args.replay.clone(),
        record: args.record.clone(),
        http: HttpSettings {
            idle_timeout: Duration::from_secs(args.idle_timeout.max(1)),
            retry: RetryPolicy {
                max_attempts: args.max_attempts.max(1),
                ..RetryPolicy::default()
            },
            on_retry: Some(RetryObserver::new(move |retrying| {
                sink.notice(&retrying.to_string());
            })),
            ..HttpSettings::default()
        },
        cache_key: Some(session_cache_key(root, std::time::SystemTime::now())),
        send_cache_key: config.prompt_cache_key,
    }
}
