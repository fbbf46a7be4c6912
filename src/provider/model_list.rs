//! The models a picker offers (`/model`, `bareagent.setModel`, the
//! editors' pickers): what the API lists for the user's key
//! (`GET /v1/models`, asked through the provider's own HTTP client and
//! credentials, once per session), else the built-in suggestions with a
//! note saying why.
//!
//! Both APIs answer `{"data": [{"id": …}, …]}`; Anthropic's pages it
//! (`has_more`, `last_id` as the next `after_id`), OpenAI's and the
//! compatible servers' send it whole. A name the list lacks still works:
//! the list is an offer, never a check.

use serde_json::Value;

use super::{Provider, ProviderKind, suggested_models};
use crate::sync::Locked;

/// At most this many pages are asked (1000 models each on Anthropic's).
pub(crate) const MAX_PAGES: usize = 10;

/// One page of a model listing.
#[derive(Debug, PartialEq)]
pub(crate) struct Page {
    pub models: Vec<String>,
    /// The cursor of the next page, when there is one.
    pub after: Option<String>,
}

/// Reads a page: `data[].id`, and `has_more`/`last_id` where the API pages.
pub(crate) fn parse_page(body: &Value) -> Result<Page, String> {
    let data = body.get("data").and_then(Value::as_array).ok_or_else(|| {
        format!(
            "no `data` list in the model listing: {}",
            super::wire::clip(&body.to_string())
        )
    })?;
    let models = data
        .iter()
        .filter_map(|model| model.get("id").and_then(Value::as_str))
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .collect();
    let more = body.get("has_more").and_then(Value::as_bool) == Some(true);
    let after = body
        .get("last_id")
        .and_then(Value::as_str)
        .filter(|_| more)
        .map(str::to_string);
    Ok(Page { models, after })
}

/// The first page's URL with `after_id` set to `after`.
pub(crate) fn next_page(first: &str, after: &str) -> String {
    match reqwest::Url::parse(first) {
        Ok(mut url) => {
            url.query_pairs_mut().append_pair("after_id", after);
            url.to_string()
        }
        // The first URL was asked already, so it parses; kept whole otherwise.
        Err(_) => first.to_string(),
    }
}

/// What a picker offers.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Listing {
    /// The provider the list is of.
    pub kind: ProviderKind,
    pub models: Vec<String>,
    /// Where the list came from: `"api"` or `"built-in"`.
    pub source: &'static str,
    /// Why the built-in list is offered instead of the API's.
    pub note: Option<String>,
}

/// A session's model list: asked of the API once, then kept. A failure is
/// not kept (the next picker asks again; an offline or refused request
/// fails fast, without retries).
#[derive(Default)]
pub struct ModelCatalog {
    /// The provider's name and what its API listed.
    listed: std::sync::Mutex<Option<(String, Vec<String>)>>,
}

impl ModelCatalog {
    /// The models `provider` lists (once per provider name), or the
    /// built-in suggestions for `kind` with a note. `provider`: the
    /// session's, or the error that kept it from being built.
    pub async fn list(
        &self,
        provider: Result<&dyn Provider, String>,
        kind: ProviderKind,
    ) -> Listing {
        let provider = match provider {
            Ok(provider) => provider,
            Err(error) => return built_in(kind, error),
        };
        if let Some((name, models)) = &*self.listed.locked()
            && name == provider.name()
        {
            return from_api(kind, models.clone());
        }
        match provider.list_models().await {
            Ok(models) if !models.is_empty() => {
                *self.listed.locked() = Some((provider.name().to_string(), models.clone()));
                from_api(kind, models)
            }
            Ok(_) => built_in(kind, "the API listed no models".into()),
            Err(error) => built_in(kind, error.to_string()),
        }
    }
}

fn from_api(kind: ProviderKind, models: Vec<String>) -> Listing {
    Listing {
        kind,
        models,
        source: "api",
        note: None,
    }
}

fn built_in(kind: ProviderKind, why: String) -> Listing {
    tracing::info!(%why, "the model list falls back to the built-in one");
    Listing {
        kind,
        models: suggested_models(kind)
            .iter()
            .map(|m| m.to_string())
            .collect(),
        source: "built-in",
        note: Some(format!(
            "could not list the models ({why}); these are the built-in suggestions, and any name the provider serves works"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pages_are_read_in_either_shape() {
        let openai =
            json!({"object": "list", "data": [{"id": "gpt-5", "object": "model"}, {"id": "o3"}]});
        assert_eq!(
            parse_page(&openai),
            Ok(Page {
                models: vec!["gpt-5".into(), "o3".into()],
                after: None
            })
        );
        let anthropic = |more: bool| {
            json!({"data": [{"type": "model", "id": "claude-opus-4-5"}], "has_more": more,
                   "first_id": "claude-opus-4-5", "last_id": "claude-opus-4-5"})
        };
        assert_eq!(
            parse_page(&anthropic(true)).unwrap().after.as_deref(),
            Some("claude-opus-4-5")
        );
        assert_eq!(parse_page(&anthropic(false)).unwrap().after, None);
        assert!(parse_page(&json!({"error": {"message": "no"}})).is_err());
        assert_eq!(
            next_page("http://127.0.0.1:1/v1/models?limit=1000", "a b"),
            "http://127.0.0.1:1/v1/models?limit=1000&after_id=a+b"
        );
    }
}
