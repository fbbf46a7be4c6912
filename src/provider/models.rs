//! What we know about each model without asking it: its price per million
//! tokens, its context window, its output limit, and the reasoning
//! parameters it takes. One table ([`info`]); the cost and context shown
//! to the user, `max_tokens`, and each wire's thinking and effort
//! parameters all read it.
//!
//! A model that is not in the table has no price and no window: its cost is
//! reported as unknown, never as zero (a guess would be a wrong bill). The
//! user's `[prices."model"]` in config.toml adds or overrides an entry.
//!
//! A dated snapshot (`claude-sonnet-4-5-20250929`, `gpt-4.1-2025-04-14`,
//! `claude-opus-4-1@20250805`) is priced as the model it snapshots.

use serde::{Deserialize, Serialize};

use super::reasoning::Effort;
use crate::history::Usage;

/// USD per million tokens, by kind of token.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Tokens written to the prompt cache (Anthropic's 5-minute cache).
    /// Unset in a settings file: the input price.
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Tokens read from the prompt cache. Unset in a settings file: the
    /// input price (an over-estimate, never an under-estimate).
    #[serde(default)]
    pub cache_read: Option<f64>,
}

impl Price {
    const fn new(input: f64, output: f64, cache_write: f64, cache_read: f64) -> Price {
        Price {
            input,
            output,
            cache_write: Some(cache_write),
            cache_read: Some(cache_read),
        }
    }

    /// What `usage` cost at this price, in USD.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per_token = |tokens: u64, usd_per_mtok: f64| tokens as f64 * usd_per_mtok / 1e6;
        let usd = per_token(usage.input_tokens, self.input)
            + per_token(usage.output_tokens, self.output)
            + per_token(
                usage.cache_creation_input_tokens,
                self.cache_write.unwrap_or(self.input),
            )
            + per_token(
                usage.cache_read_input_tokens,
                self.cache_read.unwrap_or(self.input),
            );
        // To the nano-dollar, as `events::round_usd` sums them.
        (usd * 1e9).round() / 1e9
    }
}

// What we relied on (read 2026-12-02), for the table below:
// - Anthropic models: https://platform.claude.com/docs/en/about-claude/models/overview
//   and each model's page (…/docs/en/models/<model>/overview): context
//   window, max output, thinking mode, default effort.
// - Anthropic prices: https://platform.claude.com/docs/en/about-claude/pricing
//   (base input, 5-minute cache write, cache hit, output).
// - Which thinking each model takes and refuses (400):
//   https://platform.claude.com/docs/en/build-with-claude/thinking-troubleshooting,
//   …/adaptive-thinking, …/extended-thinking, …/effort, and the "what's new"
//   pages (Sonnet 5.5 refuses `disabled`; Fable/Mythos 5 and 5.1 refuse
//   `disabled` and `enabled`; Opus 4.7 and later refuse `enabled`).
// - The interleaved-thinking beta header (`interleaved-thinking-2025-05-14`):
//   needed by the Claude 4 models with budgeted thinking; adaptive thinking
//   interleaves without it; Sonnet 3.7 does not interleave.
// - OpenAI: https://developers.openai.com/api/docs/models/<model> and
//   https://developers.openai.com/api/docs/pricing (input, cached input,
//   output); `reasoning.effort` per model from the API reference
//   (`gpt-5.1` takes none|low|medium|high, models before it minimal|low|
//   medium|high, xhigh from gpt-5.2 on, o-series low|medium|high).
// Where the figures (Claude Code 2.1.197's table) and the pricing
// page differ, the pricing page wins: Sonnet 5 is $2/$10 there, not $3/$15.

/// What a model takes to think, and how hard.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ModelReasoning {
    /// Anthropic's Messages API.
    Anthropic {
        thinking: AnthropicThinking,
        /// `thinking: {"type": "disabled"}` is a 400: thinking cannot be
        /// turned off, only turned down (the lowest effort).
        refuses_disabled: bool,
        /// Budgeted thinking between tool calls needs the
        /// `interleaved-thinking-2025-05-14` beta header.
        interleaved_beta: bool,
        /// The `output_config.effort` levels taken, lowest first; empty:
        /// the parameter is not taken.
        efforts: &'static [Effort],
    },
    /// OpenAI's APIs (`reasoning.effort`, `reasoning_effort`).
    OpenAi {
        /// The effort levels taken, lowest first; empty: not a reasoning
        /// model (no reasoning parameter at all).
        efforts: &'static [Effort],
        /// Whether `none` is taken: reasoning turned off.
        takes_none: bool,
    },
}

/// Which of Anthropic's `thinking` types a model takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnthropicThinking {
    /// No thinking at all.
    None,
    /// `{"type": "enabled", "budget_tokens": N}` only.
    Budget,
    /// `{"type": "adaptive"}`, and a budget still (deprecated).
    Adaptive,
    /// `{"type": "adaptive"}` only: a budget is a 400.
    AdaptiveOnly,
}

/// What the crate knows of one model family without asking it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelInfo {
    /// Tokens one request can hold, prompt and answer.
    pub context_window: u64,
    /// The most `max_tokens` may ask for.
    pub max_output_tokens: u32,
    pub price: Price,
    pub reasoning: ModelReasoning,
}

use Effort::{High, Low, Max, Medium, Minimal, Xhigh};

/// Anthropic's effort levels before `xhigh` (the 4.6 models).
const CLAUDE_4_6_EFFORTS: &[Effort] = &[Low, Medium, High, Max];
/// From Opus 4.7 on.
const CLAUDE_EFFORTS: &[Effort] = &[Low, Medium, High, Xhigh, Max];

const fn claude(
    context_window: u64,
    max_output_tokens: u32,
    price: Price,
    thinking: AnthropicThinking,
    refuses_disabled: bool,
    efforts: &'static [Effort],
) -> ModelInfo {
    ModelInfo {
        context_window,
        max_output_tokens,
        price,
        reasoning: ModelReasoning::Anthropic {
            thinking,
            refuses_disabled,
            // Budgeted thinking on a Claude 4 model; Sonnet 3.7 (the only
            // other budget model) does not interleave at all.
            interleaved_beta: false,
            efforts,
        },
    }
}

/// A Claude 4 model that thinks on a budget, between tool calls too with
/// the beta header.
const fn claude_4_budget(context_window: u64, max_output_tokens: u32, price: Price) -> ModelInfo {
    ModelInfo {
        context_window,
        max_output_tokens,
        price,
        reasoning: ModelReasoning::Anthropic {
            thinking: AnthropicThinking::Budget,
            refuses_disabled: false,
            interleaved_beta: true,
            efforts: &[],
        },
    }
}

const fn gpt(
    context_window: u64,
    max_output_tokens: u32,
    price: Price,
    efforts: &'static [Effort],
    takes_none: bool,
) -> ModelInfo {
    ModelInfo {
        context_window,
        max_output_tokens,
        price,
        reasoning: ModelReasoning::OpenAi {
            efforts,
            takes_none,
        },
    }
}

const K: u32 = 1_000;
const M: u64 = 1_000_000;

/// Fable and Mythos 5.1: adaptive thinking always on, cache reads at a
/// quarter of Fable 5's.
const FABLE_5_1: ModelInfo = claude(
    M,
    128 * K,
    Price::new(10.0, 50.0, 12.50, 0.25),
    AnthropicThinking::AdaptiveOnly,
    true,
    CLAUDE_EFFORTS,
);
const FABLE_5: ModelInfo = claude(
    M,
    128 * K,
    Price::new(10.0, 50.0, 12.50, 1.00),
    AnthropicThinking::AdaptiveOnly,
    true,
    CLAUDE_EFFORTS,
);
/// Opus 5.5: adaptive thinking always on (default effort medium). Cache
/// prices at the usual 1.25x and the 5.5 models' 0.05x of input.
const OPUS_5_5: ModelInfo = claude(
    M,
    128 * K,
    Price::new(4.0, 20.0, 5.0, 0.20),
    AnthropicThinking::AdaptiveOnly,
    true,
    CLAUDE_EFFORTS,
);
/// Opus 4.7, 4.8 and 5: adaptive only, `disabled` still taken.
const OPUS_ADAPTIVE: ModelInfo = claude(
    M,
    128 * K,
    Price::new(5.0, 25.0, 6.25, 0.50),
    AnthropicThinking::AdaptiveOnly,
    false,
    CLAUDE_EFFORTS,
);
const OPUS_4_6: ModelInfo = claude(
    M,
    128 * K,
    Price::new(5.0, 25.0, 6.25, 0.50),
    AnthropicThinking::Adaptive,
    false,
    CLAUDE_4_6_EFFORTS,
);
const OPUS_4_5: ModelInfo = claude_4_budget(200_000, 64 * K, Price::new(5.0, 25.0, 6.25, 0.50));
const OPUS_4: ModelInfo = claude_4_budget(200_000, 32 * K, Price::new(15.0, 75.0, 18.75, 1.50));
/// Sonnet 5.5: `between_tools` in place of `disabled` (which is a 400);
/// cache reads cut to $0.10 on 2026-10-07.
const SONNET_5_5: ModelInfo = claude(
    M,
    128 * K,
    Price::new(2.0, 10.0, 2.50, 0.10),
    AnthropicThinking::AdaptiveOnly,
    true,
    CLAUDE_EFFORTS,
);
/// Sonnet 5: $3 / $15 (cache $3.75 / $0.30), as Claude Code 2.1.197's own
/// price table has it (observed 2026-12, issue 21). A copy of the pricing
/// page found by search said $2 / $10; the higher is kept until a bill says
/// otherwise: a cost shown too high is corrected, one shown too low misleads.
const SONNET_5: ModelInfo = claude(
    M,
    128 * K,
    Price::new(3.0, 15.0, 3.75, 0.30),
    AnthropicThinking::AdaptiveOnly,
    false,
    CLAUDE_EFFORTS,
);
const SONNET_4_6: ModelInfo = claude(
    M,
    128 * K,
    Price::new(3.0, 15.0, 3.75, 0.30),
    AnthropicThinking::Adaptive,
    false,
    CLAUDE_4_6_EFFORTS,
);
const SONNET_4: ModelInfo = claude_4_budget(200_000, 64 * K, Price::new(3.0, 15.0, 3.75, 0.30));
const SONNET_3_7: ModelInfo = claude(
    200_000,
    64 * K,
    Price::new(3.0, 15.0, 3.75, 0.30),
    AnthropicThinking::Budget,
    false,
    &[],
);
/// Haiku 5.5, priced at its band for prompts up to 100k tokens (longer
/// ones cost five times as much; the table has one price per model).
const HAIKU_5_5: ModelInfo = claude(
    M,
    128 * K,
    Price::new(0.10, 0.50, 0.125, 0.01),
    AnthropicThinking::AdaptiveOnly,
    false,
    CLAUDE_EFFORTS,
);
const HAIKU_4_5: ModelInfo = claude_4_budget(200_000, 64 * K, Price::new(1.0, 5.0, 1.25, 0.10));
const HAIKU_3_5: ModelInfo = claude(
    200_000,
    8192,
    Price::new(0.80, 4.0, 1.0, 0.08),
    AnthropicThinking::None,
    false,
    &[],
);

/// GPT-5.2 and later: `none` to `xhigh`.
const GPT_5_2_EFFORTS: &[Effort] = &[Low, Medium, High, Xhigh];
const GPT_5_1_EFFORTS: &[Effort] = &[Low, Medium, High];
const GPT_5_EFFORTS: &[Effort] = &[Minimal, Low, Medium, High];
const O_SERIES_EFFORTS: &[Effort] = &[Low, Medium, High];
/// OpenAI charges nothing extra to write its cache: the cache writes its
/// usage now reports (`cache_write_tokens`) are priced as input.
const fn openai_price(input: f64, output: f64, cached: f64) -> Price {
    Price::new(input, output, input, cached)
}

/// Every model the crate knows, by the names the APIs take (aliases side
/// by side; dated snapshots are found through [`undated`]).
const MODELS: &[(&[&str], ModelInfo)] = &[
    (&["claude-fable-5-1", "claude-mythos-5-1"], FABLE_5_1),
    (&["claude-fable-5", "claude-mythos-5"], FABLE_5),
    (&["claude-opus-5-5"], OPUS_5_5),
    (
        &["claude-opus-5", "claude-opus-4-8", "claude-opus-4-7"],
        OPUS_ADAPTIVE,
    ),
    (&["claude-opus-4-6"], OPUS_4_6),
    (&["claude-opus-4-5"], OPUS_4_5),
    (
        &["claude-opus-4-1", "claude-opus-4", "claude-opus-4-0"],
        OPUS_4,
    ),
    (&["claude-sonnet-5-5"], SONNET_5_5),
    (&["claude-sonnet-5"], SONNET_5),
    (&["claude-sonnet-4-6"], SONNET_4_6),
    (
        &["claude-sonnet-4-5", "claude-sonnet-4", "claude-sonnet-4-0"],
        SONNET_4,
    ),
    (&["claude-3-7-sonnet"], SONNET_3_7),
    (&["claude-haiku-5-5"], HAIKU_5_5),
    (&["claude-haiku-4-5"], HAIKU_4_5),
    (&["claude-3-5-haiku"], HAIKU_3_5),
    (
        &["gpt-5.5"],
        gpt(
            1_050_000,
            128 * K,
            openai_price(5.0, 30.0, 0.50),
            GPT_5_2_EFFORTS,
            true,
        ),
    ),
    (
        &["gpt-5.4"],
        gpt(
            1_050_000,
            128 * K,
            openai_price(2.50, 15.0, 0.25),
            GPT_5_2_EFFORTS,
            true,
        ),
    ),
    (
        &["gpt-5.2"],
        gpt(
            400_000,
            128 * K,
            openai_price(1.75, 14.0, 0.175),
            GPT_5_2_EFFORTS,
            true,
        ),
    ),
    (
        &["gpt-5.1"],
        gpt(
            400_000,
            128 * K,
            openai_price(1.25, 10.0, 0.125),
            GPT_5_1_EFFORTS,
            true,
        ),
    ),
    (
        &["gpt-5"],
        gpt(
            400_000,
            128 * K,
            openai_price(1.25, 10.0, 0.125),
            GPT_5_EFFORTS,
            false,
        ),
    ),
    (
        &["gpt-5-mini"],
        gpt(
            400_000,
            128 * K,
            openai_price(0.25, 2.0, 0.025),
            GPT_5_EFFORTS,
            false,
        ),
    ),
    (
        &["gpt-5-nano"],
        gpt(
            400_000,
            128 * K,
            openai_price(0.05, 0.40, 0.005),
            GPT_5_EFFORTS,
            false,
        ),
    ),
    (
        &["gpt-4.1"],
        gpt(1_047_576, 32_768, openai_price(2.0, 8.0, 0.50), &[], false),
    ),
    (
        &["gpt-4.1-mini"],
        gpt(
            1_047_576,
            32_768,
            openai_price(0.40, 1.60, 0.10),
            &[],
            false,
        ),
    ),
    (
        &["gpt-4.1-nano"],
        gpt(
            1_047_576,
            32_768,
            openai_price(0.10, 0.40, 0.025),
            &[],
            false,
        ),
    ),
    (
        &["gpt-4o"],
        gpt(128_000, 16_384, openai_price(2.50, 10.0, 1.25), &[], false),
    ),
    (
        &["gpt-4o-mini"],
        gpt(128_000, 16_384, openai_price(0.15, 0.60, 0.075), &[], false),
    ),
    (
        &["o1"],
        gpt(
            200_000,
            100 * K,
            openai_price(15.0, 60.0, 7.50),
            O_SERIES_EFFORTS,
            false,
        ),
    ),
    (
        &["o3"],
        gpt(
            200_000,
            100 * K,
            openai_price(2.0, 8.0, 0.50),
            O_SERIES_EFFORTS,
            false,
        ),
    ),
    (
        &["o3-mini"],
        gpt(
            200_000,
            100 * K,
            openai_price(1.10, 4.40, 0.55),
            O_SERIES_EFFORTS,
            false,
        ),
    ),
    (
        &["o4-mini"],
        gpt(
            200_000,
            100 * K,
            openai_price(1.10, 4.40, 0.275),
            O_SERIES_EFFORTS,
            false,
        ),
    ),
];

/// What the table knows of `model` (a dated snapshot: of the model it
/// snapshots).
pub fn info(model: &str) -> Option<&'static ModelInfo> {
    let model = undated(model);
    MODELS
        .iter()
        .find(|(names, _)| names.contains(&model))
        .map(|(_, info)| info)
}

/// The built-in price of `model`, if the table has it.
pub fn builtin_price(model: &str) -> Option<Price> {
    info(model).map(|info| info.price)
}

/// How many tokens `model` can take in one request (prompt and answer),
/// if the table knows it. A Claude model the table does not know yet is
/// taken to have 200k, what every Claude since 3 has had at least.
///
/// The one place the crate knows context windows (compaction reads its
/// threshold from here too).
pub fn context_window(model: &str) -> Option<u64> {
    match info(model) {
        Some(info) => Some(info.context_window),
        None if model.starts_with("claude-") => Some(200_000),
        None => None,
    }
}

/// The output limit asked for when the table does not know the model: what
/// every model of the last years takes.
pub const DEFAULT_MAX_OUTPUT: u32 = 8192;

/// The `max_tokens` to ask of `model`: its output limit, if the table knows
/// it; else [`DEFAULT_MAX_OUTPUT`].
pub fn max_output_tokens(model: &str) -> u32 {
    info(model).map_or(DEFAULT_MAX_OUTPUT, |info| info.max_output_tokens)
}

/// The effort levels `model` takes, lowest first; empty when it takes none
/// or the table does not know it.
fn efforts(model: &str) -> &'static [Effort] {
    match info(model).map(|info| info.reasoning) {
        Some(
            ModelReasoning::Anthropic { efforts, .. } | ModelReasoning::OpenAi { efforts, .. },
        ) => efforts,
        None => &[],
    }
}

/// The effort to send `model` for `asked`: the level itself if the model
/// takes it, else the nearest one it takes (between two, the lower: never
/// more than was asked for); `None` when it takes none. A model the table
/// does not know gets what was asked, as asked: its API is the judge.
pub fn effort_for(model: &str, asked: Effort) -> Option<Effort> {
    if info(model).is_none() {
        return Some(asked);
    }
    let rank = |effort: Effort| effort as i32;
    efforts(model)
        .iter()
        .copied()
        .min_by_key(|&level| ((rank(level) - rank(asked)).abs(), rank(level)))
}

/// `model` without a snapshot date: `-20250929`, `-2025-04-14`, `@20250805`.
fn undated(model: &str) -> &str {
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((name, date)) = model.rsplit_once('@')
        && all_digits(date)
    {
        return name;
    }
    if let Some((name, date)) = model.rsplit_once('-')
        && date.len() == 8
        && all_digits(date)
    {
        return name;
    }
    // `-YYYY-MM-DD`: the last three parts are 4, 2 and 2 digits.
    let parts: Vec<&str> = model.rsplitn(4, '-').collect();
    if let [day, month, year, name] = parts[..]
        && [(day, 2), (month, 2), (year, 4)]
            .iter()
            .all(|(part, len)| part.len() == *len && all_digits(part))
    {
        return name;
    }
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_are_priced_as_their_model_and_near_names_are_not() {
        let cases = [
            ("claude-sonnet-4-5", Some(3.0)),
            ("claude-sonnet-4-5-20250929", Some(3.0)),
            ("claude-opus-4-1@20250805", Some(15.0)),
            ("claude-opus-4-5", Some(5.0)),
            ("claude-opus-4-5-20251101", Some(5.0)),
            ("claude-opus-4-8", Some(5.0)),
            ("claude-sonnet-5", Some(3.0)),
            ("claude-fable-5", Some(10.0)),
            ("claude-mythos-5-1", Some(10.0)),
            ("claude-haiku-4-5-20251001", Some(1.0)),
            ("gpt-4.1-2025-04-14", Some(2.0)),
            ("gpt-4.1-mini", Some(0.40)),
            ("gpt-4.1-mini-2025-04-14", Some(0.40)),
            ("gpt-5.5", Some(5.0)),
            ("o4-mini", Some(1.10)),
            // Not a snapshot of a known model: unknown, never a neighbour's price.
            ("gpt-4.1-turbo", None),
            ("claude-sonnet-4-5-beta", None),
            ("llama3.1:8b", None),
            ("", None),
        ];
        for (model, input) in cases {
            assert_eq!(builtin_price(model).map(|p| p.input), input, "{model}");
        }
    }

    #[test]
    fn cache_prices_follow_the_pricing_page() {
        // (model, cache write, cache read)
        let cases = [
            ("claude-opus-4-7", 6.25, 0.50),
            ("claude-opus-4-1", 18.75, 1.50),
            ("claude-sonnet-4-6", 3.75, 0.30),
            ("claude-haiku-4-5", 1.25, 0.10),
            ("claude-fable-5", 12.50, 1.00),
            ("claude-fable-5-1", 12.50, 0.25),
            ("gpt-5.5", 5.0, 0.50),
        ];
        for (model, write, read) in cases {
            let price = builtin_price(model).unwrap();
            assert_eq!(
                (price.cache_write, price.cache_read),
                (Some(write), Some(read)),
                "{model}"
            );
        }
    }

    #[test]
    fn windows_and_output_limits_come_from_the_table() {
        // (model, context window, max output)
        let cases = [
            ("claude-haiku-4-5", Some(200_000), 64_000),
            ("claude-opus-4-1", Some(200_000), 32_000),
            ("claude-opus-4-6", Some(1_000_000), 128_000),
            ("claude-sonnet-5-20260630", Some(1_000_000), 128_000),
            ("claude-3-5-haiku", Some(200_000), 8192),
            // A Claude the table does not know yet: at least 200k, and the
            // output limit every model takes.
            ("claude-test", Some(200_000), DEFAULT_MAX_OUTPUT),
            ("gpt-4o-2024-08-06", Some(128_000), 16_384),
            ("gpt-4.1", Some(1_047_576), 32_768),
            ("gpt-5.5", Some(1_050_000), 128_000),
            ("o3", Some(200_000), 100_000),
            ("qwen2.5-coder", None, DEFAULT_MAX_OUTPUT),
        ];
        for (model, window, output) in cases {
            assert_eq!(context_window(model), window, "{model}");
            assert_eq!(max_output_tokens(model), output, "{model}");
        }
    }

    #[test]
    fn thinking_modes_follow_the_docs() {
        use AnthropicThinking::*;
        // (model, thinking, refuses `disabled`, needs the interleaving beta)
        let cases = [
            ("claude-3-5-haiku", None, false, false),
            ("claude-3-7-sonnet", Budget, false, false),
            ("claude-sonnet-4-5", Budget, false, true),
            ("claude-opus-4-5", Budget, false, true),
            ("claude-haiku-4-5", Budget, false, true),
            ("claude-sonnet-4-6", Adaptive, false, false),
            ("claude-opus-4-6", Adaptive, false, false),
            ("claude-opus-4-7", AdaptiveOnly, false, false),
            ("claude-sonnet-5", AdaptiveOnly, false, false),
            ("claude-sonnet-5-5", AdaptiveOnly, true, false),
            ("claude-fable-5", AdaptiveOnly, true, false),
            ("claude-mythos-5-1", AdaptiveOnly, true, false),
        ];
        for (model, want, refuses, beta) in cases {
            let Some(ModelInfo {
                reasoning:
                    ModelReasoning::Anthropic {
                        thinking,
                        refuses_disabled,
                        interleaved_beta,
                        ..
                    },
                ..
            }) = info(model)
            else {
                panic!("{model}: not an Anthropic model in the table")
            };
            assert_eq!(
                (*thinking, *refuses_disabled, *interleaved_beta),
                (want, refuses, beta),
                "{model}"
            );
        }
    }

    #[test]
    fn an_effort_is_clamped_to_the_nearest_level_the_model_takes() {
        use Effort::*;
        // (model, asked, sent)
        let cases = [
            ("claude-opus-4-7", Xhigh, Some(Xhigh)),
            ("claude-opus-4-7", Minimal, Some(Low)),
            // 4.6 has no xhigh: between high and max, the lower.
            ("claude-opus-4-6", Xhigh, Some(High)),
            ("claude-opus-4-6", Max, Some(Max)),
            // Budget models take no effort (it sizes their budget instead).
            ("claude-sonnet-4-5", High, None),
            ("gpt-5", Minimal, Some(Minimal)),
            ("gpt-5", Max, Some(High)),
            ("gpt-5.1", Minimal, Some(Low)),
            ("gpt-5.5", Max, Some(Xhigh)),
            ("o3", Xhigh, Some(High)),
            ("gpt-4.1", High, None),
            // Not in the table: as asked; the API is the judge.
            ("llama3.1:8b", Max, Some(Max)),
            ("claude-test", Minimal, Some(Minimal)),
        ];
        for (model, asked, sent) in cases {
            assert_eq!(effort_for(model, asked), sent, "{model} {asked:?}");
        }
    }

    #[test]
    fn reasoning_models_say_whether_they_take_none() {
        let takes_none = |model: &str| match info(model).map(|i| i.reasoning) {
            Some(ModelReasoning::OpenAi { takes_none, .. }) => takes_none,
            other => panic!("{model}: {other:?}"),
        };
        assert!(takes_none("gpt-5.1"));
        assert!(takes_none("gpt-5.5"));
        assert!(!takes_none("gpt-5"));
        assert!(!takes_none("o4-mini"));
    }
}
