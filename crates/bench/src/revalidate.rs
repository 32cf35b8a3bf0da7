//! A client that keeps the task list and revalidates it: each GET sends the
//! page's ETag in `If-None-Match` and must be answered 304 with no body.

use std::time::Duration;

use anyhow::{bail, Context};
use reqwest::header::{ETAG, IF_NONE_MATCH};
use reqwest::StatusCode;

use crate::load::{self, Run, Stop};

/// The ETag `url` answers now.
pub async fn etag(client: &reqwest::Client, url: &str) -> anyhow::Result<String> {
    let resp = client.get(url).send().await?;
    let tag = resp
        .headers()
        .get(ETAG)
        .context("the list carries no ETag")?
        .to_str()?
        .to_string();
    resp.bytes().await?;
    Ok(tag)
}

/// Revalidating GETs of `url` with `tag` for `warmup` unrecorded, then for
/// `duration`.
pub async fn timed(
    client: &reqwest::Client,
    url: &str,
    tag: &str,
    clients: usize,
    warmup: Duration,
    duration: Duration,
) -> Run {
    let op = |client: reqwest::Client, url: String, tag: String| {
        move |_| {
            let req = client.get(&url).header(IF_NONE_MATCH, &tag);
            async move {
                let resp = req.send().await?;
                let status = resp.status();
                let body = resp.bytes().await?;
                if status != StatusCode::NOT_MODIFIED || !body.is_empty() {
                    bail!("{status} with {} bytes, not a 304", body.len());
                }
                Ok(())
            }
        }
    };
    let (url, tag) = (url.to_string(), tag.to_string());
    if !warmup.is_zero() {
        load::run(
            clients,
            Stop::For(warmup),
            op(client.clone(), url.clone(), tag.clone()),
        )
        .await;
    }
    load::run(clients, Stop::For(duration), op(client.clone(), url, tag)).await
}
