//! Spend on local models apart from paid spend (issue 39): a cost event is
//! local when its provider is one of the company's model servers or a
//! well-known local one (`ollama`, ...). One grouped query per window, by
//! provider; the split is made here, not in SQL, as the list is short.

use serde::Serialize;
use utoipa::ToSchema;

use crate::engine::row::RowExt;
use crate::money::cost_views::Sums;
use crate::money::spend::Window;
use crate::{Result, Store};

/// One provider's spend in the window.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSpend {
    pub provider: Option<String>,
    pub local: bool,
    pub event_count: i64,
    /// Events that carried no price (unpriced is not free).
    pub unpriced_event_count: i64,
    #[serde(flatten)]
    pub sums: Sums,
}

/// The window's spend, local and paid apart.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalSplit {
    pub local: Sums,
    pub paid: Sums,
    /// Every provider with its side, biggest spend first.
    pub providers: Vec<ProviderSpend>,
}

fn add(to: &mut Sums, s: &Sums) {
    to.cost_cents += s.cost_cents;
    to.input_tokens += s.input_tokens;
    to.cached_input_tokens += s.cached_input_tokens;
    to.output_tokens += s.output_tokens;
}

fn zero() -> Sums {
    Sums {
        cost_cents: 0,
        input_tokens: 0,
        cached_input_tokens: 0,
        output_tokens: 0,
    }
}

pub async fn split(store: &Store, company_id: &str, window: &Window) -> Result<LocalSplit> {
    let local = crate::org::model_servers::local_providers(store, company_id).await?;
    let sql = concat!(
        "SELECT e.provider, CAST(COUNT(*) AS BIGINT) AS n, ",
        "CAST(SUM(CASE WHEN e.cost_cents IS NULL THEN 1 ELSE 0 END) AS BIGINT) AS unpriced, ",
        "CAST(COALESCE(SUM(",
        capped!("e.cost_cents"),
        "), 0) AS BIGINT) AS cost, CAST(COALESCE(SUM(",
        capped!("e.input_tokens"),
        "), 0) AS BIGINT) AS input, CAST(COALESCE(SUM(",
        capped!("e.cached_input_tokens"),
        "), 0) AS BIGINT) AS cached, CAST(COALESCE(SUM(",
        capped!("e.output_tokens"),
        "), 0) AS BIGINT) AS output FROM cost_events e ",
        "WHERE e.company_id = $1 AND e.occurred_at >= $2 AND e.occurred_at < $3 ",
        "GROUP BY e.provider ORDER BY cost DESC, e.provider"
    );
    let rows = crate::engine::db::query(sql)
        .bind(company_id)
        .bind(&window.start)
        .bind(&window.end)
        .fetch_all(store.pool())
        .await?;
    let mut out = LocalSplit {
        local: zero(),
        paid: zero(),
        providers: Vec::with_capacity(rows.len()),
    };
    for r in &rows {
        let provider = r.opt_text("provider")?;
        let is_local = provider
            .as_deref()
            .is_some_and(|p| local.iter().any(|l| l.eq_ignore_ascii_case(p)));
        let sums = Sums {
            cost_cents: r.int("cost")?,
            input_tokens: r.int("input")?,
            cached_input_tokens: r.int("cached")?,
            output_tokens: r.int("output")?,
        };
        add(
            if is_local {
                &mut out.local
            } else {
                &mut out.paid
            },
            &sums,
        );
        out.providers.push(ProviderSpend {
            provider,
            local: is_local,
            event_count: r.int("n")?,
            unpriced_event_count: r.int("unpriced")?,
            sums,
        });
    }
    Ok(out)
}
