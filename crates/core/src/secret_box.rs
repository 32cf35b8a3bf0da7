//! Sealing company secret values at rest: AES-256-GCM under the instance's
//! master key. Pure: the caller supplies the key and a fresh random nonce
//! (the runtime's vault reads the key file and the OS random source).
//!
//! Each value is sealed with associated data naming its secret and version,
//! so a ciphertext copied onto another row (or another version of the same
//! secret) fails to open instead of handing one secret's value to a
//! reference to another.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;

pub const KEY_BYTES: usize = 32;
pub const NONCE_BYTES: usize = 12;

/// The 32-byte key every company secret of this instance is sealed with.
/// Its `Debug` shows nothing of the key, so it cannot end up in a log.
#[derive(Clone, PartialEq, Eq)]
pub struct MasterKey([u8; KEY_BYTES]);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

impl MasterKey {
    pub fn from_bytes(bytes: [u8; KEY_BYTES]) -> MasterKey {
        MasterKey(bytes)
    }

    /// A key as written in the key file or `PAPERCLIP_SECRETS_MASTER_KEY`:
    /// 64 hex digits or the base64 of 32 bytes (upstream accepts both), with
    /// surrounding whitespace ignored. The error never repeats the text.
    pub fn parse(text: &str) -> Result<MasterKey, &'static str> {
        let text = text.trim();
        if text.len() == 2 * KEY_BYTES && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut out = [0u8; KEY_BYTES];
            for (i, byte) in out.iter_mut().enumerate() {
                *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                    .map_err(|_| "not hexadecimal")?;
            }
            return Ok(MasterKey(out));
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|_| "expected 64 hex digits or the base64 of 32 bytes")?;
        let bytes: [u8; KEY_BYTES] = decoded
            .try_into()
            .map_err(|_| "the key must be 32 bytes (64 hex digits or 44 base64 characters)")?;
        Ok(MasterKey(bytes))
    }

    /// The key file's form (what upstream writes too).
    pub fn to_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }
}

/// A sealed value: the nonce it was sealed with and the ciphertext with its
/// 16-byte tag appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    pub nonce: [u8; NONCE_BYTES],
    pub ciphertext: Vec<u8>,
}

/// The value cannot be opened: another key, a different secret or version,
/// or altered bytes. Which of these is deliberately not told apart (GCM
/// cannot, and guessing would mislead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreadable;

/// What binds a ciphertext to its row.
pub fn associated_data(secret_id: &str, version: i64) -> Vec<u8> {
    format!("paperclip/company-secret/v1/{secret_id}/{version}").into_bytes()
}

pub fn seal(
    key: &MasterKey,
    nonce: [u8; NONCE_BYTES],
    secret_id: &str,
    version: i64,
    plaintext: &[u8],
) -> Sealed {
    let cipher = Aes256Gcm::new(&key.0.into());
    let aad = associated_data(secret_id, version);
    let ciphertext = cipher
        .encrypt(
            Nonce::from_slice(&nonce),
            Payload {
                msg: plaintext,
                aad: &aad,
            },
        )
        // Encryption fails only for inputs of ~64 GiB, far past any bound.
        .expect("AES-GCM encrypts any bounded input");
    Sealed { nonce, ciphertext }
}

pub fn open(
    key: &MasterKey,
    sealed: &Sealed,
    secret_id: &str,
    version: i64,
) -> Result<Vec<u8>, Unreadable> {
    let cipher = Aes256Gcm::new(&key.0.into());
    let aad = associated_data(secret_id, version);
    cipher
        .decrypt(
            Nonce::from_slice(&sealed.nonce),
            Payload {
                msg: &sealed.ciphertext,
                aad: &aad,
            },
        )
        .map_err(|_| Unreadable)
}

/// Base64 as the store keeps nonces and ciphertexts (text on both engines).
pub fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn decode(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0190c0de-0000-7000-8000-000000000001";

    fn key(byte: u8) -> MasterKey {
        MasterKey::from_bytes([byte; KEY_BYTES])
    }

    #[test]
    fn a_sealed_value_opens_with_its_key_secret_and_version() {
        let sealed = seal(&key(7), [1; NONCE_BYTES], ID, 3, b"hunter2-value");
        assert_ne!(sealed.ciphertext, b"hunter2-value");
        assert_eq!(sealed.ciphertext.len(), b"hunter2-value".len() + 16);
        assert_eq!(open(&key(7), &sealed, ID, 3).unwrap(), b"hunter2-value");
    }

    #[test]
    fn tampered_bytes_fail_to_open() {
        let sealed = seal(&key(7), [1; NONCE_BYTES], ID, 1, b"value");
        for i in 0..sealed.ciphertext.len() {
            let mut bad = sealed.clone();
            bad.ciphertext[i] ^= 0x01;
            assert_eq!(open(&key(7), &bad, ID, 1), Err(Unreadable), "byte {i}");
        }
        let mut bad = sealed.clone();
        bad.nonce[0] ^= 0x01;
        assert_eq!(open(&key(7), &bad, ID, 1), Err(Unreadable));
        let mut short = sealed;
        short.ciphertext.pop();
        assert_eq!(open(&key(7), &short, ID, 1), Err(Unreadable));
    }

    #[test]
    fn another_secret_or_version_or_key_fails_to_open() {
        let sealed = seal(&key(7), [1; NONCE_BYTES], ID, 1, b"value");
        let other = "0190c0de-0000-7000-8000-000000000002";
        assert_eq!(open(&key(7), &sealed, other, 1), Err(Unreadable));
        assert_eq!(open(&key(7), &sealed, ID, 2), Err(Unreadable));
        assert_eq!(open(&key(8), &sealed, ID, 1), Err(Unreadable));
    }

    #[test]
    fn keys_parse_from_hex_or_base64_of_32_bytes_only() {
        let k = key(0xab);
        assert_eq!(MasterKey::parse(&"ab".repeat(32)).unwrap(), k);
        assert_eq!(
            MasterKey::parse(&format!(" {}\n", k.to_base64())).unwrap(),
            k
        );
        assert!(MasterKey::parse(&"ab".repeat(31)).is_err());
        assert!(MasterKey::parse(&encode(&[1u8; 31])).is_err());
        assert!(MasterKey::parse("not a key at all!").is_err());
        assert!(MasterKey::parse("").is_err());
    }

    #[test]
    fn a_key_does_not_show_itself_in_debug_output() {
        assert_eq!(format!("{:?}", key(0x41)), "MasterKey(..)");
    }
}
