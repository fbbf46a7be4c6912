//! The session's reasoning as ACP session config options: `effort` and
//! `thinking`, two selects of the `thought_level` category, offered in
//! `session/new` and `session/load` and changed by
//! `session/set_config_option`. A change is the session's own
//! [`SessionChange`] (as `/effort` is in `chat`), from the next prompt on.

use agent_client_protocol::v1::schema::{
    SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelect, SessionConfigSelectOption,
};

use crate::provider::{Effort, Thinking};
use crate::session::{Current, SessionChange};

pub const EFFORT: &str = "effort";
pub const THINKING: &str = "thinking";
/// The effort value that leaves the choice to the settings (and the model).
const DEFAULT: &str = "default";

/// The options as the session now asks.
pub fn options(current: &Current) -> Vec<SessionConfigOption> {
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
                current.effort.map_or(DEFAULT, Effort::as_str),
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
                current.thinking.as_str(),
                thinking,
            )),
        )
        .description("Whether the model thinks before it answers".to_string())
        .category(SessionConfigOptionCategory::ThoughtLevel),
    ]
}

/// The change option `id` set to `value` asks; an unknown option or
/// value is an error that names what is known.
pub fn change(id: &str, value: &SessionConfigOptionValue) -> Result<SessionChange, String> {
    let SessionConfigOptionValue::ValueId { value } = value else {
        return Err(format!("option `{id}` takes a value id, not a boolean"));
    };
    let value: &str = &value.0;
    let mut change = SessionChange::default();
    match id {
        EFFORT => {
            change.effort = Some(match value {
                DEFAULT => None,
                name => Some(Effort::parse(name)?),
            })
        }
        THINKING => change.thinking = Some(Thinking::parse(value)?),
        other => {
            return Err(format!(
                "unknown config option `{other}`: the options are {EFFORT}, {THINKING}"
            ));
        }
    }
    Ok(change)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_show_the_current_values_and_take_known_ones_only() {
        let current = Current {
            model: Err("none".into()),
            effort: Some(Effort::High),
            thinking: Thinking::Off,
            wire: None,
            mode: crate::permission::PermissionMode::Default,
            sources: Default::default(),
        };
        let shown = serde_json::to_value(options(&current)).unwrap();
        assert_eq!(shown[0]["currentValue"], "high");
        assert_eq!(shown[0]["category"], "thought_level");
        assert_eq!(shown[1]["currentValue"], "off");
        // (option, value, the change's effort and thinking, or an error)
        let cases = [
            (EFFORT, "max", Ok((Some(Some(Effort::Max)), None))),
            (EFFORT, "default", Ok((Some(None), None))),
            (THINKING, "off", Ok((None, Some(Thinking::Off)))),
            (EFFORT, "huge", Err(())),
            (THINKING, "on", Err(())),
            ("model", "x", Err(())),
        ];
        for (id, value, want) in cases {
            let said = change(id, &SessionConfigOptionValue::value_id(value));
            match want {
                Ok(after) => {
                    let said = said.unwrap_or_else(|e| panic!("{id}={value}: {e}"));
                    assert_eq!((said.effort, said.thinking), after, "{id}={value}");
                }
                Err(()) => assert!(said.is_err(), "{id}={value}"),
            }
        }
        let boolean = SessionConfigOptionValue::Boolean { value: true };
        assert!(change(EFFORT, &boolean).is_err());
    }
}
