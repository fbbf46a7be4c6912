//! How a warning reads on the terminal of `bareagent run` and `bareagent
//! chat`: one plain sentence, as the front ends' own messages are
//! (`bareagent: cannot write the session file; … (error: Read-only file
//! system)`), not a log record with a timestamp and a level. With
//! `BAREAGENT_LOG` set, someone is debugging: the full records are kept.

use std::fmt::Write as _;

use tracing::field::{Field, Visit};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// `bareagent: MESSAGE (FIELD: VALUE, …)`.
pub struct Sentence;

impl<S, N> FormatEvent<S, N> for Sentence
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let mut said = Said::default();
        event.record(&mut said);
        writeln!(writer, "{}", said.sentence())
    }
}

/// An event's message and its other fields, as written.
#[derive(Default)]
struct Said {
    message: String,
    fields: Vec<String>,
}

impl Said {
    fn sentence(&self) -> String {
        let mut line = format!("bareagent: {}", self.message);
        if !self.fields.is_empty() {
            let _ = write!(line, " ({})", self.fields.join(", "));
        }
        // A value may come from a file or a server: it shows, never steers.
        super::diff_view::visible_lines(&line).replace('\n', " ")
    }
}

impl Visit for Said {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record(field, value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.record(field, format!("{value:?}"));
    }
}

impl Said {
    fn record(&mut self, field: &Field, value: String) {
        match field.name() {
            "message" => self.message = value,
            name => self
                .fields
                .push(format!("{}: {value}", name.replace('_', " "))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_with_its_details_and_nothing_that_steers() {
        let said = Said {
            message: "cannot write the session file".into(),
            fields: vec!["error: Read-only\u{1b}[2J".into()],
        };
        assert_eq!(
            said.sentence(),
            "bareagent: cannot write the session file (error: Read-only\\u{1b}[2J)"
        );
    }
}
