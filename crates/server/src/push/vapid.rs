//! The instance's VAPID key pair (RFC 8292): push services check that every
//! message for a subscription is signed by the key the browser subscribed
//! with. Made once per instance, kept sealed under the secrets master key
//! (the vault) in the database, so the database alone does not hold it;
//! only its public half leaves the server. The key for notification action
//! links is derived from it, so there is one secret to keep.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hkdf::Hkdf;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::SecretKey;
use paperclip_core::secret_box::{self, MasterKey, Sealed, NONCE_BYTES};
use sha2::Sha256;

/// The `instance_secrets` row holding the sealed key.
const SECRET_NAME: &str = "push_vapid_p256";
/// What the sealed value is bound to (the cipher's associated data).
const SEAL_ID: &str = "instance:push_vapid_p256";

/// How long a VAPID token is good for (RFC 8292: at most 24 hours).
pub const TOKEN_LIFETIME_SECS: u64 = 12 * 3600;

pub struct Keys {
    signing: SigningKey,
    /// The public key, uncompressed (65 bytes).
    public: Vec<u8>,
    /// Signs notification action links.
    pub link_key: [u8; 32],
}

impl Keys {
    pub fn from_secret(secret: &SecretKey) -> Keys {
        let mut link_key = [0u8; 32];
        Hkdf::<Sha256>::new(None, &secret.to_bytes())
            .expand(b"paperclip push action links v1", &mut link_key)
            .expect("32 bytes is a valid HKDF-SHA256 length");
        Keys {
            signing: SigningKey::from(secret),
            public: secret
                .public_key()
                .to_encoded_point(false)
                .as_bytes()
                .to_vec(),
            link_key,
        }
    }

    /// The public key as browsers take it (`applicationServerKey`): base64url.
    pub fn public_b64(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.public)
    }

    /// `Authorization: vapid t=<JWT>, k=<public key>` for a push to
    /// `endpoint`: ES256, `aud` the endpoint's origin, `exp` within 24 hours.
    pub fn authorization(&self, audience: &str, subject: &str, now_secs: u64) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({
            "aud": audience,
            "exp": now_secs + TOKEN_LIFETIME_SECS,
            "sub": subject,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let input = format!("{header}.{claims}");
        let signature: Signature = self.signing.sign(input.as_bytes());
        let jwt = format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()));
        format!("vapid t={jwt}, k={}", self.public_b64())
    }
}

/// The instance's keys, made and stored sealed on first need.
pub async fn load(
    store: &paperclip_store::Store,
    vault: &paperclip_runtime::vault::Vault,
) -> anyhow::Result<Keys> {
    let master = vault.key()?;
    let fresh = seal(&master, &SecretKey::random(&mut rand::rngs::OsRng));
    let stored =
        paperclip_store::org::keys::instance_secret(store, SECRET_NAME, move || fresh).await?;
    let secret = open(&master, &stored).ok_or_else(|| {
        anyhow::anyhow!(
            "the Web Push key cannot be opened with this server's secrets master key ({}); \
             was the key changed? Restore it, or delete the `{SECRET_NAME}` instance secret \
             (every device then subscribes again)",
            vault.describe()
        )
    })?;
    Ok(Keys::from_secret(&secret))
}

fn seal(master: &MasterKey, secret: &SecretKey) -> String {
    use rand::RngCore;
    let mut nonce = [0u8; NONCE_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut nonce);
    let sealed = secret_box::seal(master, nonce, SEAL_ID, 1, &secret.to_bytes());
    format!(
        "sealed:v1:{}:{}",
        secret_box::encode(&sealed.nonce),
        secret_box::encode(&sealed.ciphertext)
    )
}

fn open(master: &MasterKey, stored: &str) -> Option<SecretKey> {
    let rest = stored.strip_prefix("sealed:v1:")?;
    let (nonce, ciphertext) = rest.split_once(':')?;
    let sealed = Sealed {
        nonce: secret_box::decode(nonce)?.try_into().ok()?,
        ciphertext: secret_box::decode(ciphertext)?,
    };
    let plain = secret_box::open(master, &sealed, SEAL_ID, 1).ok()?;
    SecretKey::from_slice(&plain).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::VerifyingKey;

    #[test]
    fn a_sealed_key_opens_only_with_its_master_key() {
        let master = MasterKey::from_bytes([3u8; 32]);
        let secret = SecretKey::random(&mut rand::rngs::OsRng);
        let stored = seal(&master, &secret);
        assert!(!stored.contains(&URL_SAFE_NO_PAD.encode(secret.to_bytes())));
        assert_eq!(
            open(&master, &stored).unwrap().to_bytes(),
            secret.to_bytes()
        );
        assert!(open(&MasterKey::from_bytes([4u8; 32]), &stored).is_none());
        assert!(open(&master, "plain").is_none());
    }

    #[test]
    fn the_vapid_token_verifies_with_the_public_key_and_names_its_audience() {
        let keys = Keys::from_secret(&SecretKey::random(&mut rand::rngs::OsRng));
        let header = keys.authorization("https://push.example.net", "mailto:a@b.c", 1_000);
        let (t, k) = header
            .strip_prefix("vapid t=")
            .unwrap()
            .split_once(", k=")
            .unwrap();
        assert_eq!(k, keys.public_b64());
        let (input, sig) = t.rsplit_once('.').unwrap();
        let claims: serde_json::Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(input.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["aud"], "https://push.example.net");
        assert_eq!(claims["exp"], 1_000 + TOKEN_LIFETIME_SECS);
        let verifying = VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(k).unwrap()).unwrap();
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(sig).unwrap()).unwrap();
        verifying.verify(input.as_bytes(), &sig).unwrap();
        assert!(verifying.verify(b"other", &sig).is_err());
    }
}
