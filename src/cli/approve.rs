//! Asking the user on the command line: a prompt on a terminal, a JSON
//! request and reply line with `--json`, and no when nobody can be asked.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::output::print_json_line;
use crate::permission::{Approval, Approver, DENIED_BY_USER, Question};

pub enum TerminalApprover {
    /// Prompt on stderr, answer on stdin.
    Tty,
    /// `{"type":"approval_request",…}` on stdout, one answer line on stdin.
    JsonLines,
    /// stdin is not a terminal: nobody can answer, so the answer is no.
    Nobody,
}

impl TerminalApprover {
    pub fn for_run(json: bool, stdin_is_terminal: bool) -> Self {
        match (json, stdin_is_terminal) {
            (true, _) => TerminalApprover::JsonLines,
            (false, true) => TerminalApprover::Tty,
            (false, false) => TerminalApprover::Nobody,
        }
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, question: &Question<'_>) -> Approval {
        let action = question.action;
        match self {
            TerminalApprover::Nobody => Approval::Reject(format!(
                "Denied: `{}` needs approval ({}) and there is no terminal to ask on. \
                 (The user can rerun with --permission-mode accept-edits or bypass, or add an allow rule.)",
                action.tool, question.reason
            )),
            TerminalApprover::Tty => {
                eprint!(
                    "Allow {} {}? ({})\n  [y] once  [s] allow {} for this session  [a] always (saved in .bareagent/config.toml)  [N] no: ",
                    action.tool, action.summary, question.reason, question.rule
                );
                parse_answer(&read_line().await)
            }
            TerminalApprover::JsonLines => {
                print_json_line(&json!({
                    "type": "approval_request", "tool": action.tool,
                    "kind": format!("{:?}", action.kind).to_lowercase(), "summary": action.summary,
                    "reason": question.reason, "rule": question.rule,
                }));
                parse_answer(&read_line().await)
            }
        }
    }
}

/// One line of stdin; empty at end of input.
async fn read_line() -> String {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        line
    })
    .await
    .unwrap_or_default()
}

/// `y`, `s`, `a`, or a JSON `{"decision": "allow" | "allow_session" |
/// "allow_always" | "reject"}`; anything else, end of input included, is no.
fn parse_answer(line: &str) -> Approval {
    let line = line.trim();
    let word = serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|value| {
            value
                .get("decision")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| line.to_lowercase());
    match word.as_str() {
        "y" | "yes" | "allow" | "once" => Approval::AllowOnce,
        "s" | "session" | "allow_session" => Approval::AllowForSession,
        "a" | "always" | "allow_always" => Approval::AllowAlways,
        _ => Approval::Reject(DENIED_BY_USER.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse() {
        assert_eq!(parse_answer("y\n"), Approval::AllowOnce);
        assert_eq!(parse_answer("S"), Approval::AllowForSession);
        assert_eq!(parse_answer("a"), Approval::AllowAlways);
        assert_eq!(
            parse_answer(r#"{"decision":"allow_session"}"#),
            Approval::AllowForSession
        );
        assert_eq!(parse_answer(""), Approval::Reject(DENIED_BY_USER.into()));
        assert_eq!(
            parse_answer("maybe"),
            Approval::Reject(DENIED_BY_USER.into())
        );
    }
}
