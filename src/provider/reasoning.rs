//! How hard the model is asked to think: the user's `thinking` and `effort`
//! settings, one value every wire format reads. Each format maps them onto
//! its API as the model in use accepts (`models::ModelInfo` says which
//! parameters a model takes): Anthropic's `thinking` and
//! `output_config.effort`, the Responses API's `reasoning.effort`, Chat
//! Completions' `reasoning_effort`.
//!
//! Per call, not per provider: `/effort` takes effect at the next model
//! call without a new HTTP client.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether the model thinks before it answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Thinking {
    /// As the model does best: adaptive thinking where the model has it, a
    /// budget where it needs one, the API's default reasoning otherwise.
    #[default]
    Auto,
    /// No thinking, where the model allows turning it off (some refuse:
    /// they think at the lowest effort instead).
    Off,
}

/// How much the model should spend on an answer: thinking, text and tool
/// calls. Not every model takes every level; a wire format sends the
/// nearest one the model takes and says so in the log.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl Effort {
    pub const ALL: [Effort; 6] = [
        Effort::Minimal,
        Effort::Low,
        Effort::Medium,
        Effort::High,
        Effort::Xhigh,
        Effort::Max,
    ];

    /// The name the settings and the APIs use.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
            Effort::Max => "max",
        }
    }

    /// A level by name (`--effort`, `/effort`, an editor setting).
    pub fn parse(name: &str) -> Result<Effort, String> {
        Effort::ALL
            .into_iter()
            .find(|effort| effort.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Effort::ALL.iter().map(|e| e.as_str()).collect();
                format!(
                    "`{name}` is not an effort; the efforts are {}",
                    names.join(", ")
                )
            })
    }
}

impl Thinking {
    pub fn as_str(self) -> &'static str {
        match self {
            Thinking::Auto => "auto",
            Thinking::Off => "off",
        }
    }

    pub fn parse(name: &str) -> Result<Thinking, String> {
        match name {
            "auto" => Ok(Thinking::Auto),
            "off" => Ok(Thinking::Off),
            _ => Err(format!(
                "`{name}` is not a thinking setting; it is auto or off"
            )),
        }
    }
}

/// The reasoning asked of one model call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Reasoning {
    pub thinking: Thinking,
    /// `None`: the model's own default.
    pub effort: Option<Effort>,
}

/// Which of OpenAI's APIs an `openai` provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OpenAiWire {
    /// `POST /v1/responses`: reasoning items carried between calls. The
    /// default for OpenAI's own endpoint.
    Responses,
    /// `POST /v1/chat/completions`: what every OpenAI-compatible server
    /// speaks (Ollama, llama.cpp, vLLM, LM Studio, OpenRouter). The default
    /// for any other base URL.
    Chat,
}

impl OpenAiWire {
    pub fn as_str(self) -> &'static str {
        match self {
            OpenAiWire::Responses => "responses",
            OpenAiWire::Chat => "chat",
        }
    }

    pub fn parse(name: &str) -> Result<OpenAiWire, String> {
        match name {
            "responses" => Ok(OpenAiWire::Responses),
            "chat" => Ok(OpenAiWire::Chat),
            _ => Err(format!("`{name}` is not a wire; it is responses or chat")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_others_are_refused() {
        for effort in Effort::ALL {
            assert_eq!(Effort::parse(effort.as_str()), Ok(effort));
        }
        for thinking in [Thinking::Auto, Thinking::Off] {
            assert_eq!(Thinking::parse(thinking.as_str()), Ok(thinking));
        }
        for wire in [OpenAiWire::Responses, OpenAiWire::Chat] {
            assert_eq!(OpenAiWire::parse(wire.as_str()), Ok(wire));
        }
        assert!(Effort::parse("HIGH").is_err());
        assert!(Effort::parse("").is_err());
        assert!(Thinking::parse("on").is_err());
        assert!(OpenAiWire::parse("completions").is_err());
    }
}
