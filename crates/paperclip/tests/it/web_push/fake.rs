//! A push service on loopback that checks what a real one checks (the VAPID
//! JWT against the server's published key) and reads each message as the
//! browser would (RFC 8291 decryption with the device's own keys). The
//! endpoint `/push/gone` answers 410 Gone, as for a subscription the browser
//! dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Nonce};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{PublicKey, SecretKey};
use serde_json::{json, Value};
use sha2::Sha256;

/// A browser's side of one subscription: its key pair and auth secret.
pub struct Device {
    secret: SecretKey,
    auth: [u8; 16],
}

impl Device {
    pub fn new() -> Device {
        let mut seed = [0u8; 32];
        let mut auth = [0u8; 16];
        let id = uuid::Uuid::new_v4();
        let id2 = uuid::Uuid::new_v4();
        seed[..16].copy_from_slice(id.as_bytes());
        seed[16..].copy_from_slice(id2.as_bytes());
        auth.copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        Device {
            secret: SecretKey::from_slice(&seed).expect("a random scalar is a key"),
            auth,
        }
    }

    fn public(&self) -> Vec<u8> {
        self.secret
            .public_key()
            .to_encoded_point(false)
            .as_bytes()
            .to_vec()
    }

    /// `PushSubscription.toJSON()` for this device at `endpoint`.
    pub fn subscription(&self, endpoint: &str) -> Value {
        json!({ "endpoint": endpoint, "expirationTime": null, "keys": {
            "p256dh": URL_SAFE_NO_PAD.encode(self.public()),
            "auth": URL_SAFE_NO_PAD.encode(self.auth) } })
    }

    /// RFC 8291: the plaintext of an aes128gcm message to this device.
    fn decrypt(&self, body: &[u8]) -> Result<Vec<u8>, String> {
        if body.len() < 21 {
            return Err("body shorter than its header".into());
        }
        let salt = &body[..16];
        let idlen = body[20] as usize;
        let sender = body.get(21..21 + idlen).ok_or("key id cut short")?;
        let ciphertext = &body[21 + idlen..];
        let sender = PublicKey::from_sec1_bytes(sender).map_err(|_| "key id is no P-256 key")?;
        let shared =
            p256::ecdh::diffie_hellman(self.secret.to_nonzero_scalar(), sender.as_affine());
        let mut info = b"WebPush: info\0".to_vec();
        info.extend_from_slice(&self.public());
        info.extend_from_slice(sender.to_encoded_point(false).as_bytes());
        let mut ikm = [0u8; 32];
        Hkdf::<Sha256>::new(Some(&self.auth), shared.raw_secret_bytes())
            .expand(&info, &mut ikm)
            .unwrap();
        let prk = Hkdf::<Sha256>::new(Some(salt), &ikm);
        let (mut cek, mut nonce) = ([0u8; 16], [0u8; 12]);
        prk.expand(b"Content-Encoding: aes128gcm\0", &mut cek)
            .unwrap();
        prk.expand(b"Content-Encoding: nonce\0", &mut nonce)
            .unwrap();
        let mut plain = Aes128Gcm::new_from_slice(&cek)
            .unwrap()
            .decrypt(Nonce::from_slice(&nonce), ciphertext)
            .map_err(|_| "the message does not decrypt with this device's keys")?;
        while plain.last() == Some(&0) {
            plain.pop();
        }
        if plain.pop() != Some(2) {
            return Err("no last-record delimiter".into());
        }
        Ok(plain)
    }
}

#[derive(Default)]
struct Inner {
    origin: String,
    key: Option<Vec<u8>>,
    devices: HashMap<String, Device>,
    received: Vec<(String, Value)>,
    errors: Vec<String>,
}

#[derive(Clone)]
pub struct FakePush(Arc<Mutex<Inner>>);

impl FakePush {
    pub async fn start() -> FakePush {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let fake = FakePush(Arc::new(Mutex::new(Inner {
            origin,
            ..Inner::default()
        })));
        let app = axum::Router::new()
            .route("/push/{id}", axum::routing::post(receive))
            .with_state(fake.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        fake
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.0.lock().unwrap().origin)
    }

    /// The server's published VAPID key, every message's `k` and signer.
    pub fn expect_key(&self, b64: &str) {
        self.0.lock().unwrap().key = Some(URL_SAFE_NO_PAD.decode(b64).unwrap());
    }

    pub fn add(&self, name: &str, device: Device) {
        self.0.lock().unwrap().devices.insert(name.into(), device);
    }

    pub fn received(&self, name: &str) -> Vec<Value> {
        let inner = self.0.lock().unwrap();
        inner
            .received
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    pub fn errors(&self) -> Vec<String> {
        self.0.lock().unwrap().errors.clone()
    }
}

async fn receive(
    State(fake): State<FakePush>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    if name == "gone" {
        return StatusCode::GONE;
    }
    let mut inner = fake.0.lock().unwrap();
    match check(&inner, &name, &headers, &body) {
        Ok(payload) => {
            inner.received.push((name, payload));
            StatusCode::CREATED
        }
        Err(why) => {
            inner.errors.push(format!("{name}: {why}"));
            StatusCode::BAD_REQUEST
        }
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<&'a str, String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| format!("no {name} header"))
}

fn check(inner: &Inner, name: &str, headers: &HeaderMap, body: &[u8]) -> Result<Value, String> {
    let ttl: u64 = header(headers, "ttl")?
        .parse()
        .map_err(|_| "TTL is no number")?;
    if ttl == 0 {
        return Err("TTL 0".into());
    }
    if header(headers, "content-encoding")? != "aes128gcm" {
        return Err("not aes128gcm".into());
    }
    // Authorization: vapid t=<jwt>, k=<key>
    let auth = header(headers, "authorization")?;
    let (t, k) = auth
        .strip_prefix("vapid t=")
        .and_then(|rest| rest.split_once(", k="))
        .ok_or("Authorization is not `vapid t=…, k=…`")?;
    let key = inner.key.as_ref().ok_or("no published key yet")?;
    if URL_SAFE_NO_PAD.decode(k).ok().as_ref() != Some(key) {
        return Err("k is not the server's published key".into());
    }
    let parts: Vec<&str> = t.split('.').collect();
    if parts.len() != 3 {
        return Err("the JWT has not three parts".into());
    }
    let decode = |s: &str| -> Result<Value, String> {
        let bytes = URL_SAFE_NO_PAD
            .decode(s)
            .map_err(|_| "JWT part not base64url")?;
        serde_json::from_slice(&bytes).map_err(|_| "JWT part not JSON".to_string())
    };
    if decode(parts[0])?["alg"] != "ES256" {
        return Err("JWT alg is not ES256".into());
    }
    let verifying = VerifyingKey::from_sec1_bytes(key).map_err(|_| "published key no P-256")?;
    let signature = URL_SAFE_NO_PAD
        .decode(parts[2])
        .ok()
        .and_then(|s| Signature::from_slice(&s).ok())
        .ok_or("JWT signature malformed")?;
    verifying
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
        .map_err(|_| "JWT signature does not verify with the published key")?;
    let claims = decode(parts[1])?;
    if claims["aud"] != json!(inner.origin) {
        return Err(format!("aud {} is not {}", claims["aud"], inner.origin));
    }
    let now = chrono::Utc::now().timestamp();
    let exp = claims["exp"].as_i64().ok_or("no exp")?;
    if exp <= now || exp > now + 24 * 3600 {
        return Err(format!("exp {exp} not within a day of {now}"));
    }
    let sub = claims["sub"].as_str().unwrap_or("");
    if !(sub.starts_with("mailto:") || sub.starts_with("https://")) {
        return Err(format!("sub {sub:?} is neither mailto: nor https:"));
    }
    let device = inner.devices.get(name).ok_or("no such device")?;
    let plain = device.decrypt(body)?;
    serde_json::from_slice(&plain).map_err(|_| "the message is not JSON".into())
}

/// An approve link for `approval` signed with a key that is not the
/// server's: what someone without it could make.
pub fn sign_link(key: &[u8; 32], approval: &str) -> String {
    let claims = json!({ "jti": uuid::Uuid::new_v4().to_string(), "sub": "local-board",
        "act": "approve", "target": approval, "exp": chrono::Utc::now().timestamp() + 3600 });
    let body = URL_SAFE_NO_PAD.encode(claims.to_string());
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap();
    mac.update(body.as_bytes());
    format!(
        "{body}.{}",
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    )
}
