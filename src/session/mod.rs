//! One conversation with the agent, whatever front end holds it: the parts
//! a turn is made of, owned for the session's whole life, and
//! [`Session::run_turn`], the one way a turn runs — for `bareagent run` and
//! `chat`, the language server, `bareagent acp` and the integration tests.
//!
//! A front end keeps only its transport: it gives each turn a [`TurnIo`]
//! (its workspace, its way of asking the user, its sink for events, its
//! cancellation) and maps the [`TurnEnd`] to an exit code, a chat footer or
//! an ACP stop reason. Everything built the same way for every front end —
//! the provider (so one HTTP client and its connections for the session),
//! the compaction, the gate, the sandbox (one temp folder), the tools with
//! the MCP servers', the system prompt and instructions — is built here,
//! once, from the [`SessionSettings`].

mod change;
mod handle;
mod settings;
mod tally;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::sync::Locked;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use change::{ChangeError, Current, SessionChange, api_name, api_of};
pub use handle::{
    Afterwards, Busy, Compacting, HandleError, Job, JobEnd, RunQueued, RunTurn, SessionHandle,
    Started, Turn,
};
pub use settings::{
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_ITERATIONS, Layer, Layers, ProviderSettings, ReasoningArgs,
    SessionSettings, Source, Sources, Surface,
};
pub use tally::{Counted, FileCount, LineCounts, line_counts};

use crate::agent::{
    Agent, AgentParts, CODE_TOOL_PROMPT, CompactError, CompactRequest, Compacted, Compaction,
    CompactionSettings, Inbox, InstructionFile, JoiningTools, LoopConfig, LoopError, Message,
    TurnOutcome, load_instructions, paths_in, run_loop, system_prompt, system_prompt_in_editor,
    user_instructions_path,
};
use crate::events::{AgentEvent, EventSink, Spend};
use crate::language_servers::{LanguageServers, ServedWorkspace};
use crate::mcp::McpServers;
use crate::permission::{Approver, DenyAll, PermissionGate, PermissionMode};
use crate::provider::openai::session_cache_key;
use crate::provider::retry::RetryObserver;
use crate::provider::{Price, Provider, ProviderChoice, Usage, context_window};
use crate::sandbox::{Sandbox, SandboxStatus};
use crate::session_files::{Entry, NoTranscript, SessionFile, Transcript};
use crate::tools::{AnyTool, BackgroundTasks, ReadLedger, ToolRegistry};
use crate::workspace::Workspace;
use tally::Tally;

/// Why a session could not be opened or changed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Provider(#[from] crate::provider::ProviderError),
    #[error(transparent)]
    Settings(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Rules(#[from] crate::permission::RuleError),
    #[error("cannot set up the sandbox: {0}")]
    Sandbox(#[from] crate::sandbox::SandboxError),
}

/// What one turn is given by its front end.
pub struct TurnIo<'a> {
    pub workspace: &'a dyn Workspace,
    /// Asked when the gate asks; the session's rules and its "allow for
    /// this session" answers are the session's, whoever asks.
    pub approver: Box<dyn Approver>,
    pub sink: &'a dyn EventSink,
    pub cancel: CancellationToken,
    /// Files the turn is about besides those its prompt names (those open
    /// in an editor): the instructions near them are read.
    pub near: Vec<PathBuf>,
    /// The editor's own code intelligence, where its client answers
    /// `bareagent/codeIntelligence`; else the session's own language
    /// servers answer the `code` tool.
    pub code: Option<Arc<dyn crate::tools::code::Intelligence>>,
}

/// How a turn ended, and what it did.
#[derive(Debug)]
pub struct TurnEnd {
    pub result: Result<TurnOutcome, LoopError>,
    /// The turn's model calls, their usage and the files they changed.
    pub counted: Counted,
}

/// The parts that follow from the model's name.
struct Model {
    provider: Arc<dyn Provider>,
    /// `None`: the provider's default could not be named (a replay).
    name: Option<String>,
    compaction: Compaction,
}

/// Parts given rather than built from the settings: the integration
/// tests' scripted providers, their sandbox and compaction.
#[derive(Clone, Default)]
pub struct Given {
    pub provider: Option<Arc<dyn Provider>>,
    pub sandbox: Option<Arc<Sandbox>>,
    pub compaction: Option<CompactionSettings>,
    /// A gate of the caller's (one that saves no "always" answer).
    pub gate: Option<PermissionGate>,
    /// Where messages for the model wait (a test pushes to it mid-turn).
    pub inbox: Option<Inbox>,
}

/// What the session may do: the gate (its rules, its mode and every
/// "allow for this session" answer; each turn asks through its own
/// approver, outside a turn nobody) and the sandbox (one temp folder).
#[derive(Clone)]
struct Policy {
    gate: PermissionGate,
    sandbox: Arc<Sandbox>,
}

/// One conversation's parts, owned for its whole life.
pub struct Session {
    settings: Mutex<Arc<SessionSettings>>,
    layers: Mutex<Layers>,
    /// Built at the first turn (or [`Session::connect`]), then kept.
    model: Mutex<Option<Arc<Model>>>,
    /// Built when first needed (at once by [`Session::open`]), then kept.
    policy: Mutex<Option<Policy>>,
    /// The session's MCP servers, once it has any.
    mcp: Mutex<Option<Arc<McpServers>>>,
    /// Our own language servers, built when first asked for.
    code: Mutex<Option<Arc<LanguageServers>>>,
    /// Who answered the last turn's `code` tool (the editor's, where it
    /// answers): an idle compaction sends the tools that turn sent.
    last_code: Mutex<Option<Arc<dyn crate::tools::code::Intelligence>>>,
    reads: Mutex<Arc<ReadLedger>>,
    inbox: Inbox,
    background: Arc<BackgroundTasks>,
    history: Mutex<Vec<Message>>,
    file: Mutex<Option<Arc<SessionFile>>>,
    /// The usage and spend of the session's turns so far.
    totals: Mutex<(Usage, Spend)>,
    compact: CompactRequest,
    /// With the root, the session's `prompt_cache_key`.
    started: std::time::SystemTime,
    /// The provider's retries, told to the turn that is running.
    retries: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
    retry_sender: mpsc::UnboundedSender<String>,
    /// Said at the start of the next turn, then forgotten.
    notices: Mutex<Vec<String>>,
    /// The instruction files the last turn read; those refused are said once.
    instructions: Mutex<Vec<InstructionFile>>,
    refused: Mutex<Vec<String>>,
    /// One turn at a time.
    turn: tokio::sync::Mutex<()>,
    given: Given,
    /// The models the provider listed, asked once.
    models: crate::provider::model_list::ModelCatalog,
}

impl Session {
    /// A session from its layers: the gate and the sandbox built now, so
    /// a bad setting is said now (the provider at its first turn, or
    /// [`Session::check_provider`]). `mcp`: its servers (the front end
    /// says where their notices go).
    pub fn open(
        root: PathBuf,
        surface: Surface,
        layers: Layers,
        mcp: Arc<McpServers>,
    ) -> Result<Session, SessionError> {
        Session::open_with(root, surface, layers, Some(mcp), Given::default())
    }

    /// [`Session::open`], with some parts given.
    pub fn open_with(
        root: PathBuf,
        surface: Surface,
        layers: Layers,
        mcp: Option<Arc<McpServers>>,
        given: Given,
    ) -> Result<Session, SessionError> {
        let session = Session::unprepared(root, surface, layers, given);
        *session.mcp.locked() = mcp;
        session.prepare()?;
        Ok(session)
    }

    /// A session whose parts are built when first needed: by its first
    /// [`Session::reconfigure`] or turn (the language server's sessions,
    /// made before their settings are read).
    pub fn unprepared(root: PathBuf, surface: Surface, layers: Layers, given: Given) -> Session {
        let settings = SessionSettings::resolve(root, surface, layers.clone());
        let (retry_sender, retries) = mpsc::unbounded_channel();
        let inbox = given.inbox.clone().unwrap_or_default();
        Session {
            settings: Mutex::new(Arc::new(settings)),
            layers: Mutex::new(layers),
            model: Mutex::default(),
            policy: Mutex::default(),
            mcp: Mutex::default(),
            code: Mutex::default(),
            last_code: Mutex::default(),
            reads: Mutex::default(),
            background: Arc::new(BackgroundTasks::new(inbox.clone())),
            inbox,
            history: Mutex::default(),
            file: Mutex::default(),
            totals: Mutex::default(),
            compact: CompactRequest::default(),
            started: std::time::SystemTime::now(),
            retries: tokio::sync::Mutex::new(retries),
            retry_sender,
            notices: Mutex::default(),
            instructions: Mutex::default(),
            refused: Mutex::default(),
            turn: tokio::sync::Mutex::new(()),
            given,
            models: Default::default(),
        }
    }

    /// The gate and the sandbox, built from the settings if not yet; a
    /// sandbox that is not enforced is said at the next turn.
    fn prepare(&self) -> Result<Policy, SessionError> {
        let mut policy = self.policy.locked();
        if let Some(policy) = &*policy {
            return Ok(policy.clone());
        }
        let settings = self.settings();
        let gate = self.new_gate(&settings)?;
        let sandbox = self.builder().sandbox(&settings, &gate)?;
        if !matches!(sandbox.status(), SandboxStatus::Enforced { .. }) {
            self.tell(format!("bareagent: {}", sandbox.status()));
        }
        let built = Policy { gate, sandbox };
        *policy = Some(built.clone());
        Ok(built)
    }

    /// A gate with no answers yet: the given one in the settings' mode,
    /// else the settings' own.
    fn new_gate(&self, settings: &SessionSettings) -> Result<PermissionGate, SessionError> {
        match &self.given.gate {
            Some(gate) => Ok(gate.with_mode(settings.mode)),
            None => build_gate(settings),
        }
    }

    fn builder(&self) -> Builder<'_> {
        Builder {
            retries: &self.retry_sender,
            started: self.started,
            compact: &self.compact,
            given: &self.given,
        }
    }

    /// Runs one turn on `prompt`: the history grows by the prompt and
    /// what the loop appends, whatever the end (a failed or cancelled turn
    /// leaves a valid history), and the session file records the turn's end.
    pub async fn run_turn(&self, prompt: Message, io: TurnIo<'_>) -> TurnEnd {
        let _one_at_a_time = self.turn.lock().await;
        let tally = Tally::new(io.sink);
        for notice in std::mem::take(&mut *self.notices.locked()) {
            tally.emit(AgentEvent::Notice { text: notice });
        }
        let settings = self.settings();
        let model = match self.connect() {
            Ok(model) => model,
            Err(error) => {
                return TurnEnd {
                    result: Err(LoopError::Provider(error)),
                    counted: tally.counted(),
                };
            }
        };
        let Policy { gate, sandbox } = match self.prepare() {
            Ok(policy) => policy,
            Err(error) => {
                return TurnEnd {
                    result: Err(LoopError::Setup(error.to_string())),
                    counted: tally.counted(),
                };
            }
        };
        let gate = gate.with_approver(io.approver);
        // Where the editor reports no diagnostics, our own servers do:
        // told of each edit, their report follows it.
        let served;
        // (An editor that only sends those under the cursor with a code
        // action, as Helix does, is not one that reports.)
        // Without servers of our own, the editor's partial reports (those
        // code actions carry) are all there is: kept.
        let servers = self.language_servers_off_the_runtime().await;
        let workspace: &dyn Workspace = match io.workspace.diagnostics() {
            Some(editor) if editor.pushes() => io.workspace,
            _ if servers.is_empty() => io.workspace,
            _ => {
                served = ServedWorkspace::new(io.workspace, servers);
                &served
            }
        };
        let reads = self.reads.locked().clone();
        let file = self.file.locked().clone();
        let transcript: &dyn Transcript = match &file {
            Some(file) => file.as_ref(),
            None => &NoTranscript,
        };
        let mut near = paths_in(&prompt.text());
        near.extend(io.near);
        let code = self.code_intelligence(io.code.clone());
        let system = self
            .system_prompt(&settings, workspace, &gate, near, &tally, code.is_some())
            .await;
        let (tools, joining) = self.tools_now(&settings, code, &tally);
        let config = loop_config(&settings, &model, system);

        let mut lease = HistoryLease::take(self);
        let messages = &mut lease.messages;
        crate::session_files::append(messages, prompt, transcript);
        let result = {
            let agent = Agent::new(AgentParts {
                provider: model.provider.as_ref(),
                tools: &tools,
                gate: &gate,
                workspace,
                sandbox: &sandbox,
                sink: &tally,
                config: &config,
            })
            .with_inbox(&self.inbox)
            .with_background(&*self.background)
            .with_reads(reads)
            .with_compactor(&model.compaction)
            .with_cancel(io.cancel)
            .with_transcript(transcript)
            .with_joining(joining.as_ref().map(|j| j as &dyn JoiningTools));
            self.telling_retries(&tally, run_loop(&agent, messages))
                .await
        };
        drop(lease);
        if let Some(file) = file.clone() {
            // The sync waits for the disk: off the runtime's thread.
            let synced = tokio::task::spawn_blocking(move || file.record(Entry::TurnEnd)).await;
            if let Err(error) = synced {
                tracing::warn!(%error, "cannot sync the session file");
            }
        }
        let counted = tally.counted();
        {
            let mut totals = self.totals.locked();
            totals.0 += counted.usage;
            totals.1 = totals.1.then(&counted.spend);
        }
        TurnEnd { result, counted }
    }

    /// Runs `work` (a turn, a compaction: one at a time, under the turn
    /// lock), telling `sink` of each retry of its model calls as it happens.
    async fn telling_retries<T>(
        &self,
        sink: &dyn EventSink,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        let mut retries = self.retries.lock().await;
        tokio::pin!(work);
        loop {
            tokio::select! {
                // A retry told before the end it led to.
                biased;
                Some(retrying) = retries.recv() => {
                    sink.emit(AgentEvent::Notice { text: retrying });
                }
                done = &mut work => return done,
            }
        }
    }

    /// The system prompt for a turn: the surface's, with the instructions
    /// of the root and of the places the turn is about (read again each
    /// turn; a file refused is said once).
    async fn system_prompt(
        &self,
        settings: &SessionSettings,
        workspace: &dyn Workspace,
        gate: &PermissionGate,
        near: Vec<PathBuf>,
        sink: &dyn EventSink,
        code: bool,
    ) -> String {
        let paths = workspace.paths().clone();
        let reader = gate.clone();
        let instructions = tokio::task::spawn_blocking(move || {
            load_instructions(&paths, &reader, user_instructions_path().as_deref(), &near)
        })
        .await
        .unwrap_or_default();
        {
            let mut refused = self.refused.locked();
            for file in &instructions.files {
                if let Some(why) = &file.refused
                    && !refused.contains(&file.path)
                {
                    sink.emit(AgentEvent::Notice {
                        text: format!("bareagent: not reading {}: {why}", file.path),
                    });
                    refused.push(file.path.clone());
                }
            }
        }
        *self.instructions.locked() = instructions.files;
        let mut base = match settings.surface {
            Surface::Terminal | Surface::AgentPanel => system_prompt(&settings.root),
            Surface::Editor => system_prompt_in_editor(&settings.root),
        };
        if code {
            base.push_str(CODE_TOOL_PROMPT);
        }
        base + &instructions.prompt
    }

    /// Ours and the MCP servers' tools as they list them now (a server's
    /// list may change; one that failed is left out). Waits for servers
    /// still on their first start. `code` where a language server can
    /// answer it.
    async fn tools(
        &self,
        settings: &SessionSettings,
        code: Option<Arc<dyn crate::tools::code::Intelligence>>,
    ) -> ToolRegistry {
        let mcp = self.mcp.locked().clone();
        let mcp_tools = match mcp {
            Some(mcp) => mcp.tools().await,
            None => Vec::new(),
        };
        registry(settings.surface, code, mcp_tools)
    }

    /// A turn's tools without waiting: ours and those of the MCP servers
    /// running now. The servers still on their first start come up beside
    /// the first model call and join the turn at its next one ([`Joining`]),
    /// which changes the tools the model is sent once; the user is told
    /// which are still starting.
    fn tools_now(
        &self,
        settings: &SessionSettings,
        code: Option<Arc<dyn crate::tools::code::Intelligence>>,
        sink: &dyn EventSink,
    ) -> (ToolRegistry, Option<Joining>) {
        let Some(mcp) = self.mcp.locked().clone() else {
            return (registry(settings.surface, code, Vec::new()), None);
        };
        let starting = mcp.starting();
        let ready = mcp.ready_tools();
        if starting.is_empty() {
            return (registry(settings.surface, code, ready), None);
        }
        sink.emit(AgentEvent::Notice {
            text: format!(
                "bareagent: MCP {} still starting: {}; {} tools join from the model's next call",
                if starting.len() == 1 {
                    "server"
                } else {
                    "servers"
                },
                starting.join(", "),
                if starting.len() == 1 { "its" } else { "their" },
            ),
        });
        let joining = Joining {
            had: ready.iter().map(|tool| tool.spec().name).collect(),
            mcp,
            surface: settings.surface,
            code: code.clone(),
        };
        (registry(settings.surface, code, ready), Some(joining))
    }

    /// Compacts the history now, between turns (`/compact`, an editor's
    /// `bareagent.compact` on an idle session), with the system prompt and
    /// the tools a turn would send. The summary call's events go to `sink`.
    /// On an error the history is as it was.
    pub async fn compact_now(
        &self,
        workspace: &dyn Workspace,
        sink: &dyn EventSink,
    ) -> Result<Option<Compacted>, CompactError> {
        let _one_at_a_time = self.turn.lock().await;
        let settings = self.settings();
        let model = self.connect().map_err(CompactError::from)?;
        let gate = self
            .prepare()
            .map_err(|error| crate::provider::ProviderError::Config(error.to_string()))?
            .gate;
        let last = self.last_code.locked().clone();
        let code = self.code_intelligence(last);
        let system = self
            .system_prompt(
                &settings,
                workspace,
                &gate,
                Vec::new(),
                sink,
                code.is_some(),
            )
            .await;
        let tools = self.tools(&settings, code).await;
        let mut messages = self.history.locked().clone();
        let compacting = model.compaction.compact_idle(
            model.provider.as_ref(),
            &system,
            tools.specs(),
            (max_tokens(&model), settings.reasoning),
            sink,
            &mut messages,
        );
        let done = self.telling_retries(sink, compacting).await?;
        if let Some(done) = &done {
            let cost_usd = model
                .name
                .as_deref()
                .and_then(|name| settings.files.price(name))
                .map(|price| price.cost(&done.usage));
            if let Some(file) = self.file() {
                file.record(Entry::Usage {
                    usage: done.usage,
                    cost_usd,
                });
                file.record(Entry::Compaction {
                    before_tokens: done.before_tokens,
                    after_tokens: done.after_tokens,
                    messages: &messages,
                });
            }
            let spend = Spend {
                cost_usd,
                ..Spend::default()
            };
            self.add_spend(done.usage, spend);
            *self.history.locked() = messages;
        }
        Ok(done)
    }

    /// New layers (the editor's settings changed, `/model`, `/mode`,
    /// `session/set_mode`): each part whose settings changed is rebuilt,
    /// the others kept — the provider and its connections above all. A
    /// change of mode or rules starts the gate from the settings again:
    /// "allow for this session" answers are asked again. On an error
    /// nothing changes.
    pub fn reconfigure(&self, change: impl FnOnce(&mut Layers)) -> Result<(), SessionError> {
        let mut layers = self.layers.locked().clone();
        change(&mut layers);
        let old = self.settings();
        let new = SessionSettings::resolve(old.root.clone(), old.surface, layers.clone());
        let builder = self.builder();
        // Built now where one was, so a bad model is said now.
        let built = self.model.locked().is_some();
        let model = if new.provider != old.provider || context_changed(&old, &new) {
            Some(if built {
                Some(Arc::new(builder.model(&new)?))
            } else {
                None
            })
        } else {
            None
        };
        let current = self.policy.locked().clone();
        let policy = match current {
            None => None,
            Some(_) if new.files.permissions.rules != old.files.permissions.rules => {
                let gate = self.new_gate(&new)?;
                let sandbox = builder.sandbox(&new, &gate)?;
                Some(Policy { gate, sandbox })
            }
            Some(policy) if new.files.sandbox != old.files.sandbox => {
                let gate = match new.mode == old.mode {
                    true => policy.gate,
                    false => self.new_gate(&new)?,
                };
                let sandbox = builder.sandbox(&new, &gate)?;
                Some(Policy { gate, sandbox })
            }
            // A new mode starts from the settings' rules: an answer given
            // "for this session" in one mode is asked again in another.
            Some(policy) if new.mode != old.mode => Some(Policy {
                gate: self.new_gate(&new)?,
                sandbox: policy.sandbox,
            }),
            Some(_) => None,
        };
        if let Some(model) = model {
            *self.model.locked() = model;
        }
        if let Some(policy) = policy {
            *self.policy.locked() = Some(policy);
        }
        *self.layers.locked() = layers;
        *self.settings.locked() = Arc::new(new);
        Ok(())
    }

    /// Changes what the next turns use (the session's own layer): every
    /// front end's `/model`, `/effort`, `/mode` and their like. On an
    /// error nothing changes.
    pub fn change(&self, change: &SessionChange) -> Result<Current, ChangeError> {
        let settings = self.settings();
        let (layer, switched) = change.onto(self.layers().session, &settings)?;
        self.reconfigure(|layers| layers.session = layer)
            .map_err(|error| match (switched, &change.model) {
                (Some(kind), Some(model)) => ChangeError::Switched {
                    model: model.clone(),
                    api: api_name(kind),
                    error: Box::new(error),
                },
                _ => ChangeError::Session(Box::new(error)),
            })?;
        Ok(self.current())
    }

    /// The front end's layers anew (the editor's settings, the files read
    /// again); the session's own layer stays.
    pub fn set_layers(&self, layers: Layers) -> Result<(), SessionError> {
        self.reconfigure(|current| {
            *current = Layers {
                session: std::mem::take(&mut current.session),
                ..layers
            }
        })
    }

    /// What the next turn uses, and where each choice came from.
    pub fn current(&self) -> Current {
        Current::of(&self.settings())
    }

    pub fn settings(&self) -> Arc<SessionSettings> {
        self.settings.locked().clone()
    }

    pub fn layers(&self) -> Layers {
        self.layers.locked().clone()
    }

    pub fn mode(&self) -> PermissionMode {
        self.settings().mode
    }

    /// How hard the model is asked to think at the next call.
    pub fn reasoning(&self) -> crate::provider::Reasoning {
        self.settings().reasoning
    }

    /// The provider, built once for the session: one HTTP client, so its
    /// connections are kept from turn to turn.
    fn connect(&self) -> Result<Arc<Model>, crate::provider::ProviderError> {
        let mut model = self.model.locked();
        if let Some(model) = &*model {
            return Ok(model.clone());
        }
        let builder = Builder {
            retries: &self.retry_sender,
            started: self.started,
            compact: &self.compact,
            given: &self.given,
        };
        let built = Arc::new(builder.model(&self.settings())?);
        *model = Some(built.clone());
        Ok(built)
    }

    /// Builds the provider now, to say a configuration error before the
    /// first turn (`bareagent run`, `chat`).
    pub fn check_provider(&self) -> Result<(), crate::provider::ProviderError> {
        self.connect().map(|_| ())
    }

    /// The model asked, if it has a name: the provider's, once built;
    /// before, what the settings name (a question builds no provider).
    pub fn model(&self) -> Option<String> {
        if let Some(model) = &*self.model.locked() {
            return model.name.clone();
        }
        self.settings()
            .provider
            .choice()
            .resolved_model()
            .ok()
            .flatten()
    }

    /// The models to offer: what the session's provider lists for its
    /// credentials (asked once), else the built-in suggestions with a note.
    pub async fn list_models(&self) -> crate::provider::model_list::Listing {
        let kind = self
            .settings()
            .provider
            .choice()
            .resolved_kind()
            .unwrap_or(crate::provider::ProviderKind::Replay);
        let model = self.connect().map_err(|error| error.to_string());
        let provider = model.as_ref().map(|model| model.provider.as_ref());
        self.models.list(provider.map_err(Clone::clone), kind).await
    }

    /// The model's price, if known.
    pub fn price(&self) -> Option<Price> {
        let name = self.model()?;
        self.settings().files.price(&name)
    }

    /// The model's context window, if known: `[context] window`, else the
    /// model table's.
    pub fn context_window(&self) -> Option<u64> {
        window(&self.settings(), self.model().as_deref())
    }

    /// The sandbox the bash tool runs commands in (built if not yet): a
    /// chat user's own `!command` runs in it too.
    pub fn sandbox(&self) -> Result<Arc<Sandbox>, SessionError> {
        Ok(self.prepare()?.sandbox)
    }

    /// The sandbox's state; `None` before the session's first turn.
    pub fn sandbox_status(&self) -> Option<SandboxStatus> {
        Some(self.policy.locked().as_ref()?.sandbox.status().clone())
    }

    /// What the next turn would say first, said now instead.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.notices.locked())
    }

    /// Says `notice` at the start of the next turn.
    pub fn tell(&self, notice: String) {
        self.notices.locked().push(notice);
    }

    pub fn history(&self) -> Vec<Message> {
        self.history.locked().clone()
    }

    /// A message for the history without a turn (prompts a cancelled turn
    /// did not take), recorded in the session file.
    pub fn append(&self, message: Message) {
        let file = self.file.locked().clone();
        let transcript: &dyn Transcript = match &file {
            Some(file) => file.as_ref(),
            None => &NoTranscript,
        };
        crate::session_files::append(&mut self.history.locked(), message, transcript);
    }

    /// Where the conversation is kept from now on, and the history it
    /// continues (a resumed session's, or none): the model has seen no
    /// file yet, and what the old conversation left running in the
    /// background is stopped (its results would reach the new one).
    pub fn start_conversation(&self, file: Option<Arc<SessionFile>>, history: Vec<Message>) {
        self.background.kill_all();
        self.inbox.drain();
        *self.reads.locked() = Arc::default();
        *self.history.locked() = history;
        *self.file.locked() = file;
        *self.totals.locked() = Default::default();
    }

    /// The history as a rewind left it.
    pub fn set_history(&self, history: Vec<Message>) {
        *self.history.locked() = history;
    }

    /// Where the conversation is kept from now on (the history so far is
    /// not in it: a session saved from its first turn).
    pub fn set_file(&self, file: Arc<SessionFile>) {
        *self.file.locked() = Some(file);
    }

    pub fn file(&self) -> Option<Arc<SessionFile>> {
        self.file.locked().clone()
    }

    /// The session's usage and spend so far.
    pub fn totals(&self) -> (Usage, Spend) {
        *self.totals.locked()
    }

    /// Adds a compaction's usage and cost to the session's.
    pub fn add_spend(&self, usage: Usage, spend: Spend) {
        let mut totals = self.totals.locked();
        totals.0 += usage;
        totals.1 = totals.1.then(&spend);
    }

    pub fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    pub fn background(&self) -> &Arc<BackgroundTasks> {
        &self.background
    }

    /// The session's MCP servers, once it has some.
    pub fn mcp(&self) -> Option<Arc<McpServers>> {
        self.mcp.locked().clone()
    }

    /// Who answers the `code` tool: the editor, where it answers; else our
    /// own servers, where any is named for the project (an untrusted
    /// project's too: the model is told why it gets no answer); else no
    /// one, and the tool is not offered. Remembered for an idle compaction.
    fn code_intelligence(
        &self,
        editor: Option<Arc<dyn crate::tools::code::Intelligence>>,
    ) -> Option<Arc<dyn crate::tools::code::Intelligence>> {
        *self.last_code.locked() = editor.clone();
        editor.or_else(|| {
            let servers = self.language_servers();
            (!servers.is_empty()).then_some(servers as Arc<dyn crate::tools::code::Intelligence>)
        })
    }

    /// The session's own language servers, if a turn has made them (none
    /// is made here).
    pub fn code_servers(&self) -> Option<Arc<LanguageServers>> {
        self.code.locked().clone()
    }

    /// Gives the session its MCP servers, unless it has some (the first
    /// wins: two turns racing to make them keep one set).
    pub fn set_mcp(&self, servers: Arc<McpServers>) -> Arc<McpServers> {
        self.mcp.locked().get_or_insert(servers).clone()
    }

    /// The running turn compacts at its next step.
    pub fn compact_at_next_step(&self) {
        self.compact.ask();
    }

    /// The instruction files the last turn read.
    pub fn instructions(&self) -> Vec<InstructionFile> {
        self.instructions.locked().clone()
    }

    /// The gate a rewind and the files a prompt mentions go through: the
    /// deny rules alone (the user asked for it, so nobody is asked).
    pub fn deny_rules_gate(&self) -> Result<PermissionGate, SessionError> {
        let settings = self.settings();
        deny_rules_gate(&settings.files, &settings.root)
    }

    /// Stops what the session runs: background commands, MCP servers,
    /// language servers.
    pub async fn close(&self) {
        self.background.kill_all();
        let mcp = self.mcp.locked().clone();
        if let Some(mcp) = mcp {
            mcp.stop().await;
        }
        let code = self.code.locked().clone();
        if let Some(code) = code {
            code.stop().await;
        }
    }

    /// [`Session::language_servers`], built on a blocking thread the first
    /// time: finding them reads Helix's files and walks `PATH`, which would
    /// stall every other request of an editor on the runtime's one thread.
    async fn language_servers_off_the_runtime(&self) -> Arc<LanguageServers> {
        if let Some(servers) = self.code.locked().clone() {
            return servers;
        }
        let settings = self.settings();
        let sandbox = match self.prepare() {
            Ok(policy) => policy.sandbox,
            Err(_) => return self.language_servers(),
        };
        let built = tokio::task::spawn_blocking(move || {
            LanguageServers::new(&settings.files.code, &settings.root, sandbox)
        })
        .await;
        match built {
            Ok(built) => self.code.locked().get_or_insert(Arc::new(built)).clone(),
            Err(_) => self.language_servers(),
        }
    }

    /// The session's own language servers (those its settings, Helix's
    /// files and `PATH` name for the root), for the `code` tool where the
    /// editor cannot answer and for the diagnostics after an edit; built
    /// at the first call, none started until used, stopped with the
    /// session. Without a sandbox (a bad setting) there are none.
    pub fn language_servers(&self) -> Arc<LanguageServers> {
        let mut code = self.code.locked();
        if let Some(servers) = &*code {
            return servers.clone();
        }
        let settings = self.settings();
        let servers = match self.prepare() {
            Ok(policy) => Arc::new(LanguageServers::new(
                &settings.files.code,
                &settings.root,
                policy.sandbox,
            )),
            Err(error) => {
                tracing::warn!(%error, "no language servers without the sandbox");
                Arc::new(LanguageServers::none())
            }
        };
        *code = Some(servers.clone());
        servers
    }
}

/// Ours and the given MCP tools: `code` where a language server can
/// answer it.
fn registry(
    surface: Surface,
    code: Option<Arc<dyn crate::tools::code::Intelligence>>,
    mcp: Vec<Box<dyn AnyTool>>,
) -> ToolRegistry {
    let mut tools = match surface {
        Surface::Terminal | Surface::AgentPanel => ToolRegistry::standard(),
        Surface::Editor => ToolRegistry::in_editor(),
    };
    if let Some(code) = code {
        tools.register(crate::tools::code::Code::new(code.clone()));
        // Its sub-agents ask the same answerer.
        tools.register(crate::tools::Task::with_code(code));
    }
    for tool in mcp {
        tools.register_dyn(tool);
    }
    tools
}

/// The MCP servers a turn began without, joining it once they are up.
struct Joining {
    /// The MCP tools the turn began with, by name.
    had: Vec<String>,
    mcp: Arc<McpServers>,
    surface: Surface,
    code: Option<Arc<dyn crate::tools::code::Intelligence>>,
}

#[async_trait::async_trait]
impl JoiningTools for Joining {
    async fn join(&self) -> Option<ToolRegistry> {
        self.mcp.wait_started().await;
        let ready = self.mcp.ready_tools();
        let names: Vec<String> = ready.iter().map(|tool| tool.spec().name).collect();
        if names == self.had {
            return None;
        }
        Some(registry(self.surface, self.code.clone(), ready))
    }
}

/// The history, taken by a turn while it runs and put back when it ends
/// however it ends: a panic in the loop or a dropped turn leaves the
/// session with the history as far as it got, never with none.
struct HistoryLease<'s> {
    session: &'s Session,
    messages: Vec<Message>,
}

impl<'s> HistoryLease<'s> {
    fn take(session: &'s Session) -> Self {
        let messages = std::mem::take(&mut *session.history.locked());
        HistoryLease { session, messages }
    }
}

impl Drop for HistoryLease<'_> {
    fn drop(&mut self) {
        *self.session.history.locked() = std::mem::take(&mut self.messages);
    }
}

/// The loop's settings for a turn.
fn loop_config(settings: &SessionSettings, model: &Model, system: String) -> LoopConfig {
    LoopConfig {
        system,
        max_iterations: settings.max_iterations,
        stream: settings.stream,
        price: model
            .name
            .as_deref()
            .and_then(|name| settings.files.price(name)),
        context_window: window(settings, model.name.as_deref()),
        max_tokens: max_tokens(model),
        reasoning: settings.reasoning,
    }
}

/// The context window the user set (`[context] window`), else the model
/// table's: the one compaction counts against, so the usage line too.
fn window(settings: &SessionSettings, model: Option<&str>) -> Option<u64> {
    settings
        .context_window
        .filter(|w| *w > 0)
        .or_else(|| model.and_then(context_window))
}

/// The output limit of the session's model, from the model table.
fn max_tokens(model: &Model) -> u32 {
    match model.name.as_deref() {
        Some(name) => crate::provider::models::max_output_tokens(name),
        None => crate::provider::models::DEFAULT_MAX_OUTPUT,
    }
}

fn context_changed(old: &SessionSettings, new: &SessionSettings) -> bool {
    old.context_window != new.context_window || old.compact_at != new.compact_at
}

/// Builds the parts that follow from the settings, unless given.
struct Builder<'a> {
    /// Where the provider tells its retries.
    retries: &'a mpsc::UnboundedSender<String>,
    started: std::time::SystemTime,
    /// The user's "compact now", taken at the loop's next step.
    compact: &'a CompactRequest,
    given: &'a Given,
}

impl Builder<'_> {
    /// The provider for the settings' model and the compaction fitted to
    /// its context window.
    fn model(&self, settings: &SessionSettings) -> Result<Model, crate::provider::ProviderError> {
        let sender = self.retries.clone();
        let on_retry = RetryObserver::new(move |retrying| {
            let _ = sender.send(retrying.to_string());
        });
        let wanted = &settings.provider;
        let choice = ProviderChoice {
            http: wanted.http(Some(on_retry)),
            cache_key: Some(session_cache_key(&settings.root, self.started)),
            ..wanted.choice()
        };
        let (provider, name) = match &self.given.provider {
            Some(provider) => (provider.clone(), wanted.model.clone()),
            None => (
                Arc::from(choice.build()?),
                choice.resolved_model().ok().flatten(),
            ),
        };
        let compaction = self.given.compaction.unwrap_or_else(|| {
            CompactionSettings::for_model(
                name.as_deref().unwrap_or_default(),
                settings.context_window,
                settings.compact_at,
            )
        });
        Ok(Model {
            provider,
            name,
            compaction: Compaction::new(compaction).with_request(self.compact.clone()),
        })
    }

    fn sandbox(
        &self,
        settings: &SessionSettings,
        gate: &PermissionGate,
    ) -> Result<Arc<Sandbox>, SessionError> {
        if let Some(sandbox) = &self.given.sandbox {
            return Ok(sandbox.clone());
        }
        Ok(Arc::new(Sandbox::for_commands(
            &settings.files.sandbox,
            &settings.root,
            gate.denied_read_prefixes(),
        )?))
    }
}

/// [`Session::deny_rules_gate`] for settings read without a session
/// (`bareagent run --rewind`).
pub fn deny_rules_gate(
    files: &crate::config::Config,
    root: &std::path::Path,
) -> Result<PermissionGate, SessionError> {
    Ok(files.deny_rules_only(root)?)
}

/// The gate of the settings' rules and mode; nobody is asked until a turn
/// gives it its approver.
fn build_gate(settings: &SessionSettings) -> Result<PermissionGate, SessionError> {
    let nobody = DenyAll("nobody can be asked outside a turn".into());
    Ok(settings
        .files
        .gate(settings.mode, Box::new(nobody), &settings.root)?)
}
