//! Versioned migrations, applied at start. The same SQL runs on both engines.
//! Applied versions are recorded in `schema_migrations`; a migration runs in
//! a transaction with its record, so a failed start leaves nothing half-done.

use crate::Store;

/// SQL of a migration: the same on both engines, or one per engine where they
/// differ (full-text search).
enum Sql {
    Both(&'static str),
    Each {
        sqlite: &'static str,
        postgres: &'static str,
    },
}

const MIGRATIONS: &[(i64, &str, Sql)] = &[
    (
        1,
        "core",
        Sql::Both(include_str!("../../migrations/0001_core.sql")),
    ),
    (
        2,
        "runtime",
        Sql::Both(include_str!("../../migrations/0002_runtime.sql")),
    ),
    (
        3,
        "governance",
        Sql::Both(include_str!("../../migrations/0003_governance.sql")),
    ),
    (
        4,
        "sessions",
        Sql::Both(include_str!("../../migrations/0004_sessions.sql")),
    ),
    (
        5,
        "one_queued_run",
        Sql::Both(include_str!("../../migrations/0005_one_queued_run.sql")),
    ),
    (
        6,
        "run_follow_up",
        Sql::Both(include_str!("../../migrations/0006_run_follow_up.sql")),
    ),
    (
        7,
        "search",
        Sql::Each {
            sqlite: include_str!("../../migrations/0007_search.sqlite.sql"),
            postgres: include_str!("../../migrations/0007_search.postgres.sql"),
        },
    ),
    (
        8,
        "scale_indexes",
        Sql::Both(include_str!("../../migrations/0008_scale_indexes.sql")),
    ),
    (
        9,
        "issue_counts",
        Sql::Each {
            sqlite: include_str!("../../migrations/0009_issue_counts.sqlite.sql"),
            postgres: include_str!("../../migrations/0009_issue_counts.postgres.sql"),
        },
    ),
    (
        10,
        "thrift",
        Sql::Both(include_str!("../../migrations/0010_thrift.sql")),
    ),
    (
        11,
        "inbox",
        Sql::Both(include_str!("../../migrations/0011_inbox.sql")),
    ),
    (
        12,
        "list_orders",
        Sql::Both(include_str!("../../migrations/0012_list_orders.sql")),
    ),
    (
        13,
        "day_counts",
        Sql::Each {
            sqlite: include_str!("../../migrations/0013_day_counts.sqlite.sql"),
            postgres: include_str!("../../migrations/0013_day_counts.postgres.sql"),
        },
    ),
    (
        14,
        "goal_index",
        Sql::Both(include_str!("../../migrations/0014_goal_index.sql")),
    ),
    (
        15,
        "run_failures",
        Sql::Each {
            sqlite: include_str!("../../migrations/0015_run_failures.sqlite.sql"),
            postgres: include_str!("../../migrations/0015_run_failures.postgres.sql"),
        },
    ),
    (
        16,
        "status_version",
        Sql::Each {
            sqlite: include_str!("../../migrations/0016_status_version.sqlite.sql"),
            postgres: include_str!("../../migrations/0016_status_version.postgres.sql"),
        },
    ),
    (
        17,
        "document_locks",
        Sql::Both(include_str!("../../migrations/0017_document_locks.sql")),
    ),
    (
        18,
        "run_output",
        Sql::Both(include_str!("../../migrations/0018_run_output.sql")),
    ),
    (
        19,
        "comment_requests",
        Sql::Both(include_str!("../../migrations/0019_comment_requests.sql")),
    ),
    (
        20,
        "relation_flags",
        Sql::Each {
            sqlite: include_str!("../../migrations/0020_relation_flags.sqlite.sql"),
            postgres: include_str!("../../migrations/0020_relation_flags.postgres.sql"),
        },
    ),
    (
        21,
        "task_search",
        Sql::Each {
            sqlite: include_str!("../../migrations/0021_task_search.sqlite.sql"),
            postgres: include_str!("../../migrations/0021_task_search.postgres.sql"),
        },
    ),
    (
        22,
        "run_day_totals",
        Sql::Both(include_str!("../../migrations/0022_run_day_totals.sql")),
    ),
    (
        23,
        "task_titles",
        Sql::Each {
            sqlite: include_str!("../../migrations/0023_task_titles.sqlite.sql"),
            postgres: include_str!("../../migrations/0023_task_titles.postgres.sql"),
        },
    ),
    (
        24,
        "label_numbers",
        Sql::Each {
            sqlite: include_str!("../../migrations/0024_label_numbers.sqlite.sql"),
            postgres: include_str!("../../migrations/0024_label_numbers.postgres.sql"),
        },
    ),
    (
        25,
        "native_json",
        Sql::Each {
            sqlite: include_str!("../../migrations/0025_native_json.sqlite.sql"),
            postgres: include_str!("../../migrations/0025_native_json.postgres.sql"),
        },
    ),
    (
        26,
        "native_times",
        Sql::Each {
            sqlite: include_str!("../../migrations/0026_native_times.sqlite.sql"),
            postgres: include_str!("../../migrations/0026_native_times.postgres.sql"),
        },
    ),
    (
        27,
        "native_ids",
        Sql::Each {
            sqlite: include_str!("../../migrations/0027_native_ids.sqlite.sql"),
            postgres: include_str!("../../migrations/0027_native_ids.postgres.sql"),
        },
    ),
    (
        28,
        "company_secrets",
        Sql::Each {
            sqlite: include_str!("../../migrations/0028_company_secrets.sqlite.sql"),
            postgres: include_str!("../../migrations/0028_company_secrets.postgres.sql"),
        },
    ),
    (
        29,
        "teams",
        Sql::Each {
            sqlite: include_str!("../../migrations/0029_teams.sqlite.sql"),
            postgres: include_str!("../../migrations/0029_teams.postgres.sql"),
        },
    ),
    (
        30,
        "attachments",
        Sql::Each {
            sqlite: include_str!("../../migrations/0030_attachments.sqlite.sql"),
            postgres: include_str!("../../migrations/0030_attachments.postgres.sql"),
        },
    ),
    (
        31,
        "routines",
        Sql::Each {
            sqlite: include_str!("../../migrations/0031_routines.sqlite.sql"),
            postgres: include_str!("../../migrations/0031_routines.postgres.sql"),
        },
    ),
    (
        32,
        "interactions",
        Sql::Each {
            sqlite: include_str!("../../migrations/0032_interactions.sqlite.sql"),
            postgres: include_str!("../../migrations/0032_interactions.postgres.sql"),
        },
    ),
    (
        33,
        "routine_activity_gate",
        Sql::Both(include_str!(
            "../../migrations/0033_routine_activity_gate.sql"
        )),
    ),
    (
        34,
        "board_key_parents",
        Sql::Each {
            sqlite: include_str!("../../migrations/0034_board_key_parents.sqlite.sql"),
            postgres: include_str!("../../migrations/0034_board_key_parents.postgres.sql"),
        },
    ),
    (
        35,
        "run_log_retention",
        Sql::Each {
            sqlite: include_str!("../../migrations/0035_run_log_retention.sqlite.sql"),
            postgres: include_str!("../../migrations/0035_run_log_retention.postgres.sql"),
        },
    ),
    (
        36,
        "workspaces",
        Sql::Each {
            sqlite: include_str!("../../migrations/0036_workspaces.sqlite.sql"),
            postgres: include_str!("../../migrations/0036_workspaces.postgres.sql"),
        },
    ),
    (
        37,
        "workspace_lifecycle",
        Sql::Each {
            sqlite: include_str!("../../migrations/0037_workspace_lifecycle.sqlite.sql"),
            postgres: include_str!("../../migrations/0037_workspace_lifecycle.postgres.sql"),
        },
    ),
    (
        38,
        "push",
        Sql::Each {
            sqlite: include_str!("../../migrations/0038_push.sqlite.sql"),
            postgres: include_str!("../../migrations/0038_push.postgres.sql"),
        },
    ),
    (
        39,
        "instances",
        Sql::Each {
            sqlite: include_str!("../../migrations/0039_instances.sqlite.sql"),
            postgres: include_str!("../../migrations/0039_instances.postgres.sql"),
        },
    ),
    (
        40,
        "run_log_chunks",
        Sql::Each {
            sqlite: include_str!("../../migrations/0040_run_log_chunks.sqlite.sql"),
            postgres: include_str!("../../migrations/0040_run_log_chunks.postgres.sql"),
        },
    ),
    (
        41,
        "model_servers",
        Sql::Each {
            sqlite: include_str!("../../migrations/0041_model_servers.sqlite.sql"),
            postgres: include_str!("../../migrations/0041_model_servers.postgres.sql"),
        },
    ),
    (
        42,
        "secret_proposals",
        Sql::Each {
            sqlite: include_str!("../../migrations/0042_secret_proposals.sqlite.sql"),
            postgres: include_str!("../../migrations/0042_secret_proposals.postgres.sql"),
        },
    ),
    (
        43,
        "inbox_state",
        Sql::Each {
            sqlite: include_str!("../../migrations/0043_inbox_state.sqlite.sql"),
            postgres: include_str!("../../migrations/0043_inbox_state.postgres.sql"),
        },
    ),
    (
        44,
        "company_skills",
        Sql::Each {
            sqlite: include_str!("../../migrations/0044_company_skills.sqlite.sql"),
            postgres: include_str!("../../migrations/0044_company_skills.postgres.sql"),
        },
    ),
    (
        45,
        "tree_control",
        Sql::Each {
            sqlite: include_str!("../../migrations/0045_tree_control.sqlite.sql"),
            postgres: include_str!("../../migrations/0045_tree_control.postgres.sql"),
        },
    ),
    (
        46,
        "decisions",
        Sql::Each {
            sqlite: include_str!("../../migrations/0046_decisions.sqlite.sql"),
            postgres: include_str!("../../migrations/0046_decisions.postgres.sql"),
        },
    ),
    (
        47,
        "shape_indexes",
        Sql::Each {
            sqlite: include_str!("../../migrations/0047_shape_indexes.sqlite.sql"),
            postgres: include_str!("../../migrations/0047_shape_indexes.postgres.sql"),
        },
    ),
    (
        48,
        "agent_chat",
        Sql::Each {
            sqlite: include_str!("../../migrations/0048_agent_chat.sqlite.sql"),
            postgres: include_str!("../../migrations/0048_agent_chat.postgres.sql"),
        },
    ),
    (
        49,
        "context_quota",
        Sql::Each {
            sqlite: include_str!("../../migrations/0049_context_quota.sqlite.sql"),
            postgres: include_str!("../../migrations/0049_context_quota.postgres.sql"),
        },
    ),
    (
        50,
        "revision_identity",
        Sql::Each {
            sqlite: include_str!("../../migrations/0050_revision_identity.sqlite.sql"),
            postgres: include_str!("../../migrations/0050_revision_identity.postgres.sql"),
        },
    ),
    (
        51,
        "runtime_state_ids",
        Sql::Each {
            sqlite: include_str!("../../migrations/0051_runtime_state_ids.sqlite.sql"),
            postgres: include_str!("../../migrations/0051_runtime_state_ids.postgres.sql"),
        },
    ),
    (
        52,
        "cost_billing_type",
        Sql::Each {
            sqlite: include_str!("../../migrations/0052_cost_billing_type.sqlite.sql"),
            postgres: include_str!("../../migrations/0052_cost_billing_type.postgres.sql"),
        },
    ),
    (
        54,
        "project_icon_env",
        Sql::Each {
            sqlite: include_str!("../../migrations/0054_project_icon_env.sqlite.sql"),
            postgres: include_str!("../../migrations/0054_project_icon_env.postgres.sql"),
        },
    ),
    (
        55,
        "cost_billed_index",
        Sql::Each {
            sqlite: include_str!("../../migrations/0055_cost_billed_index.sqlite.sql"),
            postgres: include_str!("../../migrations/0055_cost_billed_index.postgres.sql"),
        },
    ),
    (
        56,
        "company_branding",
        Sql::Each {
            sqlite: include_str!("../../migrations/0056_company_branding.sqlite.sql"),
            postgres: include_str!("../../migrations/0056_company_branding.postgres.sql"),
        },
    ),
    (
        57,
        "routine_folders_env",
        Sql::Each {
            sqlite: include_str!("../../migrations/0057_routine_folders_env.sqlite.sql"),
            postgres: include_str!("../../migrations/0057_routine_folders_env.postgres.sql"),
        },
    ),
    (
        58,
        "routine_documents",
        Sql::Each {
            sqlite: include_str!("../../migrations/0058_routine_documents.sqlite.sql"),
            postgres: include_str!("../../migrations/0058_routine_documents.postgres.sql"),
        },
    ),
    (
        59,
        "comment_provenance",
        Sql::Each {
            sqlite: include_str!("../../migrations/0059_comment_provenance.sqlite.sql"),
            postgres: include_str!("../../migrations/0059_comment_provenance.postgres.sql"),
        },
    ),
];

pub(crate) async fn run(store: &Store) -> anyhow::Result<()> {
    crate::engine::db::query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (\
         version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    )
    .execute(store.pool())
    .await?;
    // An existing database may take a while to upgrade (a million tasks: up
    // to a minute on Postgres): say so, where a new one starts at once.
    let (existing,): (i64,) = crate::engine::db::query_as("SELECT COUNT(*) FROM schema_migrations")
        .fetch_one(store.pool())
        .await?;
    for (version, name, sql) in MIGRATIONS {
        let (version, name) = (*version, *name);
        let sql = match (sql, store.backend()) {
            (Sql::Both(sql), _) => *sql,
            (Sql::Each { sqlite, .. }, crate::Backend::Sqlite) => *sqlite,
            (Sql::Each { postgres, .. }, crate::Backend::Postgres) => *postgres,
        };
        let mut tx = store.begin().await?;
        let applied: Option<(i64,)> =
            crate::engine::db::query_as("SELECT version FROM schema_migrations WHERE version = $1")
                .bind(version)
                .fetch_optional(tx.conn())
                .await?;
        if applied.is_some() {
            continue;
        }
        let started = std::time::Instant::now();
        if existing > 0 {
            println!("Upgrading the database: step {version} ({name})…");
        }
        tx.conn().run_script(sql).await?;
        crate::engine::db::query(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
        )
        .bind(version)
        .bind(name)
        .bind(crate::now())
        .execute(tx.conn())
        .await?;
        tx.commit().await?;
        if existing > 0 {
            println!(
                "Upgraded the database: step {version} ({name}) in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        tracing::info!(version, name, "applied migration");
    }
    Ok(())
}

/// The highest migration version this build knows.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map(|m| m.0).unwrap_or(0)
}
