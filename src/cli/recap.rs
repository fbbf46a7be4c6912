//! What a resumed chat shows of what was said (`chat --continue`,
//! `--resume`, `/resume`): the last few exchanges, dimmed, each prompt and
//! the answer that ended its turn cut to a few lines.
//!
//! Only what people wrote and read shows: never the agent's own markup in
//! the history (a rewind's `<system-reminder>` note, a compaction's
//! `<conversation-summary>`, the `<user-message>` wrapper of a prompt sent
//! during a turn), nor tool calls, their results or thinking.

use crate::agent::{Message, Role};

/// Exchanges shown.
const EXCHANGES: usize = 3;
/// Lines of a prompt shown, and of an answer.
const PROMPT_LINES: usize = 2;
const ANSWER_LINES: usize = 4;

/// A prompt and the answer its turn ended with (empty: none yet).
#[derive(Debug, PartialEq)]
struct Exchange {
    prompt: String,
    answer: String,
}

/// The recap of `messages` as stderr shows it: dimmed where it has colour,
/// each line ending with a newline; empty for an empty history.
pub fn for_stderr(messages: &[Message]) -> String {
    let width = super::output::stderr_width().unwrap_or(100);
    let dim = super::diff_view::colour_on_stderr();
    lines(messages, width)
        .into_iter()
        .map(|line| match dim {
            true => format!("\x1b[2m{line}\x1b[0m\n"),
            false => format!("{line}\n"),
        })
        .collect()
}

/// The recap's lines (none for an empty history), each at most `width`
/// characters, escaped as model text is (it may come from a file).
pub fn lines(messages: &[Message], width: usize) -> Vec<String> {
    let exchanges = exchanges(messages);
    let skipped = exchanges.len().saturating_sub(EXCHANGES);
    let mut out = Vec::new();
    if skipped > 0 {
        out.push(format!(
            "  … {}",
            crate::text::count(skipped, "earlier exchange")
        ));
    }
    for exchange in &exchanges[skipped..] {
        push_cut(&mut out, "you", &exchange.prompt, PROMPT_LINES, width);
        if !exchange.answer.is_empty() {
            push_cut(&mut out, "agent", &exchange.answer, ANSWER_LINES, width);
        }
    }
    out
}

/// `text`'s first `max` non-empty lines after `who:`, each cut to `width`.
fn push_cut(out: &mut Vec<String>, who: &str, text: &str, max: usize, width: usize) {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let width = width.saturating_sub(4).max(20);
    for (index, line) in lines.iter().take(max).enumerate() {
        let lead = if index == 0 {
            format!("  {who}: ")
        } else {
            " ".repeat(who.len() + 4)
        };
        let room = width.saturating_sub(lead.chars().count()).max(10);
        // An answer's markdown as its words (`## Plan` → `Plan`), made visible.
        let line = super::markdown::plain(line.trim_end());
        out.push(format!("{lead}{}", crate::text::clip(&line, room)));
    }
    if lines.len() > max {
        out.push(format!("{}…", " ".repeat(who.len() + 4)));
    }
}

fn exchanges(messages: &[Message]) -> Vec<Exchange> {
    let mut exchanges: Vec<Exchange> = Vec::new();
    for message in messages {
        let text = message.text();
        match message.role {
            Role::User => {
                if let Some(prompt) = said_by_user(&text) {
                    exchanges.push(Exchange {
                        prompt,
                        answer: String::new(),
                    });
                }
            }
            // The turn's last text is its answer; text before a tool call
            // is replaced by what came after it.
            Role::Assistant => {
                if let Some(last) = exchanges.last_mut()
                    && !text.trim().is_empty()
                {
                    last.answer = text.trim().to_string();
                }
            }
        }
    }
    exchanges
}

/// What the user wrote in a user message's text, the agent's markup taken
/// out; `None` when nothing is left (a rewind's note, a summary, tool results).
fn said_by_user(text: &str) -> Option<String> {
    if text.trim_start().starts_with("<conversation-summary>") {
        return None;
    }
    let mut said = strip_spans(text, "<system-reminder>", "</system-reminder>");
    if let Some(inner) = said
        .trim()
        .strip_prefix("<user-message>")
        .and_then(|rest| rest.strip_suffix("</user-message>"))
    {
        said = inner.to_string();
    }
    let said = said.trim();
    (!said.is_empty()).then(|| said.to_string())
}

/// `text` without every `open`…`close` span (an unclosed one runs to the end).
fn strip_spans(text: &str, open: &str, close: &str) -> String {
    let mut kept = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        kept.push_str(&rest[..start]);
        rest = match rest[start..].find(close) {
            Some(end) => &rest[start + end + close.len()..],
            None => "",
        };
    }
    kept.push_str(rest);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ContentBlock;

    fn user(text: &str) -> Message {
        Message::user_text(text.to_string())
    }

    fn assistant(text: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: text.to_string(),
            }],
        }
    }

    #[test]
    fn markup_never_shows_and_the_last_exchanges_do() {
        let messages = vec![
            user("<conversation-summary>\nolder\n</conversation-summary>"),
            user("first"),
            assistant("one"),
            user("second"),
            assistant("looking"),
            assistant("two\nlines\n\nthree\nfour\nfive"),
            user("third"),
            user("<system-reminder>The user rewound the turn above.</system-reminder>"),
            user("<user-message>\nsent during\n</user-message>"),
            assistant("## \u{1b}[2JDone\n**all** good"),
        ];
        assert_eq!(
            lines(&messages, 40),
            vec![
                "  … 1 earlier exchange",
                "  you: second",
                "  agent: two",
                "         lines",
                "         three",
                "         four",
                "         …",
                "  you: third",
                "  you: sent during",
                "  agent: \\u{1b}[2JDone",
                "         all good",
            ]
        );
        assert!(lines(&[], 40).is_empty());
    }
}
