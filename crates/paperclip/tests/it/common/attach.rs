//! Helpers of the attachment tests: multipart bodies built by hand, requests
//! as the board, an agent, a person or a board key.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::teams::Session;
use super::TestServer;

pub const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

/// One part of a multipart body: field, file name, type, bytes.
pub type Part<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a [u8]);

pub fn multipart(parts: &[Part]) -> (String, Vec<u8>) {
    let boundary = "----paperclip-test-7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (name, filename, ct, data) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        let mut disp = format!("Content-Disposition: form-data; name=\"{name}\"");
        if let Some(f) = filename {
            disp.push_str(&format!("; filename=\"{f}\""));
        }
        body.extend_from_slice(disp.as_bytes());
        body.extend_from_slice(b"\r\n");
        if let Some(ct) = ct {
            body.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Who sends a request: the local board, an agent key (with a run), a
/// signed-in person (with or without the CSRF token), or a board key.
#[derive(Clone, Copy)]
pub enum As<'a> {
    Board,
    Agent(&'a str, Option<&'a str>),
    Person(&'a Session, bool),
    Key(&'a str),
}

pub fn with<'a>(req: reqwest::RequestBuilder, who: As<'a>) -> reqwest::RequestBuilder {
    match who {
        As::Board => req,
        As::Agent(key, run) => {
            let req = req.bearer_auth(key);
            match run {
                Some(r) => req.header("x-paperclip-run-id", r),
                None => req,
            }
        }
        As::Person(s, csrf) => {
            let req = req.header("cookie", &s.cookie);
            if csrf {
                req.header("x-paperclip-csrf", &s.csrf)
            } else {
                req
            }
        }
        As::Key(k) => req.bearer_auth(k),
    }
}

pub async fn send(req: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

pub async fn upload_parts(
    s: &TestServer,
    who: As<'_>,
    cid: &str,
    iid: &str,
    parts: &[Part<'_>],
) -> (StatusCode, Value) {
    let (ct, body) = multipart(parts);
    let url = s.url(&format!("/api/companies/{cid}/issues/{iid}/attachments"));
    let req = s.client().post(url).header("content-type", ct).body(body);
    send(with(req, who)).await
}

pub async fn upload(
    s: &TestServer,
    who: As<'_>,
    cid: &str,
    iid: &str,
    name: &str,
    ct: &str,
    data: &[u8],
) -> (StatusCode, Value) {
    upload_parts(s, who, cid, iid, &[("file", Some(name), Some(ct), data)]).await
}

pub async fn call(s: &TestServer, who: As<'_>, method: Method, path: &str) -> (StatusCode, Value) {
    send(with(s.client().request(method, s.url(path)), who)).await
}

pub async fn setup(s: &TestServer, name: &str) -> (String, String) {
    let cid = s.company(name).await["id"].as_str().unwrap().to_string();
    let iid = s.issue(&cid, json!({ "title": "Files here" })).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    (cid, iid)
}

pub fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}
