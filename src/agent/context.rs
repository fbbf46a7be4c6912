//! How full the model's context is: its size in tokens, measured from what
//! the provider reported for the last call plus an estimate for what was
//! appended since, and each model's context window.
//!
//! The estimate is deliberately crude and errs high: a block's bytes / 4,
//! rounded up, plus [`BLOCK_OVERHEAD`] tokens per block. Tokenisers give
//! about 4 characters of English or code per token, fewer for other
//! scripts, whose UTF-8 bytes count 2–4 each here. It only has to cover
//! what one step appends between two reports (a tool result, a prompt);
//! the bulk comes from the provider's own count.

use crate::history::{ContentBlock, Message, Usage};
use crate::provider::ToolSpec;

/// Tokens added per content block for its framing (role, type, ids).
pub const BLOCK_OVERHEAD: u64 = 8;

/// The window of a model with no entry in the table.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// The context window of `model`, by its name's prefix, from what the
/// providers publish; [`DEFAULT_CONTEXT_WINDOW`] for a name not listed
/// (a local model: set `context.window` for it).
pub fn context_window(model: &str) -> u64 {
    // The one table of windows is the provider's, beside its prices.
    crate::provider::context_window(model).unwrap_or(DEFAULT_CONTEXT_WINDOW)
}

/// Estimated tokens of `text`: bytes / 4, rounded up.
pub fn estimate_text(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// Estimated tokens of one block.
fn estimate_block(block: &ContentBlock) -> u64 {
    BLOCK_OVERHEAD
        + match block {
            ContentBlock::Text { text } => estimate_text(text),
            ContentBlock::Thinking {
                thinking,
                signature,
            } => estimate_text(thinking) + estimate_text(signature),
            ContentBlock::RedactedThinking { data } => estimate_text(data),
            ContentBlock::Reasoning {
                summary,
                encrypted_content,
                ..
            } => {
                summary.iter().map(|s| estimate_text(s)).sum::<u64>()
                    + encrypted_content.as_deref().map_or(0, estimate_text)
            }
            ContentBlock::ToolUse { name, input, .. } => {
                estimate_text(name) + estimate_text(&input.to_string())
            }
            ContentBlock::ToolResult {
                content, images, ..
            } => estimate_text(content) + IMAGE_TOKENS * images.len() as u64,
            ContentBlock::Image(_) => IMAGE_TOKENS,
        }
}

/// Tokens counted per image. Anthropic charges about width × height / 750
/// tokens and scales an image down to about 1.15 megapixels first, so an
/// image costs at most about 1,600. We do not decode images to learn their
/// size, so every image counts as that ceiling: a fixed figure (rather than
/// base64 length / 4, which would count a 1 MB screenshot as 330,000
/// tokens) that still errs high, as the rest of the estimate does.
pub const IMAGE_TOKENS: u64 = 1_600;

/// Estimated tokens of `messages`.
pub fn estimate_messages(messages: &[Message]) -> u64 {
    messages
        .iter()
        .flat_map(|message| &message.content)
        .map(estimate_block)
        .sum()
}

/// Estimated tokens of what every request carries besides the messages.
pub fn estimate_fixed(system: &str, tools: &[ToolSpec]) -> u64 {
    estimate_text(system)
        + tools
            .iter()
            .map(|tool| {
                BLOCK_OVERHEAD
                    + estimate_text(&tool.name)
                    + estimate_text(&tool.description)
                    + estimate_text(&tool.input_schema.to_string())
            })
            .sum::<u64>()
}

/// The loop's measure of its context: the last report, and how many
/// messages it covered.
#[derive(Debug)]
pub(super) struct ContextMeter {
    /// System prompt and tools, estimated.
    fixed: u64,
    /// Tokens the provider counted for the last call's input and output,
    /// and the history's length once its answer was appended.
    reported: Option<(u64, usize)>,
}

impl ContextMeter {
    pub(super) fn new(fixed: u64) -> Self {
        ContextMeter {
            fixed,
            reported: None,
        }
    }

    /// The system prompt and tools, estimated.
    pub(super) fn fixed(&self) -> u64 {
        self.fixed
    }

    /// The context's size now, in tokens: the provider's count plus the
    /// estimate of what came since — or the estimate of it all, when that
    /// is more: a provider that counts less than bytes / 4 (a local server
    /// that counts nothing, a scripted one) is not believed, as an
    /// undercount would let the context overflow.
    pub(super) fn tokens(&self, messages: &[Message]) -> u64 {
        let estimate = self.fixed + estimate_messages(messages);
        match self.reported {
            Some((tokens, covered)) if covered <= messages.len() => {
                estimate.max(tokens + estimate_messages(&messages[covered..]))
            }
            _ => estimate,
        }
    }

    /// A call's usage, its answer now the last of `messages_len` messages.
    /// A provider that reports no input (some local servers) leaves the
    /// measure to the estimate.
    pub(super) fn observe(&mut self, usage: Usage, messages_len: usize) {
        let input =
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
        self.reported = (input > 0).then_some((input + usage.output_tokens, messages_len));
    }

    /// The history was rewritten: the last report no longer describes it.
    pub(super) fn forget(&mut self) {
        self.reported = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_come_from_the_table_by_prefix() {
        let cases = [
            ("claude-sonnet-4-5", 200_000),
            ("claude-test", 200_000),
            ("gpt-4.1-mini", 1_047_576),
            ("gpt-4o-mini", 128_000),
            ("llama3.1:8b", DEFAULT_CONTEXT_WINDOW),
        ];
        for (model, want) in cases {
            assert_eq!(context_window(model), want, "{model}");
        }
    }

    #[test]
    fn an_image_counts_a_fixed_ceiling_not_its_base64() {
        let image = crate::history::Image {
            media_type: "image/png".into(),
            data: "A".repeat(1_000_000),
        };
        let mut result = ContentBlock::tool_result("a", "abcd", false);
        if let ContentBlock::ToolResult { images, .. } = &mut result {
            images.push(image.clone());
            images.push(image.clone());
        }
        assert_eq!(
            estimate_block(&result),
            BLOCK_OVERHEAD + 1 + 2 * IMAGE_TOKENS
        );
        assert_eq!(
            estimate_block(&ContentBlock::Image(image)),
            BLOCK_OVERHEAD + IMAGE_TOKENS
        );
    }

    #[test]
    fn the_meter_adds_the_estimate_of_what_came_after_the_report() {
        let mut messages = vec![Message::user_text("x".repeat(400))];
        let mut meter = ContextMeter::new(50);
        assert_eq!(meter.tokens(&messages), 50 + 100 + BLOCK_OVERHEAD);
        messages.push(Message::assistant(vec![ContentBlock::Text {
            text: "ok".into(),
        }]));
        let usage = Usage {
            input_tokens: 10,
            cache_read_input_tokens: 1000,
            output_tokens: 5,
            ..Usage::default()
        };
        meter.observe(usage, messages.len());
        assert_eq!(meter.tokens(&messages), 1015);
        messages.push(Message::user_text("y".repeat(40)));
        assert_eq!(meter.tokens(&messages), 1015 + 10 + BLOCK_OVERHEAD);
        // A count below the estimate is not believed.
        meter.observe(
            Usage {
                input_tokens: 1,
                ..Usage::default()
            },
            messages.len(),
        );
        assert_eq!(meter.tokens(&messages), 50 + estimate_messages(&messages));
        meter.forget();
        assert_eq!(meter.tokens(&messages), 50 + estimate_messages(&messages));
        // No input reported: the estimate stands.
        meter.observe(Usage::default(), messages.len());
        assert_eq!(meter.tokens(&messages), 50 + estimate_messages(&messages));
    }
}
