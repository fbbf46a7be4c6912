//! The session's reasoning as ACP session config options: `effort` and
//! `thinking`, two selects of the `thought_level` category, offered in
//! `session/new` and `session/load` and changed by
//! `session/set_config_option`. A change is the session layer of the
//! session's settings (as `/effort` is in `chat`), from the next prompt on.

use agent_client_protocol::v1::schema::{
    SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelect, SessionConfigSelectOption,
};

use crate::provider::{Effort, Reasoning, Thinking};
use crate::session::Layer;

pub const EFFORT: &str = "effort";
pub const THINKING: &str = "thinking";
/// The effort value that leaves the choice to the settings (and the model).
const DEFAULT: &str = "default";

/// The options as the session now asks.
pub fn options(reasoning: Reasoning) -> Vec<SessionConfigOption> {
    let efforts = std::iter::once(
        SessionConfigSelectOption::new(DEFAULT, "Default")
            .description("The settings' effort, else the model's own".to_string()),
    )
    .chain(
        Effort::ALL
            .into_iter()
            .map(|effort| SessionConfigSelectOption::new(effort.as_str(), effort.as_str())),
    )
    .collect::<Vec<_>>();
    let thinking = [Thinking::Auto, Thinking::Off]
        .into_iter()
        .map(|thinking| SessionConfigSelectOption::new(thinking.as_str(), thinking.as_str()))
        .collect::<Vec<_>>();
    vec![
        SessionConfigOption::new(
            EFFORT,
            "Effort",
            SessionConfigKind::Select(SessionConfigSelect::new(
                reasoning.effort.map_or(DEFAULT, Effort::as_str),
                efforts,
            )),
        )
        .description(
            "How much the model spends on an answer; the nearest level the model takes is sent"
                .to_string(),
        )
        .category(SessionConfigOptionCategory::ThoughtLevel),
        SessionConfigOption::new(
            THINKING,
            "Thinking",
            SessionConfigKind::Select(SessionConfigSelect::new(
                reasoning.thinking.as_str(),
                thinking,
            )),
        )
        .description("Whether the model thinks before it answers".to_string())
        .category(SessionConfigOptionCategory::ThoughtLevel),
    ]
}

/// Sets option `id` to `value` in the session's layer; an unknown option
/// or value is an error that names what is known.
pub fn apply(id: &str, value: &SessionConfigOptionValue, layer: &mut Layer) -> Result<(), String> {
    let SessionConfigOptionValue::ValueId { value } = value else {
        return Err(format!("option `{id}` takes a value id, not a boolean"));
    };
    let value: &str = &value.0;
    match id {
        EFFORT => {
            layer.effort = match value {
                DEFAULT => None,
                name => Some(Effort::parse(name)?),
            }
        }
        THINKING => layer.thinking = Some(Thinking::parse(value)?),
        other => {
            return Err(format!(
                "unknown config option `{other}`: the options are {EFFORT}, {THINKING}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_show_the_current_values_and_take_known_ones_only() {
        let reasoning = Reasoning {
            thinking: Thinking::Off,
            effort: Some(Effort::High),
        };
        let shown = serde_json::to_value(options(reasoning)).unwrap();
        assert_eq!(shown[0]["currentValue"], "high");
        assert_eq!(shown[0]["category"], "thought_level");
        assert_eq!(shown[1]["currentValue"], "off");
        // (option, value, the layer's effort and thinking after, or an error)
        let cases = [
            (EFFORT, "max", Ok((Some(Effort::Max), None))),
            (EFFORT, "default", Ok((None, None))),
            (THINKING, "off", Ok((None, Some(Thinking::Off)))),
            (EFFORT, "huge", Err(())),
            (THINKING, "on", Err(())),
            ("model", "x", Err(())),
        ];
        for (id, value, want) in cases {
            let mut layer = Layer::default();
            let said = apply(id, &SessionConfigOptionValue::value_id(value), &mut layer);
            match want {
                Ok(after) => {
                    assert_eq!(said, Ok(()), "{id}={value}");
                    assert_eq!((layer.effort, layer.thinking), after, "{id}={value}");
                }
                Err(()) => assert!(said.is_err(), "{id}={value}"),
            }
        }
        let boolean = SessionConfigOptionValue::Boolean { value: true };
        assert!(apply(EFFORT, &boolean, &mut Layer::default()).is_err());
    }
}
