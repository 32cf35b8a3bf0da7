//! One load tool for two servers already running: ours and the original
//! (upstream Node Paperclip), measured in turn in one sitting by the same
//! closed-loop keep-alive clients as the CRUD suite (`src/load.rs`).
//!
//! Usage: `sidebench <base URL> [clients] [secs] [list size]` (defaults 16,
//! 10 and 1,000). On the server's API (local trusted, no credential): a
//! company, creates into it for `secs` at `clients`; a second company filled
//! with `list size` tasks; then, each after 2 s unrecorded, the list of all
//! of them at `clients` and at 1 client, the list revalidated with its ETag
//! (when it has one), and one task's GET. Prints one line per figure.

#[path = "../load.rs"]
#[allow(dead_code)]
mod load;

use std::time::Duration;

use anyhow::{bail, Context};
use load::{Run, Stop};
use reqwest::header::{ETAG, IF_NONE_MATCH};
use reqwest::StatusCode;
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let base = args
        .next()
        .context("usage: sidebench <base URL> [clients] [secs] [list size]")?;
    let base = base.trim_end_matches('/').to_string();
    let clients: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(16);
    let secs: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(10);
    let size: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let (duration, warmup) = (Duration::from_secs(secs), Duration::from_secs(2));
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .tcp_nodelay(true)
        .build()?;

    let creates_into = company(&client, &base, "Side Create Co").await?;
    let url = format!("{base}/api/companies/{creates_into}/issues");
    let c = client.clone();
    let create = load::run(clients, Stop::For(duration), move |i| {
        let req = c
            .post(&url)
            .json(&json!({ "title": format!("Side issue {i}") }));
        async move { drain(req.send().await?, StatusCode::CREATED).await }
    })
    .await;
    print("create", &create);

    let listed = company(&client, &base, "Side List Co").await?;
    let url = format!("{base}/api/companies/{listed}/issues");
    let c = client.clone();
    let fill = load::run(clients, Stop::Count(size), move |i| {
        let req = c
            .post(&url)
            .json(&json!({ "title": format!("Listed issue {i}") }));
        async move { drain(req.send().await?, StatusCode::CREATED).await }
    })
    .await;
    if fill.errors > 0 {
        bail!("filling the list failed: {:?}", fill.first_error);
    }
    let list_url = format!("{base}/api/companies/{listed}/issues?limit={size}");
    let resp = client.get(&list_url).send().await?;
    let etag = resp
        .headers()
        .get(ETAG)
        .map(|t| t.to_str().unwrap_or("").to_string());
    let body = resp.bytes().await?;
    let page: Value = serde_json::from_slice(&body)?;
    let page = page.as_array().context("the list is not an array")?;
    if page.len() as u64 != size {
        bail!("the list has {} tasks, not {size}", page.len());
    }
    println!("list bytes {}; etag {etag:?}", body.len());
    let issue_url = format!(
        "{base}/api/issues/{}",
        page[page.len() / 2]["id"]
            .as_str()
            .context("a task without id")?
    );

    let list = timed(&client, &list_url, None, clients, warmup, duration).await;
    print(&format!("list x{clients}"), &list);
    let list_1 = timed(&client, &list_url, None, 1, warmup, duration).await;
    print("list x1", &list_1);
    if let Some(tag) = etag {
        let revalidated = timed(&client, &list_url, Some(&tag), clients, warmup, duration).await;
        print(&format!("list 304 x{clients}"), &revalidated);
    }
    let get = timed(&client, &issue_url, None, clients, warmup, duration).await;
    print(&format!("get x{clients}"), &get);
    Ok(())
}

async fn company(client: &reqwest::Client, base: &str, name: &str) -> anyhow::Result<String> {
    let resp = client
        .post(format!("{base}/api/companies"))
        .json(&json!({ "name": name }))
        .send()
        .await?;
    let status = resp.status();
    let body: Value = resp.json().await?;
    if !status.is_success() {
        bail!("POST /api/companies -> {status}: {body}");
    }
    Ok(body["id"]
        .as_str()
        .context("a company without id")?
        .to_string())
}

/// GETs for `warmup` unrecorded, then for `duration`; with a tag, each must
/// be a 304.
async fn timed(
    client: &reqwest::Client,
    url: &str,
    tag: Option<&str>,
    clients: usize,
    warmup: Duration,
    duration: Duration,
) -> Run {
    let op = |client: reqwest::Client, url: String, tag: Option<String>| {
        move |_| {
            let mut req = client.get(&url);
            if let Some(tag) = &tag {
                req = req.header(IF_NONE_MATCH, tag);
            }
            let want = match tag {
                Some(_) => StatusCode::NOT_MODIFIED,
                None => StatusCode::OK,
            };
            async move { drain(req.send().await?, want).await }
        }
    };
    let tag = tag.map(str::to_string);
    load::run(
        clients,
        Stop::For(warmup),
        op(client.clone(), url.into(), tag.clone()),
    )
    .await;
    load::run(
        clients,
        Stop::For(duration),
        op(client.clone(), url.into(), tag),
    )
    .await
}

async fn drain(resp: reqwest::Response, want: StatusCode) -> anyhow::Result<()> {
    let status = resp.status();
    let body = resp.bytes().await?;
    if status != want {
        bail!(
            "{status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        );
    }
    Ok(())
}

fn print(what: &str, run: &Run) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what}: {:.1} req/s, p50 {:.2} ms, p95 {:.2} ms ({} requests, {} errors{})",
        run.per_sec(),
        ms(run.pct(50.0)),
        ms(run.pct(95.0)),
        run.latencies.len(),
        run.errors,
        run.first_error
            .as_deref()
            .map(|e| format!("; first: {e}"))
            .unwrap_or_default()
    );
}
