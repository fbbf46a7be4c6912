//! `--record FILE`: every model exchange as one JSON line, `{"request": …,
//! "response": …}`, in our provider-neutral shape. A recording made against
//! any provider replays with [`super::Replay`]. Requests hold no headers, so
//! no key can reach the file.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::json;

use super::{EventStream, Provider, ProviderError, Request, Response, StreamEvent};
use crate::sync::Locked;

pub struct Recorder {
    inner: Box<dyn Provider>,
    file: std::sync::Arc<Mutex<File>>,
}

impl Recorder {
    pub fn new(inner: Box<dyn Provider>, path: &Path) -> std::io::Result<Self> {
        let file = File::create(path)?;
        Ok(Recorder {
            inner,
            file: std::sync::Arc::new(Mutex::new(file)),
        })
    }
}

fn write_exchange(file: &Mutex<File>, request: &serde_json::Value, response: &Response) {
    let line = json!({"request": request, "response": response});
    let mut file = file.locked();
    if let Err(error) = writeln!(file, "{line}").and_then(|()| file.flush()) {
        tracing::warn!(%error, "cannot write to the recording");
    }
}

#[async_trait]
impl Provider for Recorder {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn create(&self, request: Request<'_>) -> Result<Response, ProviderError> {
        let response = self.inner.create(request).await?;
        write_exchange(&self.file, &json!(request), &response);
        Ok(response)
    }

    async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        self.inner.list_models().await
    }

    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        let inner = self.inner.stream(request).await?;
        let file = self.file.clone();
        // Serialised now: the stream outlives the borrowed request.
        let request = json!(request);
        Ok(Box::pin(inner.inspect(move |item| {
            if let Ok(StreamEvent::Done(response)) = item {
                write_exchange(&file, &request, response);
            }
        })))
    }
}
