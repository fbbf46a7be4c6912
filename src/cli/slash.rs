//! `bareagent chat`'s slash commands as data: their names, arguments and
//! help ([`COMMANDS`]), and the parser from what the user typed to a
//! prompt or a [`Slash`] command. What each command does is `chat.rs`'s.
//!
//! A line that starts with `/` is always a command, never sent to the
//! model by mistake: an unknown name is an error that lists the commands
//! (`//` sends a prompt that starts with `/`).

/// A command the user typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slash {
    Help,
    Cost,
    Sessions,
    /// A session's id; `None`: the latest.
    Resume(Option<String>),
    Compact,
    /// `None`: show the model.
    Model(Option<String>),
    /// `None`: show the mode.
    Mode(Option<String>),
    /// `None`: show the effort and thinking.
    Effort(Option<String>),
    /// `None`: show the effort and thinking.
    Thinking(Option<String>),
    Rewind,
    Clear,
    Exit,
}

/// A command's name, its argument, and what it does.
pub struct Spec {
    pub name: &'static str,
    /// The optional argument's name, e.g. `[ID]`; `None`: it takes none.
    pub argument: Option<&'static str>,
    pub help: &'static str,
}

/// Every command, in the order `/help` lists them.
pub const COMMANDS: &[Spec] = &[
    Spec {
        name: "help",
        argument: None,
        help: "this list",
    },
    Spec {
        name: "cost",
        argument: None,
        help: "this session's tokens (in, cache write, cache read, out), cost and context use",
    },
    Spec {
        name: "sessions",
        argument: None,
        help: "this workspace's saved sessions, the last used first",
    },
    Spec {
        name: "resume",
        argument: Some("[ID]"),
        help: "go on with a saved session (the latest if no ID)",
    },
    Spec {
        name: "compact",
        argument: None,
        help: "compact the history now (old tool results shrunk, then a summary)",
    },
    Spec {
        name: "model",
        argument: Some("[NAME]"),
        help: "show the model and list those the key can use, or ask NAME from the next turn on",
    },
    Spec {
        name: "mode",
        argument: Some("[MODE]"),
        help: "show the permission mode, or switch to default, accept-edits, plan or bypass",
    },
    Spec {
        name: "effort",
        argument: Some("[LEVEL]"),
        help: "show the effort, or ask minimal, low, medium, high, xhigh, max or default from the next turn on",
    },
    Spec {
        name: "thinking",
        argument: Some("[auto|off]"),
        help: "show whether the model thinks, or switch it auto or off from the next turn on",
    },
    Spec {
        name: "rewind",
        argument: None,
        help: "undo the last turn's edits and drop it from the history",
    },
    Spec {
        name: "clear",
        argument: None,
        help: "start a new session (the current one stays saved)",
    },
    Spec {
        name: "exit",
        argument: None,
        help: "end the chat (as Ctrl-D does)",
    },
];

/// What the user typed, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Nothing but spaces.
    Empty,
    Prompt(String),
    Command(Slash),
    /// `!command`: a shell command the user runs themself.
    Shell(String),
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SlashError {
    #[error("unknown command /{0}; the commands are {list} (type // to send a line that starts with /)", list = names())]
    Unknown(String),
    #[error("! takes a command to run: !git status")]
    NoCommand,
    #[error("/{0} takes no argument")]
    NoArgument(&'static str),
    #[error("/{name} takes one word: /{name} {argument}")]
    OneWord {
        name: &'static str,
        argument: &'static str,
    },
}

/// `/help, /cost, …`
fn names() -> String {
    COMMANDS
        .iter()
        .map(|c| format!("/{}", c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads what the user typed (one line or several).
pub fn parse(typed: &str) -> Result<Input, SlashError> {
    let trimmed = typed.trim();
    if trimmed.is_empty() {
        return Ok(Input::Empty);
    }
    if let Some(command) = trimmed.strip_prefix('!') {
        return match command.trim() {
            "" => Err(SlashError::NoCommand),
            command => Ok(Input::Shell(command.to_string())),
        };
    }
    if let Some(escaped) = trimmed.strip_prefix("//") {
        return Ok(Input::Prompt(format!("/{escaped}")));
    }
    let Some(command) = trimmed.strip_prefix('/') else {
        return Ok(Input::Prompt(trimmed.to_string()));
    };
    let (name, rest) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    let rest = rest.trim();
    let spec = COMMANDS
        .iter()
        .find(|spec| spec.name == name)
        .ok_or_else(|| SlashError::Unknown(name.to_string()))?;
    let argument = match (spec.argument, rest) {
        (_, "") => None,
        (None, _) => return Err(SlashError::NoArgument(spec.name)),
        (Some(argument), rest) if rest.contains(char::is_whitespace) => {
            return Err(SlashError::OneWord {
                name: spec.name,
                argument,
            });
        }
        (Some(_), rest) => Some(rest.to_string()),
    };
    let slash = match spec.name {
        "help" => Slash::Help,
        "cost" => Slash::Cost,
        "sessions" => Slash::Sessions,
        "resume" => Slash::Resume(argument),
        "compact" => Slash::Compact,
        "model" => Slash::Model(argument),
        "mode" => Slash::Mode(argument),
        "effort" => Slash::Effort(argument),
        "thinking" => Slash::Thinking(argument),
        "rewind" => Slash::Rewind,
        "clear" => Slash::Clear,
        "exit" => Slash::Exit,
        other => return Err(SlashError::Unknown(other.to_string())),
    };
    Ok(Input::Command(slash))
}

/// What `/help` prints: the commands, then how input works.
pub fn help() -> String {
    let mut text = String::from("Commands:\n");
    for spec in COMMANDS {
        let usage = match spec.argument {
            Some(argument) => format!("/{} {argument}", spec.name),
            None => format!("/{}", spec.name),
        };
        text.push_str(&format!("  {usage:<16} {}\n", spec.help));
    }
    text.push_str(
        "Input:\n  \
         Enter sends; a line ending in \\ goes on on the next line, and so does an open ``` block.\n  \
         // at the start sends a prompt that starts with /.\n  \
         !COMMAND runs COMMAND in the sandbox the agent's commands run in; its output goes\n  \
         into the conversation for the model to read with the next prompt.\n  \
         @PATH (Tab completes it) attaches that file of the workspace; an image's path\n  \
         (png, jpg, gif, webp), typed or pasted, attaches the image.\n  \
         A paste is one prompt; a long one shows as [pasted N lines] and is sent whole.\n  \
         Up and Down go through earlier prompts (kept in $XDG_STATE_HOME/bareagent/chat_history).\n  \
         Ctrl-C clears the line; during a turn it (or Esc) cancels the turn, and a\n  \
         second Ctrl-C within 2 seconds quits. What you type during a turn waits at the next prompt.\n  \
         Approvals: y once, s this session, a always, n or Enter no, t no and tell the agent why,\n  \
         v the whole diff in $PAGER (default less -R).\n  \
         Ctrl-D on an empty line ends the chat.\n",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_prompts_or_commands() {
        use Input::*;
        let cases: Vec<(&str, Result<Input, SlashError>)> = vec![
            ("", Ok(Empty)),
            ("  \n ", Ok(Empty)),
            ("fix the bug", Ok(Prompt("fix the bug".into()))),
            ("!git status ", Ok(Shell("git status".into()))),
            (" ! ", Err(SlashError::NoCommand)),
            ("  two\nlines  ", Ok(Prompt("two\nlines".into()))),
            ("/help", Ok(Command(Slash::Help))),
            (" /cost ", Ok(Command(Slash::Cost))),
            ("/sessions", Ok(Command(Slash::Sessions))),
            ("/resume", Ok(Command(Slash::Resume(None)))),
            (
                "/resume 20261201T143000123-ab12",
                Ok(Command(Slash::Resume(Some(
                    "20261201T143000123-ab12".into(),
                )))),
            ),
            ("/compact", Ok(Command(Slash::Compact))),
            ("/model", Ok(Command(Slash::Model(None)))),
            (
                "/model  claude-haiku-4-5 ",
                Ok(Command(Slash::Model(Some("claude-haiku-4-5".into())))),
            ),
            ("/mode plan", Ok(Command(Slash::Mode(Some("plan".into()))))),
            ("/effort", Ok(Command(Slash::Effort(None)))),
            (
                "/effort high",
                Ok(Command(Slash::Effort(Some("high".into())))),
            ),
            (
                "/thinking off",
                Ok(Command(Slash::Thinking(Some("off".into())))),
            ),
            ("/rewind", Ok(Command(Slash::Rewind))),
            ("/clear", Ok(Command(Slash::Clear))),
            ("/exit", Ok(Command(Slash::Exit))),
            // Never sent to the model by mistake.
            ("/foo", Err(SlashError::Unknown("foo".into()))),
            ("/", Err(SlashError::Unknown("".into()))),
            (
                "/etc/hosts: what is it?",
                Err(SlashError::Unknown("etc/hosts:".into())),
            ),
            ("/Help", Err(SlashError::Unknown("Help".into()))),
            ("/cost now", Err(SlashError::NoArgument("cost"))),
            (
                "/model a b",
                Err(SlashError::OneWord {
                    name: "model",
                    argument: "[NAME]",
                }),
            ),
            (
                "/resume a\nb",
                Err(SlashError::OneWord {
                    name: "resume",
                    argument: "[ID]",
                }),
            ),
            (
                "//etc/hosts: what is it?",
                Ok(Prompt("/etc/hosts: what is it?".into())),
            ),
        ];
        for (typed, want) in cases {
            assert_eq!(parse(typed), want, "{typed:?}");
        }
    }

    #[test]
    fn every_command_parses_and_is_in_the_help() {
        let help = help();
        for spec in COMMANDS {
            assert!(
                matches!(parse(&format!("/{}", spec.name)), Ok(Input::Command(_))),
                "{}",
                spec.name
            );
            assert!(help.contains(&format!("/{}", spec.name)), "{}", spec.name);
        }
        let unknown = SlashError::Unknown("foo".into()).to_string();
        assert!(unknown.contains("/rewind, /clear, /exit"), "{unknown}");
    }
}
