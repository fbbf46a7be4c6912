//! What we know about each model without asking it: its price per million
//! tokens and its context window. Used to show a turn's cost and how full
//! its context is; never to decide anything about a request.
//!
//! A model that is not in the table has no price and no window: its cost is
//! reported as unknown, never as zero (a guess would be a wrong bill). The
//! user's `[prices."model"]` in config.toml adds or overrides an entry.
//!
//! A dated snapshot (`claude-sonnet-4-5-20250929`, `gpt-4.1-2025-04-14`,
//! `claude-opus-4-1@20250805`) is priced as the model it snapshots.

use serde::{Deserialize, Serialize};

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

/// Published list prices, USD per million tokens, as of 2025-11 (Anthropic's
/// and OpenAI's pricing pages): input, output, cache write, cache read.
/// OpenAI charges nothing extra to write its cache (its usage reports no
/// cache writes), so its write price is the input price.
const PRICES: &[(&str, Price)] = &[
    ("claude-sonnet-4-5", Price::new(3.0, 15.0, 3.75, 0.30)),
    ("claude-sonnet-4", Price::new(3.0, 15.0, 3.75, 0.30)),
    ("claude-sonnet-4-0", Price::new(3.0, 15.0, 3.75, 0.30)),
    ("claude-3-7-sonnet", Price::new(3.0, 15.0, 3.75, 0.30)),
    ("claude-opus-4-5", Price::new(5.0, 25.0, 6.25, 0.50)),
    ("claude-opus-4-1", Price::new(15.0, 75.0, 18.75, 1.50)),
    ("claude-opus-4", Price::new(15.0, 75.0, 18.75, 1.50)),
    ("claude-opus-4-0", Price::new(15.0, 75.0, 18.75, 1.50)),
    ("claude-haiku-4-5", Price::new(1.0, 5.0, 1.25, 0.10)),
    ("claude-3-5-haiku", Price::new(0.80, 4.0, 1.0, 0.08)),
    ("gpt-4.1", Price::new(2.0, 8.0, 2.0, 0.50)),
    ("gpt-4.1-mini", Price::new(0.40, 1.60, 0.40, 0.10)),
    ("gpt-4.1-nano", Price::new(0.10, 0.40, 0.10, 0.025)),
    ("gpt-4o", Price::new(2.50, 10.0, 2.50, 1.25)),
    ("gpt-4o-mini", Price::new(0.15, 0.60, 0.15, 0.075)),
    ("gpt-5", Price::new(1.25, 10.0, 1.25, 0.125)),
    ("gpt-5-mini", Price::new(0.25, 2.0, 0.25, 0.025)),
    ("gpt-5-nano", Price::new(0.05, 0.40, 0.05, 0.005)),
    ("o1", Price::new(15.0, 60.0, 15.0, 7.50)),
    ("o3", Price::new(2.0, 8.0, 2.0, 0.50)),
    ("o3-mini", Price::new(1.10, 4.40, 1.10, 0.55)),
    ("o4-mini", Price::new(1.10, 4.40, 1.10, 0.275)),
];

/// The built-in price of `model`, if the table has it.
pub fn builtin_price(model: &str) -> Option<Price> {
    let model = undated(model);
    PRICES
        .iter()
        .find(|(name, _)| *name == model)
        .map(|(_, price)| *price)
}

/// How many tokens `model` can take in one request (prompt and answer),
/// if the table knows it.
///
/// The one place the crate knows context windows (compaction reads its
/// threshold from here too, once it has one).
pub fn context_window(model: &str) -> Option<u64> {
    let model = undated(model);
    let window = if model.starts_with("claude-") {
        200_000
    } else if model.starts_with("gpt-4.1") {
        1_047_576
    } else if model.starts_with("gpt-4o") {
        128_000
    } else if model.starts_with("gpt-5") {
        400_000
    } else if ["o1", "o3", "o3-mini", "o4-mini"].contains(&model) {
        200_000
    } else {
        return None;
    };
    Some(window)
}

/// The output limit asked for when the table does not know the model: what
/// every model of the last years takes.
pub const DEFAULT_MAX_OUTPUT: u32 = 8192;

/// The `max_tokens` to ask of `model`: its output limit, if the table knows
/// it; else [`DEFAULT_MAX_OUTPUT`].
pub fn max_output_tokens(model: &str) -> u32 {
    let model = undated(model);
    if model.starts_with("claude-") {
        64_000
    } else if model.starts_with("gpt-4.1") {
        32_768
    } else if model.starts_with("gpt-5") || ["o1", "o3", "o3-mini", "o4-mini"].contains(&model) {
        100_000
    } else {
        DEFAULT_MAX_OUTPUT
    }
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
            ("gpt-4.1-2025-04-14", Some(2.0)),
            ("gpt-4.1-mini", Some(0.40)),
            ("gpt-4.1-mini-2025-04-14", Some(0.40)),
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
    fn windows_are_known_only_for_known_families() {
        assert_eq!(context_window("claude-haiku-4-5"), Some(200_000));
        assert_eq!(context_window("gpt-4o-2024-08-06"), Some(128_000));
        assert_eq!(context_window("o3"), Some(200_000));
        assert_eq!(context_window("qwen2.5-coder"), None);
    }
}
