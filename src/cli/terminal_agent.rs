//! The agent a terminal front end runs (`bareagent run`, `bareagent chat`),
//! assembled in one place from the command line and the settings: the
//! provider and its model, compaction, the gate with the terminal's
//! approver, the tools, the loop's settings, the sandbox, the inbox and the
//! background commands. [`TerminalAgent::agent`] lends them to one turn.
//!
//! What a chat changes between turns (the model, the permission mode) is
//! changed here too, by rebuilding the part from the same inputs, so each
//! part is built by one piece of code whatever asked for it.
//!
//! It must not touch the terminal beyond the first-run trust question: the
//! line editor belongs to `bareagent chat` alone.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::AgentArgs;
use super::approve::TerminalApprover;
use super::output::{JsonSink, TerminalSink, TurnSink};
use crate::agent::{
    Agent, AgentParts, CompactError, Compacted, Compaction, CompactionSettings, Inbox, LoopConfig,
    Message, load_instructions, paths_in, system_prompt, user_instructions_path,
};
use crate::config::Config;
use crate::events::EventSink;
use crate::permission::{PermissionGate, PermissionMode};
use crate::provider::openai::session_cache_key;
use crate::provider::retry::{RetryObserver, RetryPolicy};
use crate::provider::{HttpSettings, Price, Provider, ProviderChoice, context_window};
use crate::sandbox::{Sandbox, SandboxStatus};
use crate::sessions::Transcript;
use crate::tools::{BackgroundTasks, ReadLedger, ToolRegistry};
use crate::workspace::{DiskWorkspace, Workspace};

/// Everything a terminal turn is made of, owned.
pub struct TerminalAgent {
    /// The command line, `--model` replaced by `/model`.
    args: AgentArgs,
    /// `--json`: answers and approvals as JSON lines.
    json: bool,
    pub workspace: DiskWorkspace,
    settings: Config,
    pub sink: Arc<dyn TurnSink>,
    model: ModelParts,
    mode: PermissionMode,
    gate: PermissionGate,
    tools: ToolRegistry,
    config: LoopConfig,
    sandbox: Sandbox,
    inbox: Inbox,
    pub background: BackgroundTasks,
    /// Which version of each file the model has seen, kept across turns.
    reads: Arc<ReadLedger>,
    /// Instruction files already said to be refused.
    refused: Vec<String>,
}

/// The parts that follow from the model's name.
struct ModelParts {
    provider: Box<dyn Provider>,
    /// `None`: the provider's default could not be named (a replay).
    name: Option<String>,
    compaction: Compaction,
    price: Option<Price>,
    context_window: Option<u64>,
}

impl TerminalAgent {
    /// Assembles the agent for the current directory. `prompt`: the first
    /// prompt, if known, for the instructions of the directories it names.
    pub async fn assemble(args: &AgentArgs, json: bool, prompt: &str) -> anyhow::Result<Self> {
        let root = std::env::current_dir().context("cannot read the current directory")?;
        let workspace = DiskWorkspace::new(&root).context("cannot open the workspace")?;
        let mut settings = Config::load(workspace.paths().root()).map_err(anyhow::Error::msg)?;
        if let Some(notice) = settings.ignored_notice(workspace.paths().root()) {
            eprintln!("bareagent: {notice}");
            // On a terminal, the user can trust the directory here and now.
            if !json
                && std::io::stdin().is_terminal()
                && super::approve::ask_to_trust(workspace.paths().root()).await
            {
                let written = crate::config::trust_project(workspace.paths().root())
                    .map_err(anyhow::Error::msg)?;
                eprintln!("bareagent: trusted (recorded in {})", written.display());
                settings = Config::load(workspace.paths().root()).map_err(anyhow::Error::msg)?;
            }
        }
        let sink: Arc<dyn TurnSink> = if json {
            Arc::new(JsonSink::default())
        } else {
            Arc::new(TerminalSink::new(args.quiet))
        };
        let model = model_parts(args, &settings, workspace.paths().root(), &sink)?;
        let mode = args
            .permission_mode
            .or(settings.permissions.mode)
            .unwrap_or_default();
        let gate = gate(&settings, mode, json, workspace.paths().root())?;
        let tools = ToolRegistry::standard();
        let config = LoopConfig {
            max_iterations: args.max_iterations,
            stream: !args.no_stream,
            price: model.price,
            context_window: model.context_window,
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
        let mut agent = TerminalAgent {
            args: args.clone(),
            json,
            workspace,
            settings,
            sink,
            model,
            mode,
            gate,
            tools,
            config,
            sandbox,
            inbox,
            background,
            reads: Arc::default(),
            refused: Vec::new(),
        };
        agent.read_instructions(prompt);
        Ok(agent)
    }

    /// The system prompt for a turn about `prompt`: the project
    /// instructions of the root and of the directories it names, read
    /// again each turn (as the language server does). A file refused is
    /// said once.
    pub fn read_instructions(&mut self, prompt: &str) {
        let instructions = load_instructions(
            self.workspace.paths(),
            &self.gate,
            user_instructions_path().as_deref(),
            &paths_in(prompt),
        );
        for file in &instructions.files {
            if let Some(why) = &file.refused {
                if !self.refused.contains(&file.path) {
                    eprintln!("bareagent: not reading {}: {why}", file.path);
                    self.refused.push(file.path.clone());
                }
            }
        }
        self.config.system = system_prompt(self.workspace.paths().root()) + &instructions.prompt;
    }

    /// The agent for one turn, cancelled by `cancel`, writing to `transcript`.
    pub fn agent<'a>(
        &'a self,
        cancel: CancellationToken,
        transcript: &'a dyn Transcript,
        sink: &'a dyn EventSink,
    ) -> Agent<'a> {
        Agent::new(AgentParts {
            provider: self.model.provider.as_ref(),
            tools: &self.tools,
            gate: &self.gate,
            workspace: &self.workspace,
            sandbox: &self.sandbox,
            sink,
            config: &self.config,
        })
        .with_inbox(&self.inbox)
        .with_background(&self.background)
        .with_compactor(&self.model.compaction)
        .with_reads(self.reads.clone())
        .with_cancel(cancel)
        .with_transcript(transcript)
    }

    /// The model asked, if it has a name.
    pub fn model(&self) -> Option<&str> {
        self.model.name.as_deref()
    }

    /// The model's price, if known.
    pub fn price(&self) -> Option<Price> {
        self.model.price
    }

    /// The model's context window, if known.
    pub fn context_window(&self) -> Option<u64> {
        self.model.context_window
    }

    /// Asks `name` from the next turn on: its provider, price, context
    /// window and compaction threshold. On an error nothing changes.
    pub fn set_model(&mut self, name: &str) -> anyhow::Result<()> {
        let mut args = self.args.clone();
        args.model = Some(name.to_string());
        let model = model_parts(
            &args,
            &self.settings,
            self.workspace.paths().root(),
            &self.sink,
        )?;
        self.config.price = model.price;
        self.config.context_window = model.context_window;
        self.model = model;
        self.args = args;
        Ok(())
    }

    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// Decides with `mode` from the next tool call on: the gate is rebuilt
    /// from the settings, so its rules are the same; what was allowed "for
    /// this session" is asked again. On an error nothing changes.
    pub fn set_mode(&mut self, mode: PermissionMode) -> anyhow::Result<()> {
        self.gate = gate(
            &self.settings,
            mode,
            self.json,
            self.workspace.paths().root(),
        )?;
        self.mode = mode;
        Ok(())
    }

    /// The gate a rewind goes through: the deny rules alone (the user asked
    /// for it, so nobody is asked).
    pub fn undo_gate(&self) -> anyhow::Result<PermissionGate> {
        Ok(self
            .settings
            .deny_rules_only(self.workspace.paths().root())?)
    }

    /// A new conversation: the model has seen no file, and what the old
    /// one left running in the background is stopped (its results would
    /// otherwise reach the new one).
    pub fn forget(&mut self) {
        self.background.kill_all();
        self.inbox.drain();
        self.reads = Arc::default();
    }

    /// Compacts `messages` now, between turns (`/compact`); the summary
    /// call's usage goes to `sink`. On an error they are as they were.
    pub async fn compact(
        &self,
        sink: &dyn EventSink,
        messages: &mut Vec<Message>,
    ) -> Result<Option<Compacted>, CompactError> {
        self.model
            .compaction
            .compact_idle(
                self.model.provider.as_ref(),
                &self.config.system,
                self.tools.specs(),
                self.config.max_tokens,
                sink,
                messages,
            )
            .await
    }
}

/// The gate for `mode`, from the settings, asking on the terminal.
fn gate(
    settings: &Config,
    mode: PermissionMode,
    json: bool,
    root: &std::path::Path,
) -> anyhow::Result<PermissionGate> {
    let approver = TerminalApprover::for_run(json, std::io::stdin().is_terminal());
    Ok(settings.gate(mode, Box::new(approver), root)?)
}

/// The provider for `args`' model (else the settings', else the default),
/// and what follows from the model's name.
fn model_parts(
    args: &AgentArgs,
    settings: &Config,
    root: &std::path::Path,
    sink: &Arc<dyn TurnSink>,
) -> anyhow::Result<ModelParts> {
    let choice = provider_choice(args, settings, root, sink.clone());
    let provider = choice.build()?;
    let name = choice.resolved_model().ok().flatten();
    let compaction = Compaction::new(CompactionSettings::for_model(
        name.as_deref().unwrap_or_default(),
        settings.context.window,
        settings.context.compact_at,
    ));
    Ok(ModelParts {
        provider,
        price: name.as_deref().and_then(|m| settings.price(m)),
        context_window: name.as_deref().and_then(context_window),
        name,
        compaction,
    })
}

/// Which provider to build, with each retry told to the user as one line.
fn provider_choice(
    args: &AgentArgs,
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
