//! Upstream's finer cost rollups: per agent and model, per provider and
//! model, rolling windows, and one task's tree. Each is one grouped query
//! (two for a task tree: costs and runs fan out differently).

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::money::spend::Window;
use crate::{Result, Store};

/// The sums every upstream cost row carries.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sums {
    pub cost_cents: i64,
    pub input_tokens: i64,
    pub cached_input_tokens: i64,
    pub output_tokens: i64,
}

const SUMS: &str = concat!(
    "CAST(COALESCE(SUM(",
    capped!("e.cost_cents"),
    "), 0) AS BIGINT) AS cost, CAST(COALESCE(SUM(",
    capped!("e.input_tokens"),
    "), 0) AS BIGINT) AS input, CAST(COALESCE(SUM(",
    capped!("e.cached_input_tokens"),
    "), 0) AS BIGINT) AS cached, CAST(COALESCE(SUM(",
    capped!("e.output_tokens"),
    "), 0) AS BIGINT) AS output"
);

impl From<&crate::money::spend::Breakdown> for Sums {
    fn from(row: &crate::money::spend::Breakdown) -> Sums {
        Sums {
            cost_cents: row.cost_cents,
            input_tokens: row.input_tokens,
            cached_input_tokens: row.cached_input_tokens,
            output_tokens: row.output_tokens,
        }
    }
}

fn sums(row: &DbRow) -> Result<Sums> {
    Ok(Sums {
        cost_cents: row.int("cost")?,
        input_tokens: row.int("input")?,
        cached_input_tokens: row.int("cached")?,
        output_tokens: row.int("output")?,
    })
}

pub use paperclip_core::billing::BillingType;

/// Runs and tokens split by who pays (upstream's keys on by-agent and
/// by-provider rows): runs on an API key, runs and tokens on a subscription.
/// A run counts once however many events it reported; events of no run and
/// of an unknown billing type count in neither.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Split {
    pub api_run_count: i64,
    pub subscription_run_count: i64,
    pub subscription_cached_input_tokens: i64,
    pub subscription_input_tokens: i64,
    pub subscription_output_tokens: i64,
}

/// [`Split`]'s columns, for a query over `cost_events e`.
const SPLIT: &str = concat!(
    "COUNT(DISTINCT CASE WHEN e.billing_type = 'metered_api' THEN e.heartbeat_run_id END) AS api_runs, ",
    "COUNT(DISTINCT CASE WHEN e.billing_type IN ('subscription_included', 'subscription_overage') \
     THEN e.heartbeat_run_id END) AS sub_runs, ",
    "CAST(COALESCE(SUM(CASE WHEN e.billing_type IN ('subscription_included', 'subscription_overage') THEN ",
    capped!("e.cached_input_tokens"),
    " ELSE 0 END), 0) AS BIGINT) AS sub_cached, ",
    "CAST(COALESCE(SUM(CASE WHEN e.billing_type IN ('subscription_included', 'subscription_overage') THEN ",
    capped!("e.input_tokens"),
    " ELSE 0 END), 0) AS BIGINT) AS sub_input, ",
    "CAST(COALESCE(SUM(CASE WHEN e.billing_type IN ('subscription_included', 'subscription_overage') THEN ",
    capped!("e.output_tokens"),
    " ELSE 0 END), 0) AS BIGINT) AS sub_output"
);

fn split(row: &DbRow) -> Result<Split> {
    Ok(Split {
        api_run_count: row.int("api_runs")?,
        subscription_run_count: row.int("sub_runs")?,
        subscription_cached_input_tokens: row.int("sub_cached")?,
        subscription_input_tokens: row.int("sub_input")?,
        subscription_output_tokens: row.int("sub_output")?,
    })
}

/// The window's split per agent (`None`: events of no agent), in one
/// grouped query: the by-agent rows themselves come from the kept monthly
/// totals, which cannot count distinct runs. Only events of a known billing
/// type are read; an agent without any has no entry (all zero).
pub async fn split_by_agent(
    store: &Store,
    company_id: &str,
    window: &Window,
) -> Result<std::collections::HashMap<Option<String>, Split>> {
    let sql = format!(
        "SELECT e.agent_id, {SPLIT} FROM cost_events e \
         WHERE e.company_id = $1 AND e.occurred_at >= $2 AND e.occurred_at < $3 \
         AND e.billing_type <> 'unknown' GROUP BY e.agent_id"
    );
    let rows = crate::engine::db::query(&sql)
        .bind(company_id)
        .bind(&window.start)
        .bind(&window.end)
        .fetch_all(store.pool())
        .await?;
    rows.iter()
        .map(|r| Ok((r.opt_text("agent_id")?, split(r)?)))
        .collect()
}

/// One row of `costs/by-agent-model`. `biller` is the provider: a cost
/// event's provider here is who bills it (the adapters report it so, and
/// upstream defaults the biller to the provider too).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentModelCost {
    pub agent_id: Option<String>,
    pub agent_name: Option<String>,
    pub provider: Option<String>,
    pub biller: Option<String>,
    pub billing_type: BillingType,
    pub model: Option<String>,
    #[serde(flatten)]
    pub sums: Sums,
}

/// The window's cost events grouped by `group` (`select` and the sums), in `order`.
async fn grouped(
    store: &Store,
    company_id: &str,
    window: &Window,
    select: &str,
    group: &str,
    join: &str,
    order: &str,
) -> Result<Vec<DbRow>> {
    let sql = format!(
        "SELECT {select}, {SUMS} FROM cost_events e {join} \
         WHERE e.company_id = $1 AND e.occurred_at >= $2 AND e.occurred_at < $3 \
         GROUP BY {group} ORDER BY {order}"
    );
    Ok(crate::engine::db::query(&sql)
        .bind(company_id)
        .bind(&window.start)
        .bind(&window.end)
        .fetch_all(store.pool())
        .await?)
}

/// Spend per agent, provider and model, ordered by provider and model as upstream does.
pub async fn by_agent_model(
    store: &Store,
    company_id: &str,
    window: &Window,
) -> Result<Vec<AgentModelCost>> {
    let rows = grouped(
        store,
        company_id,
        window,
        "e.agent_id, a.name, e.provider, e.billing_type, e.model",
        "e.agent_id, a.name, e.provider, e.billing_type, e.model",
        "LEFT JOIN agents a ON a.id = e.agent_id",
        "e.provider, e.billing_type, e.model, e.agent_id",
    )
    .await?;
    rows.iter()
        .map(|r| {
            Ok(AgentModelCost {
                agent_id: r.opt_text("agent_id")?,
                agent_name: r.opt_text("name")?,
                provider: r.opt_text("provider")?,
                biller: r.opt_text("provider")?,
                billing_type: r.stored("billing_type")?,
                model: r.opt_text("model")?,
                sums: sums(r)?,
            })
        })
        .collect()
}

/// One row of `costs/by-provider`: a provider and model.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderCost {
    pub provider: Option<String>,
    /// The provider: who bills the spend (see [`AgentModelCost`]).
    pub biller: Option<String>,
    pub billing_type: BillingType,
    pub model: Option<String>,
    #[serde(flatten)]
    pub sums: Sums,
    #[serde(flatten)]
    pub split: Split,
}

/// Spend per provider, billing type and model, biggest first.
pub async fn by_provider(
    store: &Store,
    company_id: &str,
    window: &Window,
) -> Result<Vec<ProviderCost>> {
    let columns = format!("e.provider, e.billing_type, e.model, {SPLIT}");
    let rows = grouped(
        store,
        company_id,
        window,
        &columns,
        "e.provider, e.billing_type, e.model",
        "",
        "cost DESC, e.provider, e.billing_type, e.model",
    )
    .await?;
    rows.iter()
        .map(|r| {
            Ok(ProviderCost {
                provider: r.opt_text("provider")?,
                biller: r.opt_text("provider")?,
                billing_type: r.stored("billing_type")?,
                model: r.opt_text("model")?,
                sums: sums(r)?,
                split: split(r)?,
            })
        })
        .collect()
}

/// One row of `costs/by-biller`: who bills the spend, across its providers
/// and models.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BillerCost {
    /// The provider (see [`AgentModelCost`]).
    pub biller: Option<String>,
    #[serde(flatten)]
    pub sums: Sums,
    #[serde(flatten)]
    pub split: Split,
    pub provider_count: i64,
    pub model_count: i64,
}

/// Spend per biller, biggest first. A cost event's biller is its provider
/// (no adapter here reports another, and upstream defaults to it), so each
/// biller has one provider; the count is kept from the events, not assumed.
pub async fn by_biller(
    store: &Store,
    company_id: &str,
    window: &Window,
) -> Result<Vec<BillerCost>> {
    let columns = format!(
        "e.provider, {SPLIT}, CAST(COUNT(DISTINCT e.provider) AS BIGINT) AS providers, \
         CAST(COUNT(DISTINCT e.model) AS BIGINT) AS models"
    );
    let rows = grouped(
        store,
        company_id,
        window,
        &columns,
        "e.provider",
        "",
        "cost DESC, e.provider",
    )
    .await?;
    rows.iter()
        .map(|r| {
            Ok(BillerCost {
                biller: r.opt_text("provider")?,
                sums: sums(r)?,
                split: split(r)?,
                provider_count: r.int("providers")?,
                model_count: r.int("models")?,
            })
        })
        .collect()
}

/// One row of `costs/window-spend`: a provider's spend in a rolling window.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowSpend {
    pub provider: Option<String>,
    /// The provider: who bills the spend (see [`AgentModelCost`]).
    pub biller: Option<String>,
    /// `5h`, `24h` or `7d`.
    pub window: &'static str,
    pub window_hours: i64,
    #[serde(flatten)]
    pub sums: Sums,
}

/// Spend per provider in the last 5 hours, 24 hours and 7 days (upstream's
/// windows), each biggest first.
pub async fn window_spend(
    store: &Store,
    company_id: &str,
    now: DateTime<Utc>,
) -> Result<Vec<WindowSpend>> {
    let sql = format!(
        "SELECT e.provider, {SUMS} FROM cost_events e \
         WHERE e.company_id = $1 AND e.occurred_at >= $2 \
         GROUP BY e.provider ORDER BY cost DESC, e.provider"
    );
    let mut out = Vec::new();
    for (window, hours) in [("5h", 5), ("24h", 24), ("7d", 168)] {
        let since = paperclip_core::budget::stamp(now - Duration::hours(hours));
        let rows = crate::engine::db::query(&sql)
            .bind(company_id)
            .bind(&since)
            .fetch_all(store.pool())
            .await?;
        for r in &rows {
            out.push(WindowSpend {
                provider: r.opt_text("provider")?,
                biller: r.opt_text("provider")?,
                window,
                window_hours: hours,
                sums: sums(r)?,
            });
        }
    }
    Ok(out)
}

/// `issues/{id}/cost-summary`: what a task and everything below it cost.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeCost {
    pub issue_id: String,
    /// Tasks counted: the task (unless excluded) and its descendants.
    pub issue_count: i64,
    pub include_descendants: bool,
    #[serde(flatten)]
    pub sums: Sums,
    /// Runs started for any of those tasks.
    pub run_count: i64,
    /// Their wall time; a run still going counts up to now.
    pub runtime_ms: i64,
}

/// Deeper trees are cut here: parent links are checked for cycles on write,
/// so this only bounds a pathological chain.
const MAX_DEPTH: i64 = 64;

pub async fn tree_cost(
    store: &Store,
    company_id: &str,
    issue_id: &str,
    exclude_root: bool,
    now: DateTime<Utc>,
) -> Result<TreeCost> {
    let seed = if exclude_root {
        "SELECT id, 1 FROM issues WHERE company_id = $1 AND parent_id = $2"
    } else {
        "SELECT id, 0 FROM issues WHERE company_id = $1 AND id = $2"
    };
    let tree = format!(
        "WITH RECURSIVE tree(id, depth) AS ({seed} UNION ALL \
         SELECT c.id, t.depth + 1 FROM issues c JOIN tree t ON c.parent_id = t.id \
         WHERE c.company_id = $1 AND t.depth < {MAX_DEPTH})"
    );
    let costs = format!(
        "{tree} SELECT COUNT(DISTINCT t.id) AS issues, {SUMS} FROM tree t \
         LEFT JOIN cost_events e ON e.issue_id = t.id AND e.company_id = $1"
    );
    let row = crate::engine::db::query(&costs)
        .bind(company_id)
        .bind(issue_id)
        .fetch_one(store.pool())
        .await?;
    let runs = format!(
        "{tree} SELECT r.started_at, r.finished_at FROM heartbeat_runs r \
         JOIN tree t ON r.issue_id = t.id WHERE r.company_id = $1 AND r.started_at IS NOT NULL"
    );
    let spans: Vec<(String, Option<String>)> = crate::engine::db::query_as(&runs)
        .bind(company_id)
        .bind(issue_id)
        .fetch_all(store.pool())
        .await?;
    let runtime_ms = spans
        .iter()
        .filter_map(|(start, end)| {
            let start = DateTime::parse_from_rfc3339(start).ok()?;
            let end = match end {
                Some(end) => DateTime::parse_from_rfc3339(end).ok()?.with_timezone(&Utc),
                None => now,
            };
            Some((end - start.with_timezone(&Utc)).num_milliseconds().max(0))
        })
        .sum();
    Ok(TreeCost {
        issue_id: issue_id.to_string(),
        issue_count: row.int("issues")?,
        include_descendants: true,
        sums: sums(&row)?,
        run_count: spans.len() as i64,
        runtime_ms,
    })
}
