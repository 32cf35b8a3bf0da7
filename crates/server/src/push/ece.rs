//! RFC 8291 message encryption for Web Push: the payload is encrypted for
//! one browser (its `p256dh` key and `auth` secret) in the RFC 8188
//! `aes128gcm` content coding, with a fresh key pair and salt per message,
//! so the push service carries it without being able to read it.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes128Gcm, Nonce};
use hkdf::Hkdf;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{PublicKey, SecretKey};
use sha2::Sha256;

/// The one record's size (RFC 8188 `rs`): push services take 4096 bytes.
const RECORD_SIZE: u32 = 4096;
/// The header: salt, record size, key id length, the sender's public key.
pub const HEADER_BYTES: usize = 16 + 4 + 1 + 65;
/// The most plaintext one message carries: the record less the AES-GCM tag
/// and the padding delimiter, and the whole body within 4096 bytes.
pub const MAX_PLAINTEXT: usize = 4096 - HEADER_BYTES - 16 - 1;

#[derive(Debug, PartialEq, Eq)]
pub enum EceError {
    /// The browser's `p256dh` is not a P-256 point.
    BadKey,
    TooLong,
}

/// Encrypts `plaintext` for a browser whose public key is `ua_public` (65
/// bytes, uncompressed) and auth secret `auth`, from the sender's one-time
/// key `as_secret` and `salt`. Callers pass fresh random ones; fixed ones
/// are for the RFC's example.
pub fn encrypt(
    plaintext: &[u8],
    ua_public: &[u8],
    auth: &[u8],
    as_secret: &SecretKey,
    salt: &[u8; 16],
) -> Result<Vec<u8>, EceError> {
    if plaintext.len() > MAX_PLAINTEXT {
        return Err(EceError::TooLong);
    }
    let ua = PublicKey::from_sec1_bytes(ua_public).map_err(|_| EceError::BadKey)?;
    let ua_bytes = ua.to_encoded_point(false);
    let as_bytes = as_secret.public_key().to_encoded_point(false);
    let shared = p256::ecdh::diffie_hellman(as_secret.to_nonzero_scalar(), ua.as_affine());
    // IKM = HKDF(auth, ecdh_secret, "WebPush: info\0" || ua_public || as_public)
    let mut key_info = b"WebPush: info\0".to_vec();
    key_info.extend_from_slice(ua_bytes.as_bytes());
    key_info.extend_from_slice(as_bytes.as_bytes());
    let mut ikm = [0u8; 32];
    Hkdf::<Sha256>::new(Some(auth), shared.raw_secret_bytes())
        .expand(&key_info, &mut ikm)
        .expect("32 bytes is a valid HKDF-SHA256 length");
    let prk = Hkdf::<Sha256>::new(Some(salt), &ikm);
    let mut cek = [0u8; 16];
    let mut nonce = [0u8; 12];
    prk.expand(b"Content-Encoding: aes128gcm\0", &mut cek)
        .expect("16 bytes is a valid HKDF-SHA256 length");
    prk.expand(b"Content-Encoding: nonce\0", &mut nonce)
        .expect("12 bytes is a valid HKDF-SHA256 length");
    // One record, the last: the plaintext, then the delimiter 0x02.
    let mut record = plaintext.to_vec();
    record.push(2);
    let cipher = Aes128Gcm::new_from_slice(&cek).expect("a 16-byte key");
    let sealed = cipher
        .encrypt(
            Nonce::from_slice(&nonce),
            Payload {
                msg: &record,
                aad: b"",
            },
        )
        .expect("AES-GCM encrypts any record this size");
    let mut body = Vec::with_capacity(HEADER_BYTES + sealed.len());
    body.extend_from_slice(salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(65);
    body.extend_from_slice(as_bytes.as_bytes());
    body.extend_from_slice(&sealed);
    Ok(body)
}

/// [`encrypt`] with a fresh sender key and salt from the OS.
pub fn encrypt_fresh(plaintext: &[u8], ua_public: &[u8], auth: &[u8]) -> Result<Vec<u8>, EceError> {
    use rand::RngCore;
    let secret = SecretKey::random(&mut rand::rngs::OsRng);
    let mut salt = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut salt);
    encrypt(plaintext, ua_public, auth, &secret, &salt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;

    fn b64(s: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(s).unwrap()
    }

    /// RFC 8291, section 5 and appendix A: fixed keys and salt give the
    /// RFC's message byte for byte.
    #[test]
    fn the_rfc_8291_example_encrypts_to_the_rfcs_bytes() {
        let as_secret =
            SecretKey::from_slice(&b64("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")).unwrap();
        assert_eq!(
            as_secret.public_key().to_encoded_point(false).as_bytes(),
            b64("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
        );
        let salt: [u8; 16] = b64("DGv6ra1nlYgDCS1FRnbzlw").try_into().unwrap();
        let body = encrypt(
            b"When I grow up, I want to be a watermelon",
            &b64("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"),
            &b64("BTBZMqHH6r4Tts7J_aSIgg"),
            &as_secret,
            &salt,
        )
        .unwrap();
        assert_eq!(
            URL_SAFE_NO_PAD.encode(body),
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        );
    }

    #[test]
    fn a_bad_browser_key_or_a_long_payload_is_refused() {
        let auth = [7u8; 16];
        assert_eq!(
            encrypt_fresh(b"hi", &[4u8; 65], &auth),
            Err(EceError::BadKey)
        );
        let ua = SecretKey::random(&mut rand::rngs::OsRng)
            .public_key()
            .to_encoded_point(false);
        let long = vec![b'x'; MAX_PLAINTEXT + 1];
        assert_eq!(
            encrypt_fresh(&long, ua.as_bytes(), &auth),
            Err(EceError::TooLong)
        );
        let fits = encrypt_fresh(&long[..MAX_PLAINTEXT], ua.as_bytes(), &auth).unwrap();
        assert_eq!(fits.len(), 4096);
    }
}
