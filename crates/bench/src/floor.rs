//! The HTTP floor for a body of a given size: the server's HTTP stack (axum
//! on hyper, a multi-threaded tokio runtime) answering a fixed body, with no
//! database, no guard and no serialisation. A route's distance from it is
//! the route's own work.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;

pub struct Floor {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Floor {
    /// Serves `body` at `/floor` on a loopback port, on threads of its own
    /// (as the server's own process has), until dropped.
    pub fn start(body: Vec<u8>) -> anyhow::Result<Floor> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let body = Bytes::from(body);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("a runtime for the floor");
            runtime.block_on(async move {
                let listener =
                    tokio::net::TcpListener::from_std(listener).expect("the floor's listener");
                let app = axum::Router::new().route(
                    "/floor",
                    axum::routing::get(move || {
                        let body = body.clone();
                        async move { ([(CONTENT_TYPE, "application/json")], body) }
                    }),
                );
                let serve = axum::serve(listener, app);
                tokio::select! {
                    _ = serve => {}
                    _ = stopped => {}
                }
            });
        });
        Ok(Floor {
            addr,
            stop: Some(stop),
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}/floor", self.addr)
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
