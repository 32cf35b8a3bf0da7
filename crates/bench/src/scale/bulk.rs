//! The bulk of the company, written with set-based SQL while the server is
//! stopped: each table is one `INSERT ... SELECT` over a generated row
//! source, in one transaction, so a million tasks take seconds of SQL
//! instead of hours of API calls. Rows look like the ones the app writes:
//! UUIDv7 ids whose time is the row's `created_at`, `PREFIX-N` identifiers
//! numbered on from the company's counter (which is set to the last one),
//! statuses and timestamps consistent with the transition rules, activity
//! rows with the app's actions and details, and the FTS triggers (SQLite)
//! or GIN indexes (Postgres) maintained as the rows go in.

use std::time::Instant;

use anyhow::Context;
use sqlx::{Connection, Executor};

use super::seed::Seed;
use super::sql::{hash, pick, Dialect};

pub struct Plan {
    pub issues: u64,
    pub comments: u64,
    pub runs: u64,
    pub now_ms: i64,
}

/// Tasks are spread over half a year; runs and costs over the last 14 days.
const HISTORY_MS: i64 = 180 * 86_400_000;
const RUN_WINDOW_MS: i64 = 14 * 86_400_000;
const HOUR: i64 = 3_600_000;

const VERBS: [&str; 16] = [
    "Fix",
    "Add",
    "Refactor",
    "Investigate",
    "Document",
    "Migrate",
    "Optimize",
    "Review",
    "Test",
    "Remove",
    "Update",
    "Design",
    "Automate",
    "Audit",
    "Improve",
    "Deprecate",
];
const OBJECTS: [&str; 16] = [
    "flaky retry logic",
    "login form validation",
    "CSV export",
    "webhook signature check",
    "rate limiter",
    "search index",
    "onboarding email",
    "invoice PDF",
    "dark mode toggle",
    "cache invalidation",
    "audit log",
    "API pagination",
    "mobile layout",
    "error reporting",
    "feature flag",
    "schema migration",
];
/// `billing` is the common search word: one task in twelve.
const AREAS: [&str; 12] = [
    "billing",
    "checkout",
    "dashboard",
    "onboarding",
    "payments",
    "reporting",
    "notifications",
    "search",
    "settings",
    "analytics",
    "auth",
    "support",
];
const SYMPTOMS: [&str; 8] = [
    "fails intermittently",
    "is slow under load",
    "returns the wrong total",
    "times out",
    "shows stale data",
    "crashes on empty input",
    "needs a clearer message",
    "is missing for some users",
];
const REPORTERS: [&str; 4] = ["Customers", "Support", "QA", "An on-call engineer"];
const PRIORITIES: [&str; 10] = [
    "critical", "high", "high", "medium", "medium", "medium", "medium", "low", "low", "low",
];
const NOTES: [&str; 6] = [
    "Reproduced locally, looking at the",
    "Pushed a fix for the",
    "Waiting on review of the",
    "Added tests around the",
    "Rolled back the change to the",
    "Paired with QA on the",
];
const MODELS: [&str; 3] = ["claude-sonnet-4", "claude-opus-4", "claude-haiku-4"];
/// The rare search word, in one task in 250,000 (and in the first tasks).
pub const RARE_WORD: &str = "quixotically";
pub const COMMON_WORD: &str = "billing";
/// A word of a quarter of the descriptions (a reporter) and of no title.
pub const DESCRIPTION_WORD: &str = "customers";

/// Rows written per table and how long each statement took.
pub type Steps = Vec<(String, u64, f64)>;

pub async fn fill(url: &str, seed: &Seed, plan: &Plan) -> anyhow::Result<Steps> {
    let d = Dialect {
        postgres: !url.starts_with("sqlite:"),
    };
    let mut conn = sqlx::AnyConnection::connect(url)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    if !d.postgres {
        // Only this connection: a crash mid-build loses the build, nothing else.
        conn.execute(
            "PRAGMA synchronous = OFF; PRAGMA cache_size = -200000; PRAGMA temp_store = MEMORY",
        )
        .await?;
    }
    let base: i64 = sqlx::query_scalar::<_, i64>(&format!(
        "SELECT issue_counter FROM companies WHERE id = '{}'",
        seed.company_id
    ))
    .fetch_one(&mut conn)
    .await?;
    for (table, ids) in [
        ("scale_agents", &seed.agents),
        ("scale_projects", &seed.projects),
        ("scale_labels", &seed.labels),
        ("scale_goals", &seed.goals),
    ] {
        // Ids are uuid on Postgres (store migration 27).
        let id_type = if d.postgres { "UUID" } else { "TEXT" };
        conn.execute(
            format!("CREATE TEMP TABLE {table} (idx BIGINT PRIMARY KEY, id {id_type} NOT NULL)")
                .as_str(),
        )
        .await?;
        for (chunk_no, chunk) in ids.chunks(500).enumerate() {
            let values: Vec<String> = chunk
                .iter()
                .enumerate()
                .map(|(i, id)| format!("({}, '{id}')", chunk_no * 500 + i))
                .collect();
            conn.execute(
                format!("INSERT INTO {table} (idx, id) VALUES {}", values.join(", ")).as_str(),
            )
            .await?;
        }
    }
    let q = Queries {
        d,
        seed,
        plan,
        base,
    };
    let mut steps = Steps::new();
    for (name, sql) in q.statements() {
        let started = Instant::now();
        let mut tx = conn.begin().await?;
        let rows = tx
            .execute(sql.as_str())
            .await
            .with_context(|| format!("bulk step {name}"))?
            .rows_affected();
        tx.commit().await?;
        let secs = started.elapsed().as_secs_f64();
        eprintln!("  {name}: {rows} rows in {secs:.1} s");
        steps.push((name.to_string(), rows, secs));
    }
    if d.postgres {
        // Autovacuum would analyze the new rows within a minute of a real
        // load; the measure phase should not race it. SQLite has no such
        // daemon and the app never runs ANALYZE, so neither does this.
        let started = Instant::now();
        conn.execute("ANALYZE").await?;
        steps.push(("analyze".into(), 0, started.elapsed().as_secs_f64()));
    }
    conn.close().await?;
    Ok(steps)
}

const COUNT_TRIGGERS: &str = "ALTER TABLE issues {} TRIGGER issue_status_counts_insert_delete; \
     ALTER TABLE issues {} TRIGGER issue_day_counts_insert_delete; \
     ALTER TABLE cost_events {} TRIGGER cost_month_totals_insert_delete";

/// Triggers back on, and every kept counter the bulk skipped filled again
/// from the rows, by the statements that fill them when their migrations run.
fn recount() -> String {
    let fills = [
        include_str!("../../../store/migrations/0009_issue_counts.postgres.sql"),
        include_str!("../../../store/migrations/0013_day_counts.postgres.sql"),
    ]
    .iter()
    .flat_map(|sql| sql.split(";\n"))
    .map(|statement| {
        statement
            .lines()
            .skip_while(|line| line.starts_with("--") || line.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    })
    .filter(|statement| {
        [
            "INSERT INTO issue_status_counts",
            "INSERT INTO company_day_counts",
            "INSERT INTO cost_month_totals",
        ]
        .iter()
        .any(|table| statement.starts_with(table))
    })
    .collect::<Vec<_>>();
    // One status count, two day counts, five cost dimensions: a migration
    // reworded so a fill is missed must not go unnoticed.
    assert_eq!(
        fills.len(),
        8,
        "the counters' fill statements were not all found"
    );
    format!(
        "{}; DELETE FROM issue_status_counts; DELETE FROM company_day_counts WHERE subject IN ('task', 'done'); \
         DELETE FROM cost_month_totals; {}",
        COUNT_TRIGGERS.replace("{}", "ENABLE"),
        fills.join(";\n")
    )
}

struct Queries<'a> {
    d: Dialect,
    seed: &'a Seed,
    plan: &'a Plan,
    /// The counter before the bulk: bulk tasks are numbered base+1..=base+N.
    base: i64,
}

impl Queries<'_> {
    fn n_issues(&self) -> i64 {
        self.plan.issues.max(1) as i64
    }

    /// Creation time of bulk task `n`: evenly over the history, oldest first,
    /// so numbers and ids grow with time as they do in the app.
    fn issue_ms(&self, n: &str) -> String {
        let start = self.plan.now_ms - HISTORY_MS - HOUR;
        format!(
            "({start} + (({n}) - 1) * {HISTORY_MS} / {})",
            self.n_issues()
        )
    }

    fn least(&self, a: &str, b: &str) -> String {
        if self.d.postgres {
            format!("LEAST({a}, {b})")
        } else {
            format!("MIN({a}, {b})")
        }
    }

    fn statements(&self) -> Vec<(&'static str, String)> {
        let mut all = self.bulk();
        if self.d.postgres {
            // Postgres' counter triggers update the same few counter rows once
            // per inserted row; within one statement each update follows the
            // row's chain of versions from this transaction, so a million
            // tasks never finish (the issues step ran 17 minutes unfinished).
            // Off for the bulk, then the counters are recounted with the
            // migrations' own fill statements.
            all.insert(0, ("counters off", COUNT_TRIGGERS.replace("{}", "DISABLE")));
            all.push(("counters recounted", recount()));
        }
        all
    }

    fn bulk(&self) -> Vec<(&'static str, String)> {
        vec![
            ("issues", self.issues()),
            ("issue_labels", self.labels()),
            ("issue_blockers", self.blockers()),
            ("issue_comments", self.comments()),
            ("heartbeat_runs", self.runs()),
            ("cost_events", self.costs()),
            ("activity issue.created", self.issue_activity()),
            ("activity issue.comment_added", self.comment_activity()),
            (
                "activity heartbeat.finished",
                self.run_activity("heartbeat.finished"),
            ),
            ("activity cost.reported", self.run_activity("cost.reported")),
            ("agents.last_heartbeat_at", self.last_heartbeats()),
            (
                "companies.issue_counter",
                format!(
                    "UPDATE companies SET issue_counter = {} WHERE id = '{}'",
                    self.base + self.n_issues(),
                    self.seed.company_id
                ),
            ),
        ]
    }

    fn issues(&self) -> String {
        let (d, n_all, agents) = (self.d, self.n_issues(), self.seed.agents.len());
        let cid = &self.seed.company_id;
        let now = self.plan.now_ms;
        // Older tasks are mostly finished; the last 15% are the live work.
        let status = "CASE WHEN age < 85 THEN (CASE WHEN h1 < 85 THEN 'done' WHEN h1 < 93 THEN 'cancelled' ELSE 'backlog' END) \
             ELSE (CASE WHEN h1 < 20 THEN 'backlog' WHEN h1 < 40 THEN 'todo' WHEN h1 < 55 THEN 'in_progress' \
             WHEN h1 < 65 THEN 'in_review' WHEN h1 < 75 THEN 'blocked' WHEN h1 < 95 THEN 'done' ELSE 'cancelled' END) END".to_string();
        let parent_n = "(x.n - 1 - (x.n / 10) % 5)";
        let title = format!(
            "({} || ' ' || {} || ' in ' || {} || CASE WHEN x.n % 250000 = 17 THEN ' {RARE_WORD}' ELSE '' END)",
            pick(&hash("x.n", 2_654_435_761, 16), &VERBS),
            pick(&hash("x.n", 40_503, 16), &OBJECTS),
            pick(&hash("x.n", 69_069, 12), &AREAS));
        let description = format!(
            "({} || ' reported that the ' || {} || ' ' || {} || '.\n\n**Steps**\n1. Open the app\n2. Trigger the ' || {} || '\n\nExpected: it works. Seen on build ' || (x.n % 997) || '.')",
            pick(&hash("x.n", 12_289, 4), &REPORTERS),
            pick(&hash("x.n", 40_503, 16), &OBJECTS),
            pick(&hash("x.n", 1_103_515_245, 8), &SYMPTOMS),
            pick(&hash("x.n", 69_069, 12), &AREAS));
        let started = self.least(
            &format!("x.ms + (1 + x.h3 % 48) * {HOUR}"),
            &now.to_string(),
        );
        let ended = self.least(
            &format!("x.ms + (1 + x.h3 % 48 + x.h2 % 96) * {HOUR}"),
            &now.to_string(),
        );
        let assignee = format!(
            "CASE WHEN x.status IN ('backlog', 'todo', 'cancelled') AND x.h2 < 20 THEN -1 ELSE (x.n * 7919) % {agents} END");
        format!(
            "INSERT INTO issues (id, company_id, project_id, goal_id, parent_id, title, description, status, priority, \
             assignee_agent_id, assignee_user_id, created_by_agent_id, created_by_user_id, issue_number, identifier, \
             origin_kind, request_depth, billing_code, started_at, completed_at, cancelled_at, created_at, updated_at) \
             SELECT {id}, '{cid}', p.id, g.id, CASE WHEN x.sub = 1 THEN {parent_id} END, {title}, {description}, \
             x.status, {priority}, a.id, NULL, c.id, CASE WHEN c.id IS NULL THEN 'local-board' END, \
             {base} + x.n, '{prefix}-' || ({base} + x.n), 'manual', x.sub, NULL, \
             CASE WHEN x.status IN ('in_progress', 'in_review', 'blocked', 'done') THEN {started_ts} END, \
             CASE WHEN x.status = 'done' THEN {ended_ts} END, CASE WHEN x.status = 'cancelled' THEN {ended_ts} END, \
             {created_ts}, CASE WHEN x.status IN ('done', 'cancelled') THEN {ended_ts} \
             WHEN x.status IN ('in_progress', 'in_review', 'blocked') THEN {started_ts} ELSE {created_ts} END \
             FROM (SELECT b.*, {status} AS status FROM (SELECT s.n, {ms} AS ms, s.n * 100 / {n_all} AS age, \
             {h1} AS h1, {h2} AS h2, {h3} AS h3, {h4} AS h4, CASE WHEN s.n % 10 = 0 AND s.n > 10 THEN 1 ELSE 0 END AS sub \
             FROM {seq} s) b) x \
             LEFT JOIN scale_agents a ON a.idx = {assignee} \
             LEFT JOIN scale_agents c ON c.idx = CASE WHEN x.h4 < 30 AND {assignee} >= 0 THEN ({assignee} - 1) / 6 ELSE -1 END \
             LEFT JOIN scale_projects p ON p.idx = CASE WHEN x.h3 < 85 THEN x.n % {projects} ELSE -1 END \
             LEFT JOIN scale_goals g ON g.idx = CASE WHEN x.h4 < 10 THEN x.n % {goals} ELSE -1 END",
            id = d.uuid7("x.ms", "x.n", 1),
            parent_id = d.uuid7(&self.issue_ms(parent_n), parent_n, 1),
            priority = pick(&hash("x.n", 48_271, 10), &PRIORITIES),
            base = self.base,
            prefix = self.seed.prefix,
            started_ts = d.ts(&started),
            ended_ts = d.ts(&ended),
            created_ts = d.ts("x.ms"),
            ms = self.issue_ms("s.n"),
            h1 = hash("s.n", 2_246_822_519, 100),
            h2 = hash("s.n", 3_266_489_917, 100),
            h3 = hash("s.n", 668_265_263, 100),
            h4 = hash("s.n", 374_761_393, 100),
            seq = d.seq(n_all as u64),
            projects = self.seed.projects.len(),
            goals = self.seed.goals.len(),
        )
    }

    /// The bulk tasks (the app's own rows of this company are not touched).
    fn bulk_issues(&self) -> String {
        format!(
            "i.company_id = '{}' AND i.issue_number > {}",
            self.seed.company_id, self.base
        )
    }

    fn labels(&self) -> String {
        // A third of the tasks carry a label, a tenth a second one.
        let labels = self.seed.labels.len();
        format!(
            "INSERT INTO issue_labels (issue_id, label_id) \
             SELECT i.id, l.id FROM issues i JOIN scale_labels l ON l.idx = i.issue_number % {labels} \
             WHERE {w} AND {h} < 33 \
             UNION ALL SELECT i.id, l.id FROM issues i JOIN scale_labels l ON l.idx = (i.issue_number + 3) % {labels} \
             WHERE {w} AND {h} < 10",
            w = self.bulk_issues(), h = hash("i.issue_number", 2_654_435_761, 100))
    }

    fn blockers(&self) -> String {
        // Each blocked task waits on an earlier one.
        format!(
            "INSERT INTO issue_blockers (issue_id, blocked_by_issue_id, created_at) \
             SELECT i.id, b.id, i.updated_at FROM issues i JOIN issues b ON b.company_id = i.company_id \
             AND b.issue_number = i.issue_number - 1 - i.issue_number % 7 \
             WHERE {} AND i.status = 'blocked' AND b.issue_number > {}", self.bulk_issues(), self.base)
    }

    fn comments(&self) -> String {
        let (d, n_all) = (self.d, self.n_issues());
        let issue_n = format!("(1 + (s.n * 2654435761) % {n_all})");
        let at = self.least(
            &format!(
                "{} + (1 + s.n % 72) * {HOUR} + (s.n * 7919) % {HOUR}",
                self.issue_ms(&issue_n)
            ),
            &format!("{} - s.n % 100000", self.plan.now_ms),
        );
        let body = format!(
            "({} || ' ' || {} || ' in ' || {} || '. Next step: ' || {} || ' the ' || {} || '.')",
            pick(&hash("y.k", 69_069, 6), &NOTES),
            pick(&hash("y.k", 40_503, 16), &OBJECTS),
            pick(&hash("y.k", 12_289, 12), &AREAS),
            pick(&hash("y.k", 2_654_435_761, 16), &VERBS),
            pick(&hash("y.k", 1_103_515_245, 16), &OBJECTS)
        );
        let by_agent = "(y.k % 10 < 7 AND i.assignee_agent_id IS NOT NULL)";
        format!(
            "INSERT INTO issue_comments (id, company_id, issue_id, author_agent_id, author_user_id, author_type, \
             created_by_run_id, body, created_at, updated_at) \
             SELECT {id}, '{cid}', i.id, CASE WHEN {by_agent} THEN i.assignee_agent_id END, \
             CASE WHEN {by_agent} THEN NULL ELSE 'local-board' END, CASE WHEN {by_agent} THEN 'agent' ELSE 'user' END, \
             NULL, {body}, {ts}, {ts} \
             FROM (SELECT s.n AS k, {issue_n} AS issue_n, {at} AS ms FROM {seq} s) y \
             JOIN issues i ON i.company_id = '{cid}' AND i.issue_number = {base} + y.issue_n",
            id = d.uuid7("y.ms", "y.k", 2),
            cid = self.seed.company_id,
            ts = d.ts("y.ms"),
            seq = d.seq(self.plan.comments),
            base = self.base,
        )
    }

    /// One row per run: its number `r`, start `ms`, end `end_ms`, status and
    /// task; runs, their cost events and their activity all read it.
    fn run_source(&self) -> String {
        let (n_all, runs, now) = (
            self.n_issues(),
            self.plan.runs.max(1) as i64,
            self.plan.now_ms,
        );
        let history_start = now - HISTORY_MS - HOUR;
        // The task is one created shortly before the run started.
        let issue_n =
            format!("(((z.ms - {history_start}) * {n_all} / {HISTORY_MS}) - (z.r * 7919) % 200)");
        format!(
            "(SELECT z.*, CASE WHEN {issue_n} < 1 THEN 1 WHEN {issue_n} > {n_all} THEN {n_all} ELSE {issue_n} END AS issue_n, \
             {end} AS end_ms, CASE WHEN z.h < 88 THEN 'succeeded' WHEN z.h < 95 THEN 'failed' \
             WHEN z.h < 98 THEN 'cancelled' ELSE 'timed_out' END AS status \
             FROM (SELECT s.n AS r, {start} + (s.n - 1) * {RUN_WINDOW_MS} / {runs} AS ms, {h} AS h FROM {seq} s) z)",
            start = now - RUN_WINDOW_MS,
            end = self.least("z.ms + 20000 + (z.r * 7919) % 600000", &(now - 1000).to_string()),
            h = hash("s.n", 2_246_822_519, 100),
            seq = self.d.seq(runs as u64),
        )
    }

    fn runs(&self) -> String {
        let d = self.d;
        let agents = self.seed.agents.len();
        let cid = &self.seed.company_id;
        format!(
            "INSERT INTO heartbeat_runs (id, company_id, agent_id, invocation_source, trigger_detail, status, \
             wakeup_request_id, issue_id, wake_reason, context_snapshot, started_at, finished_at, error, error_code, \
             exit_code, signal, usage_json, result_json, stdout_excerpt, stderr_excerpt, log_store, log_ref, log_bytes, \
             process_pid, process_group_id, next_event_seq, coalesced_count, created_at, updated_at) \
             SELECT {id}, '{cid}', COALESCE(i.assignee_agent_id, a.id), 'assignment', 'system', y.status, NULL, i.id, \
             'issue_assigned', {context}, \
             {start}, {end}, \
             CASE y.status WHEN 'failed' THEN 'Process exited with code 1' WHEN 'cancelled' THEN 'Cancelled by the board' \
             WHEN 'timed_out' THEN 'Run timed out' END, \
             CASE y.status WHEN 'failed' THEN 'nonzero_exit' WHEN 'cancelled' THEN 'cancelled' WHEN 'timed_out' THEN 'timeout' END, \
             CASE y.status WHEN 'succeeded' THEN 0 WHEN 'failed' THEN 1 END, NULL, {usage}, NULL, \
             'Done: updated the task and left a comment.', NULL, NULL, NULL, 0, NULL, NULL, 1, 0, {created}, {end} \
             FROM {src} y JOIN issues i ON i.company_id = '{cid}' AND i.issue_number = {base} + y.issue_n \
             JOIN scale_agents a ON a.idx = (y.r * 31) % {agents}",
            id = d.uuid7("y.ms - 1500", "y.r", 3),
            context = d.json("'{\"issueId\":\"' || i.id || '\",\"payload\":null,\"triggerDetail\":\"system\",\"wakeReason\":\"issue_assigned\",\"wakeSource\":\"assignment\"}'"),
            start = d.ts("y.ms"),
            end = d.ts("y.end_ms"),
            created = d.ts("y.ms - 1500"),
            usage = d.json(&format!("CASE WHEN y.status IN ('succeeded', 'failed') THEN '{{\"inputTokens\":' || {inp} || ',\"outputTokens\":' || {out} || ',\"costCents\":' || {cents} || ',\"provider\":\"anthropic\",\"model\":\"' || {model} || '\"}}' END",
                inp = tokens_in("y.r"), out = tokens_out("y.r"), cents = cents("y.r"), model = pick("y.r", &MODELS))),
            src = self.run_source(),
            base = self.base,
        )
    }

    fn costs(&self) -> String {
        let d = self.d;
        let cid = &self.seed.company_id;
        format!(
            "INSERT INTO cost_events (id, company_id, agent_id, issue_id, project_id, goal_id, heartbeat_run_id, \
             billing_code, provider, model, input_tokens, cached_input_tokens, output_tokens, cost_cents, occurred_at, created_at) \
             SELECT {id}, '{cid}', r.agent_id, i.id, i.project_id, i.goal_id, r.id, NULL, 'anthropic', {model}, \
             {inp}, 0, {out}, {cents}, {at}, {at} \
             FROM {src} y JOIN heartbeat_runs r ON r.id = {run_id} JOIN issues i ON i.id = r.issue_id \
             WHERE y.status IN ('succeeded', 'failed')",
            id = d.uuid7("y.end_ms", "y.r", 4),
            run_id = d.uuid7("y.ms - 1500", "y.r", 3),
            model = pick("y.r", &MODELS),
            inp = tokens_in("y.r"), out = tokens_out("y.r"), cents = cents("y.r"),
            at = d.ts("y.end_ms"),
            src = self.run_source(),
        )
    }

    fn issue_activity(&self) -> String {
        let nullable = |col: &str| {
            format!("CASE WHEN {col} IS NULL THEN 'null' ELSE '\"' || {col} || '\"' END")
        };
        format!(
            "INSERT INTO activity_log (id, company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, \
             run_id, details, created_at) \
             SELECT {id}, i.company_id, CASE WHEN i.created_by_agent_id IS NULL THEN 'user' ELSE 'agent' END, \
             COALESCE(CAST(i.created_by_agent_id AS TEXT), i.created_by_user_id), 'issue.created', 'issue', i.id, i.created_by_agent_id, NULL, \
             {details}, i.created_at \
             FROM issues i WHERE {w}",
            id = self.d.sibling_id("i.id", 0xa01),
            details = self.d.json(&format!(
                "'{{\"assigneeAgentId\":' || {assignee} || ',\"identifier\":\"' || i.identifier || '\",\"parentId\":' || {parent} || \
                 ',\"status\":\"' || i.status || '\",\"title\":\"' || i.title || '\"}}'",
                assignee = nullable("i.assignee_agent_id"),
                parent = nullable("i.parent_id"),
            )),
            w = self.bulk_issues(),
        )
    }

    fn comment_activity(&self) -> String {
        format!(
            "INSERT INTO activity_log (id, company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, \
             run_id, details, created_at) \
             SELECT {id}, c.company_id, c.author_type, COALESCE(CAST(c.author_agent_id AS TEXT), c.author_user_id), 'issue.comment_added', \
             'issue', c.issue_id, c.author_agent_id, NULL, \
             {details}, \
             c.created_at FROM issue_comments c JOIN issues i ON i.id = c.issue_id WHERE c.company_id = '{cid}'",
            id = self.d.sibling_id("c.id", 0xa02),
            details = self.d.json("'{\"bodySnippet\":\"' || CASE WHEN length(c.body) > 120 THEN substr(c.body, 1, 120) || '…' ELSE c.body END || '\",\"commentId\":\"' || c.id || '\",\"identifier\":\"' || i.identifier || '\"}'"),
            cid = self.seed.company_id,
        )
    }

    fn run_activity(&self, action: &str) -> String {
        let d = self.d;
        let (salt, entity, entity_id, details, filter) = if action == "heartbeat.finished" {
            (5, "heartbeat_run", d.uuid7("y.ms - 1500", "y.r", 3),
             "'{\"agentId\":\"' || r.agent_id || '\",\"errorCode\":' || CASE WHEN r.error_code IS NULL THEN 'null' ELSE '\"' || r.error_code || '\"' END || ',\"exitCode\":' || COALESCE(CAST(r.exit_code AS TEXT), 'null') || ',\"issueId\":\"' || r.issue_id || '\",\"status\":\"' || r.status || '\"}'".to_string(),
             "")
        } else {
            (6, "cost_event", d.uuid7("y.end_ms", "y.r", 4),
             format!("'{{\"agentId\":\"' || r.agent_id || '\",\"costCents\":' || {} || ',\"model\":\"' || {} || '\"}}'", cents("y.r"), pick("y.r", &MODELS)),
             "WHERE y.status IN ('succeeded', 'failed')")
        };
        format!(
            "INSERT INTO activity_log (id, company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, \
             run_id, details, created_at) \
             SELECT {id}, r.company_id, 'system', 'paperclip', '{action}', '{entity}', {entity_id}, NULL, NULL, {json}, {at} \
             FROM {src} y JOIN heartbeat_runs r ON r.id = {run_id} {filter}",
            id = d.uuid7("y.end_ms", "y.r", salt),
            json = d.json(&details),
            at = d.ts("y.end_ms"),
            run_id = d.uuid7("y.ms - 1500", "y.r", 3),
            src = self.run_source(),
        )
    }

    fn last_heartbeats(&self) -> String {
        format!(
            "UPDATE agents SET last_heartbeat_at = (SELECT MAX(r.finished_at) FROM heartbeat_runs r WHERE r.agent_id = agents.id) \
             WHERE company_id = '{}'", self.seed.company_id)
    }
}

fn tokens_in(r: &str) -> String {
    format!("(2000 + (({r}) * 7919) % 60000)")
}

fn tokens_out(r: &str) -> String {
    format!("(200 + (({r}) * 104729) % 4000)")
}

fn cents(r: &str) -> String {
    format!("(1 + (({r}) * 7919) % 60)")
}
