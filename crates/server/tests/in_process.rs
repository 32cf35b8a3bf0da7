//! The app driven in-process, without the accept loop: a request that did
//! not come through a listener has no peer address and must not be trusted
//! as the board (it used to be).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;

async fn app() -> (axum::Router, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("paperclip-inproc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.join("db.sqlite").display());
    let store = paperclip_store::Store::connect(&url).await.unwrap();
    let runtime = paperclip_runtime::Runtime::new(paperclip_runtime::executor::RuntimeConfig {
        store: store.clone(),
        data_dir: dir.clone(),
        api_url: "http://127.0.0.1:1".into(),
        token_secret: b"0123456789abcdef0123456789abcdef".to_vec(),
        vault: Arc::new(paperclip_runtime::vault::Vault::open(&dir, None).unwrap()),
    });
    let state = paperclip_server::AppState {
        store,
        runtime,
        info: Arc::new(paperclip_server::ServerInfo {
            version: "test",
            started_at: "2026-01-01T00:00:00.000Z".into(),
            data_dir: dir.display().to_string(),
            build: None,
            ready_at: "2026-01-01T00:00:00.000Z".into(),
            backups: None,
            backup_service: None,
        }),
        security: Arc::new(paperclip_server::Security::new(
            paperclip_server::Limits::default(),
            None,
        )),
        lifecycle: paperclip_runtime::Lifecycle::new(),
    };
    (paperclip_server::app(state), dir)
}

#[tokio::test]
async fn a_request_without_a_peer_address_is_not_the_board() {
    let (app, dir) = app().await;
    for (method, path, body) in [
        ("GET", "/api/companies", ""),
        ("POST", "/api/companies", r#"{"name":"Sneaky"}"#),
        ("GET", "/", ""),
    ] {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1:3100")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        let resp = app.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{method} {path}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
