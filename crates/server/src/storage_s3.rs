//! Attachment bytes in S3-compatible object storage (AWS S3, MinIO, R2, ...):
//! PUT, GET and DELETE of one object, signed with AWS Signature Version 4
//! over rustls. Path-style (`{endpoint}/{bucket}/{key}`) or virtual-hosted
//! (`{bucket}.{host}/{key}`) addressing; keys get the configured prefix.

use sha2::{Digest, Sha256};

use crate::storage::{window, Chunks};

/// Where and as whom objects are stored. The secret never appears in Debug.
#[derive(Clone)]
pub struct S3Config {
    pub bucket: String,
    pub region: String,
    /// `https://host[:port]`; AWS's regional endpoint when absent.
    pub endpoint: Option<String>,
    pub prefix: String,
    pub force_path_style: bool,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for S3Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Config")
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("endpoint", &self.endpoint)
            .field("prefix", &self.prefix)
            .field("force_path_style", &self.force_path_style)
            .finish_non_exhaustive()
    }
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(data);
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// RFC 3986 unreserved characters stay; everything else is `%XX` (a key's
/// `/` too unless `keep_slash`), as SigV4's canonical URI wants.
fn encode(text: &str, keep_slash: bool) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b'/' if keep_slash => "/".into(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub struct S3 {
    config: S3Config,
    client: reqwest::Client,
}

impl S3 {
    pub fn new(config: S3Config) -> S3 {
        S3 {
            config,
            client: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(60))
                .build()
                .expect("an HTTP client"),
        }
    }

    fn object_key(&self, key: &str) -> String {
        let prefix = self.config.prefix.trim_matches('/');
        if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}/{key}")
        }
    }

    /// `(url, host, canonical path)` of an object.
    fn locate(&self, key: &str) -> (String, String, String) {
        let c = &self.config;
        let endpoint = c
            .endpoint
            .clone()
            .unwrap_or_else(|| format!("https://s3.{}.amazonaws.com", c.region));
        let endpoint = endpoint.trim_end_matches('/');
        let (scheme, host) = endpoint.split_once("://").unwrap_or(("https", endpoint));
        let key = encode(&self.object_key(key), true);
        if c.force_path_style {
            let path = format!("/{}/{key}", encode(&c.bucket, false));
            (format!("{scheme}://{host}{path}"), host.to_string(), path)
        } else {
            let host = format!("{}.{host}", c.bucket);
            let path = format!("/{key}");
            (format!("{scheme}://{host}{path}"), host, path)
        }
    }

    fn signed(&self, method: reqwest::Method, key: &str, body: &[u8]) -> reqwest::RequestBuilder {
        let c = &self.config;
        let (url, host, path) = self.locate(key);
        let now = chrono::Utc::now();
        let amz_date = now.format("%Y%m%dT%H%M%SZ").to_string();
        let day = now.format("%Y%m%d").to_string();
        let payload = hex::encode(Sha256::digest(body));
        let mut headers = vec![
            ("host", host.clone()),
            ("x-amz-content-sha256", payload.clone()),
            ("x-amz-date", amz_date.clone()),
        ];
        if let Some(token) = &c.session_token {
            headers.push(("x-amz-security-token", token.clone()));
        }
        let canonical_headers: String = headers
            .iter()
            .map(|(k, v)| format!("{k}:{}\n", v.trim()))
            .collect();
        let signed_headers = headers
            .iter()
            .map(|(k, _)| *k)
            .collect::<Vec<_>>()
            .join(";");
        let canonical = format!(
            "{}\n{path}\n\n{canonical_headers}\n{signed_headers}\n{payload}",
            method.as_str()
        );
        let scope = format!("{day}/{}/s3/aws4_request", c.region);
        let to_sign = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
            hex::encode(Sha256::digest(canonical.as_bytes()))
        );
        let mut k = hmac(
            format!("AWS4{}", c.secret_access_key).as_bytes(),
            day.as_bytes(),
        );
        for part in [c.region.as_str(), "s3", "aws4_request"] {
            k = hmac(&k, part.as_bytes());
        }
        let signature = hex::encode(hmac(&k, to_sign.as_bytes()));
        let authorization = format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
            c.access_key_id
        );
        let mut req = self
            .client
            .request(method, url)
            .header("authorization", authorization);
        for (k, v) in headers.into_iter().filter(|(k, _)| *k != "host") {
            req = req.header(k, v);
        }
        req
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> std::io::Result<reqwest::Response> {
        let resp = req.send().await.map_err(std::io::Error::other)?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such object",
            ));
        }
        if !resp.status().is_success() {
            return Err(std::io::Error::other(format!(
                "object storage answered {}",
                resp.status()
            )));
        }
        Ok(resp)
    }

    pub async fn put(&self, key: &str, bytes: &[u8]) -> std::io::Result<()> {
        let req = self
            .signed(reqwest::Method::PUT, key, bytes)
            .body(bytes.to_vec());
        self.send(req).await.map(|_| ())
    }

    /// `len` bytes of the object from `start`, chunk by chunk as they
    /// arrive. The `Range` header is not signed (SigV4 allows that); a
    /// store that ignores it answers 200 with the whole object, and the
    /// window skips to `start` itself.
    pub async fn read(&self, key: &str, start: u64, len: u64) -> std::io::Result<Chunks> {
        let range = format!("bytes={start}-{}", start + len.max(1) - 1);
        let resp = self
            .send(
                self.signed(reqwest::Method::GET, key, b"")
                    .header("range", range),
            )
            .await?;
        let skip = if resp.status() == reqwest::StatusCode::PARTIAL_CONTENT {
            0
        } else {
            start
        };
        let chunks = futures::stream::unfold(Some(resp), |resp| async move {
            let mut resp = resp?;
            match resp.chunk().await {
                Ok(Some(bytes)) => Some((Ok(bytes), Some(resp))),
                Ok(None) => None,
                Err(e) => Some((Err(std::io::Error::other(e)), None)),
            }
        });
        Ok(window(Box::pin(chunks), skip, len))
    }

    pub async fn delete(&self, key: &str) -> std::io::Result<()> {
        match self
            .send(self.signed(reqwest::Method::DELETE, key, b""))
            .await
        {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other.map(|_| ()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2 of RFC 4231.
        assert_eq!(
            hex::encode(hmac(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_signing_key_matches_awss_example() {
        // AWS's documented derivation example (secret, 20120215, us-east-1, iam).
        let mut k = hmac(b"AWS4wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", b"20120215");
        for part in ["us-east-1", "iam", "aws4_request"] {
            k = hmac(&k, part.as_bytes());
        }
        assert_eq!(
            hex::encode(k),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"
        );
    }

    #[test]
    fn keys_are_addressed_by_style() {
        let mut c = S3Config {
            bucket: "b".into(),
            region: "us-east-1".into(),
            endpoint: Some("http://127.0.0.1:9000".into()),
            prefix: "/pc/".into(),
            force_path_style: true,
            access_key_id: "AK".into(),
            secret_access_key: "SK".into(),
            session_token: None,
        };
        let (url, host, path) = S3::new(c.clone()).locate("c/issues/i/a b.png");
        assert_eq!(url, "http://127.0.0.1:9000/b/pc/c/issues/i/a%20b.png");
        assert_eq!(
            (host.as_str(), path.as_str()),
            ("127.0.0.1:9000", "/b/pc/c/issues/i/a%20b.png")
        );
        c.force_path_style = false;
        c.endpoint = None;
        let (url, _, _) = S3::new(c.clone()).locate("k");
        assert_eq!(url, "https://b.s3.us-east-1.amazonaws.com/pc/k");
        assert!(!format!("{c:?}").contains("SK"));
    }
}
