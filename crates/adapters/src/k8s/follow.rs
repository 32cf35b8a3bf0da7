//! Following the Job's pod log across dropped connections, for [`JobRun`].

use std::sync::{Arc, Mutex};

use futures::AsyncReadExt;
use kube::api::LogParams;
use tokio_util::sync::CancellationToken;

use super::job::{timed, JobRun};
use super::logs::{self, LineFilter, MAX_RECONNECTS};
use crate::process::Tap;
use crate::Stream;

impl JobRun {
    /// Follows the main container's log until `stop` (the Job is terminal),
    /// reconnecting up to [`MAX_RECONNECTS`] times.
    pub(super) async fn follow(
        &self,
        pod: &str,
        tap: &mut dyn Tap,
        stop: &CancellationToken,
        cancel: &CancellationToken,
        got_output: Arc<Mutex<bool>>,
    ) {
        let mut filter = LineFilter::default();
        let mut last_chunk = chrono::Utc::now().timestamp();
        let mut attempt = 0u32;
        loop {
            if attempt >= MAX_RECONNECTS {
                self.log(
                    Stream::Stderr,
                    &format!("Log stream: max reconnect attempts ({MAX_RECONNECTS}) reached — giving up."),
                );
                break;
            }
            let since = (attempt > 0)
                .then(|| logs::since_seconds(chrono::Utc::now().timestamp(), last_chunk));
            if attempt > 0 {
                self.log(
                    Stream::System,
                    &format!("Log stream disconnected — reconnecting (attempt {attempt}/{MAX_RECONNECTS})..."),
                );
            }
            let params = LogParams {
                container: Some(self.container.into()),
                follow: true,
                timestamps: true,
                since_seconds: since,
                ..LogParams::default()
            };
            let mut emit = |lines: Vec<String>| {
                for line in lines {
                    let text = format!("{line}\n");
                    self.sink.log(Stream::Stdout, &text);
                    tap.text(&text);
                    *got_output.lock().unwrap() = true;
                }
            };
            let ended_cleanly = async {
                let mut reader = match timed(self.pods().log_stream(pod, &params)).await {
                    Ok(r) => Box::pin(r),
                    Err(_) => return false,
                };
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    match reader.read(&mut buf).await {
                        Ok(0) => return true,
                        Ok(n) => {
                            last_chunk = chrono::Utc::now().timestamp();
                            emit(filter.push(&buf[..n]));
                        }
                        Err(_) => return false,
                    }
                }
            };
            // A stream the server keeps open after the Job ended is not
            // waited on for more than the stop grace.
            let clean = tokio::select! {
                clean = ended_cleanly => clean,
                _ = async {
                    stop.cancelled().await;
                    tokio::time::sleep(self.timings.stop_grace).await;
                } => true,
                // A cancelled run reads no more: its Job is deleted next.
                _ = cancel.cancelled() => true,
            };
            if cancel.is_cancelled() {
                break;
            }
            if stop.is_cancelled() && clean {
                break;
            }
            if !clean {
                filter.disconnected();
            }
            attempt += 1;
            tokio::select! {
                _ = tokio::time::sleep(self.timings.reconnect_delay) => {}
                _ = stop.cancelled() => {}
            }
            if stop.is_cancelled() && clean {
                break;
            }
        }
        if let Some(line) = filter.finish() {
            let text = format!("{line}\n");
            self.sink.log(Stream::Stdout, &text);
            tap.text(&text);
        }
    }
}
