//! Resuming saved conversations in the editor: at start the main session
//! goes on with the workspace's last one (unless the `resume` setting says
//! `"never"`), and `bareagent.resume` lists them or resumes one. Either way
//! the chat file says what happened — which conversation the model now
//! remembers, or that a new one starts — so the chat and the model's
//! history never silently disagree.

use std::sync::Arc;

use serde_json::{Value, json};

use super::chat;
use super::state::{MAIN_SESSION, ResumeSetting, State};
use crate::session_files::{self, Loaded, SessionFile};

/// At `initialize`, before any command can run: the main session resumes
/// the last session, as the settings say. The chat is told in a task.
pub fn at_start(state: &Arc<State>) {
    let setting = state.editor_settings().resume.unwrap_or_default();
    let paths = state.init().paths.clone();
    let notice = match setting {
        ResumeSetting::Never => {
            Some("A new conversation starts (the `resume` setting is `never`): the agent does not remember what is above.".to_string())
        }
        ResumeSetting::Last => match session_files::latest(&paths).and_then(|id| match id {
            Some(id) => session_files::load(&paths, &id).map(Some),
            None => Ok(None),
        }) {
            Ok(Some((loaded, file))) => install(state, loaded, file).ok(),
            Ok(None) => Some("A new conversation starts: there is no saved conversation to resume, so the agent does not remember what is above.".to_string()),
            Err(error) => {
                tracing::warn!(%error, "cannot resume the last session");
                Some(format!("A new conversation starts: the last one cannot be resumed ({error}). The agent does not remember what is above."))
            }
        },
    };
    let Some(notice) = notice else { return };
    let state = state.clone();
    tokio::spawn(async move {
        let resumed = state.lock_sessions().contains_key(MAIN_SESSION);
        let current = chat::current_text(&state).unwrap_or_default();
        // A chat without a reply in it has nothing to be mistaken for.
        let holds_a_conversation = current.lines().any(|l| l.trim_end() == chat::AGENT);
        if !resumed && !holds_a_conversation {
            return;
        }
        if chat::pending_prompt(&current).is_some() {
            // Appended now, it would part the user's prompt from its heading.
            let mut sessions = state.lock_sessions();
            sessions
                .entry(MAIN_SESSION.to_string())
                .or_insert_with(|| state.new_session())
                .chat_notice = Some(notice);
            return;
        }
        tell_chat(&state, &notice).await;
    });
}

/// `bareagent.resume`: `{"id"}` resumes that session as the main one;
/// without it, the sessions to offer.
pub async fn command(state: &Arc<State>, argument: &Value) -> Result<Value, String> {
    let paths = state.init().paths.clone();
    let Some(id) = argument
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        let list = tokio::task::spawn_blocking(move || session_files::list(&paths))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let current = state
            .lock_sessions()
            .get(MAIN_SESSION)
            .and_then(|s| s.core.file().map(|f| f.id().to_string()));
        return Ok(json!({"sessions": list, "current": current}));
    };
    if state
        .lock_sessions()
        .get(MAIN_SESSION)
        .is_some_and(|s| s.handle.running().is_some())
    {
        return Err(
            "a turn is running: cancel it (bareagent.cancel) before resuming another conversation"
                .into(),
        );
    }
    let current = state
        .lock_sessions()
        .get(MAIN_SESSION)
        .and_then(|s| s.core.file().map(|f| f.id() == id));
    if current == Some(true) {
        return Ok(json!({"resumed": id, "message": "already the current conversation"}));
    }
    let loading = id.clone();
    let (loaded, file) = tokio::task::spawn_blocking(move || session_files::load(&paths, &loading))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let messages = loaded.messages.len();
    let repaired = loaded.repaired;
    let notice = install(state, loaded, file)?;
    tell_chat(state, &notice).await;
    Ok(json!({"resumed": id, "messages": messages, "repaired": repaired, "message": notice}))
}

/// Makes `loaded` the main session; returns what the chat is told.
fn install(state: &State, loaded: Loaded, file: SessionFile) -> Result<String, String> {
    let id = file.id().to_string();
    let repaired = match loaded.repaired {
        0 => String::new(),
        n => format!(" {n} tool call(s) cut off when bareagent stopped are marked interrupted."),
    };
    let notice = format!(
        "Resumed conversation `{id}` ({} messages, started {}): the agent remembers it.{repaired}",
        loaded.messages.len(),
        loaded.header.created
    );
    let session = state.new_session();
    session
        .core
        .start_conversation(Some(Arc::new(file)), loaded.messages);
    session
        .core
        .add_spend(loaded.usage, crate::events::Spend::default());
    let mut sessions = state.lock_sessions();
    // Checked again under the lock: a turn may have started while loading.
    if sessions
        .get(MAIN_SESSION)
        .is_some_and(|s| s.handle.running().is_some())
    {
        return Err(BUSY.into());
    }
    if let Some(old) = sessions.insert(MAIN_SESSION.to_string(), session) {
        // Sent now; the old session's task stops what it runs.
        drop(old.handle.close());
    }
    Ok(notice)
}

const BUSY: &str =
    "a turn is running: cancel it (bareagent.cancel) before resuming another conversation";

/// Appends `notice` to the chat under a heading of its own, then a fresh
/// `## You` (so the notice is never taken for the user's prompt).
pub(super) async fn tell_chat(state: &Arc<State>, notice: &str) {
    let path = state.chat_path();
    let paths = state.init().paths.clone();
    let created = tokio::task::spawn_blocking(move || chat::ensure_exists(&paths, &path)).await;
    if !matches!(created, Ok(Ok(()))) {
        tracing::warn!("cannot create the chat file to say which conversation this is");
        return;
    }
    let current = chat::current_text(state).unwrap_or_default();
    let text = format!(
        "{}## bareagent\n\n{notice}\n\n{}\n\n",
        chat::blank_line_after(&current),
        chat::YOU
    );
    chat::append(state, &text).await;
}
