//! The one provider over HTTP: [`HttpProvider`] speaks any [`WireFormat`]
//! through the shared [`HttpClient`] (one `reqwest` client, retries before
//! the first byte, an idle timer on every read, credentials as headers, and
//! secrets scrubbed from every error).
//!
//! Architecture Invariant: nothing here knows a wire format's shapes, and no
//! wire format knows HTTP. A streamed call that fails before its first event
//! returns an error the loop may answer by falling back to `create`
//! ([`ProviderError::allows_fallback`]); once an event was yielded, errors
//! end the stream.

use std::sync::Arc;

use async_trait::async_trait;

use super::credentials::Credentials;
use super::http::{HttpClient, HttpSettings};
use super::wire::WireFormat;
use super::{EventStream, Provider, ProviderError, Request, Response};

/// A model API over HTTP, its format given by `W`: see
/// [`super::Anthropic`] and [`super::OpenAi`].
pub struct HttpProvider<W> {
    http: Arc<HttpClient>,
    url: String,
    /// `GET` here lists the models ([`WireFormat::MODELS_PATH`]).
    models_url: String,
    model: String,
    wire: W,
}

impl<W: WireFormat> HttpProvider<W> {
    /// A provider for `model` at `base_url` (the format's path is appended),
    /// sending the format's auth headers from `credentials` and the custom
    /// headers after them.
    pub fn with_wire(
        wire: W,
        base_url: &str,
        credentials: Credentials,
        model: &str,
        settings: HttpSettings,
    ) -> Result<Self, ProviderError> {
        let own = wire.auth_headers(&credentials)?;
        let headers = credentials.headers(&own)?;
        let tls = !base_url
            .get(..7)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
        let http = HttpClient::new(
            W::NAME,
            model,
            settings,
            headers,
            credentials.secrets(),
            tls,
        );
        let base_url = base_url.trim_end_matches('/');
        Ok(HttpProvider {
            http: Arc::new(http),
            url: format!("{base_url}{}", W::PATH),
            models_url: format!("{base_url}{}", W::MODELS_PATH),
            model: model.to_string(),
            wire,
        })
    }

    /// [`HttpProvider::with_wire`] for a format without settings of its own.
    pub fn with_credentials(
        base_url: &str,
        credentials: Credentials,
        model: &str,
        settings: HttpSettings,
    ) -> Result<Self, ProviderError>
    where
        W: Default,
    {
        Self::with_wire(W::default(), base_url, credentials, model, settings)
    }
}

#[async_trait]
impl<W: WireFormat> Provider for HttpProvider<W> {
    fn name(&self) -> &str {
        W::NAME
    }

    async fn create(&self, request: Request<'_>) -> Result<Response, ProviderError> {
        let body = self.wire.body(&self.model, request, false)?;
        let headers = self.wire.call_headers(&self.model, &request);
        let value = self.http.post_for_json(&self.url, &body, &headers).await?;
        self.wire
            .parse_response(&value)
            .map_err(|message| self.http.decode(message))
    }

    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        let body = self.wire.body(&self.model, request, true)?;
        let headers = self.wire.call_headers(&self.model, &request);
        let response = self.http.post(&self.url, &body, &headers).await?;
        Ok(self
            .http
            .clone()
            .event_stream(response, self.wire.decoder()))
    }

    /// Page after page (Anthropic pages; OpenAI sends all at once), each
    /// asked once: a refusal or a lost connection is the caller's to
    /// answer with the built-in list.
    async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        let mut models = Vec::new();
        let mut url = self.models_url.clone();
        for _ in 0..super::model_list::MAX_PAGES {
            let value = self.http.get_json(&url).await?;
            let page = super::model_list::parse_page(&value)
                .map_err(|message| self.http.decode(message))?;
            models.extend(page.models);
            match page.after {
                Some(after) => url = super::model_list::next_page(&self.models_url, &after),
                None => break,
            }
        }
        Ok(models)
    }
}
