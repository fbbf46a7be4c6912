//! `--replay FILE`: answers from a recording, in order, offline. The tools
//! still run for real against the workspace, so a replay shows the whole loop.

use std::path::Path;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::Deserialize;

use super::{EventStream, Provider, ProviderError, Request, Response, StreamEvent};
use crate::sync::Locked;

pub struct Replay {
    responses: Mutex<std::vec::IntoIter<Response>>,
    total: usize,
}

#[derive(Deserialize)]
struct Exchange {
    response: Response,
}

impl Replay {
    pub fn from_file(path: &Path) -> Result<Self, ProviderError> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            ProviderError::Replay(format!("cannot read {}: {error}", path.display()))
        })?;
        let mut responses = Vec::new();
        for (number, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let exchange: Exchange = serde_json::from_str(line).map_err(|error| {
                ProviderError::Replay(format!(
                    "{}:{}: not a recorded exchange: {error}",
                    path.display(),
                    number + 1
                ))
            })?;
            responses.push(exchange.response);
        }
        Ok(Replay {
            total: responses.len(),
            responses: Mutex::new(responses.into_iter()),
        })
    }

    fn next(&self) -> Result<Response, ProviderError> {
        let mut responses = self.responses.locked();
        responses.next().ok_or_else(|| {
            ProviderError::Replay(format!(
                "the recording has no more responses (it holds {}); the conversation went further than the recording",
                self.total
            ))
        })
    }
}

#[async_trait]
impl Provider for Replay {
    fn name(&self) -> &str {
        "replay"
    }

    async fn create(&self, _request: Request<'_>) -> Result<Response, ProviderError> {
        self.next()
    }

    /// Streams the recorded text word by word, so a replay looks like a live answer.
    async fn stream(&self, _request: Request<'_>) -> Result<EventStream, ProviderError> {
        let response = self.next()?;
        let text = Response::clone(&response).into_message().text();
        let mut events: Vec<Result<StreamEvent, ProviderError>> = text
            .split_inclusive(' ')
            .map(|word| Ok(StreamEvent::TextDelta(word.to_string())))
            .collect();
        events.push(Ok(StreamEvent::Done(response)));
        Ok(Box::pin(futures_util::stream::iter(events)))
    }
}
