//! A stdio server's output, passed on line by line within the message size
//! limit. rmcp drops a line over its limit without a word, so the call it
//! answered would wait for its timeout although the tool ran; here such a
//! line becomes an error answer to the same request, which the call reports
//! as a result too large.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The largest message a server may send (rmcp's own limit for one line of
/// stdio, and for one event over streamable HTTP).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The JSON-RPC error code of the answer that replaces one too large
/// (implementation-defined server error range).
pub(crate) const TOO_LARGE_CODE: i32 = -32099;
/// Marks that answer's `data`, so a server's own -32099 is not mistaken for it.
pub(crate) const TOO_LARGE_MARKER: &str = "concierge.message_too_large";

/// Bytes of an oversized line kept at each end to find its request id.
const KEEP: usize = 512;

/// The error answer standing for a message to request `id` over `limit`
/// bytes: `bytes` long, or longer, when its size is known (over stdio), of
/// a size nobody counted otherwise (over HTTP the transport stops reading
/// at the limit).
pub(crate) fn too_large_answer(id: &Value, bytes: Option<usize>, limit: usize) -> Value {
    let message = match bytes {
        Some(bytes) => format!("the answer was {bytes} bytes or more, over the limit of {limit} bytes for one message"),
        None => format!("the answer was over the limit of {limit} bytes for one message"),
    };
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": TOO_LARGE_CODE,
            "message": message,
            "data": {"kind": TOO_LARGE_MARKER, "bytes": bytes, "limit": limit},
        }
    })
}

/// How large an answer replaced by [`too_large_answer`] was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooLarge {
    /// Its size (or a lower bound of it), when it was counted.
    pub(crate) bytes: Option<u64>,
    /// The limit it went over.
    pub(crate) limit: u64,
}

/// What the `data` of an answer made by [`too_large_answer`] says (none for
/// any other error).
pub(crate) fn too_large(data: Option<&Value>) -> Option<TooLarge> {
    let data = data?;
    (data["kind"] == TOO_LARGE_MARKER).then(|| TooLarge {
        bytes: data["bytes"].as_u64(),
        limit: data["limit"].as_u64().unwrap_or(MAX_MESSAGE_BYTES as u64),
    })
}

/// Copies `from` to `to` line by line; a line longer than `limit` is
/// replaced by [`too_large_answer`] when its request id can be read from
/// either end of it (dropped with an error in the log otherwise).
pub(crate) async fn forward(
    server: String,
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    limit: usize,
) {
    let mut from = BufReader::with_capacity(64 * 1024, from);
    let mut line: Vec<u8> = Vec::new();
    let mut tail: Vec<u8> = Vec::new();
    let mut oversized: Option<usize> = None;
    loop {
        let (take, ends) = {
            let available = match from.fill_buf().await {
                Ok([]) | Err(_) => break,
                Ok(available) => available,
            };
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..take];
            match oversized.as_mut() {
                None if line.len() + take <= limit => line.extend_from_slice(chunk),
                None => {
                    oversized = Some(line.len() + take);
                    let head = KEEP.saturating_sub(line.len()).min(take);
                    line.extend_from_slice(&chunk[..head]);
                    line.truncate(KEEP);
                    tail.extend_from_slice(chunk);
                }
                Some(size) => {
                    *size += take;
                    tail.extend_from_slice(chunk);
                }
            }
            if tail.len() > 2 * KEEP {
                tail.drain(..tail.len() - KEEP);
            }
            (take, newline.is_some())
        };
        from.consume(take);
        if !ends {
            continue;
        }
        let written = match oversized.take() {
            None => to.write_all(&line).await,
            Some(size) => match request_id(&line).or_else(|| request_id_at_end(&tail)) {
                Some(id) => {
                    tracing::warn!(server, bytes = size, limit, "MCP answer too large; the call fails");
                    let mut answer = too_large_answer(&id, Some(size), limit).to_string().into_bytes();
                    answer.push(b'\n');
                    to.write_all(&answer).await
                }
                None => {
                    tracing::error!(
                        server,
                        bytes = size,
                        limit,
                        "MCP message too large, and not an answer to a request: dropped"
                    );
                    Ok(())
                }
            },
        };
        line.clear();
        tail.clear();
        if written.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// The top-level `"id"` of a JSON-RPC message, read from its beginning.
fn request_id(head: &[u8]) -> Option<Value> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(head, i)?;
                if depth == 1 && &head[i..=end] == b"\"id\"" {
                    let rest = skip_space(head, end + 1);
                    if head.get(rest) == Some(&b':') {
                        return scalar(head, skip_space(head, rest + 1));
                    }
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The `"id"` of a message whose last member it is (`…,"id":7}`), read from its end.
fn request_id_at_end(tail: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(tail).ok().or_else(|| {
        // The kept end may start inside a character: skip to the next one.
        (1..4).find_map(|skip| tail.get(skip..).and_then(|t| std::str::from_utf8(t).ok()))
    })?;
    let body = text.trim_end().strip_suffix('}')?.trim_end();
    let (value, before) = if let Some(inner) = body.strip_suffix('"') {
        let open = inner.rfind('"')?;
        (&body[open..], &body[..open])
    } else {
        let start = body
            .rfind(|c: char| !(c.is_ascii_digit() || c == '-'))
            .map_or(0, |i| i + 1);
        (&body[start..], &body[..start])
    };
    let before = before.trim_end().strip_suffix(':')?.trim_end().strip_suffix("\"id\"")?;
    if !matches!(before.trim_end().chars().last(), Some(',' | '{')) {
        return None;
    }
    serde_json::from_str::<Value>(value)
        .ok()
        .filter(|v| v.is_number() || v.is_string())
}

fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

fn scalar(bytes: &[u8], start: usize) -> Option<Value> {
    let end = match bytes.get(start)? {
        b'"' => string_end(bytes, start)? + 1,
        _ => {
            let mut end = start;
            while bytes.get(end).is_some_and(|b| b.is_ascii_digit() || *b == b'-') {
                end += 1;
            }
            end
        }
    };
    serde_json::from_slice::<Value>(&bytes[start..end])
        .ok()
        .filter(|v| v.is_number() || v.is_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::io::AsyncReadExt;

    use super::*;

    #[test]
    fn the_request_id_is_read_from_either_end() {
        assert_eq!(request_id(br#"{"jsonrpc":"2.0","id":12,"result":{"#), Some(json!(12)));
        assert_eq!(
            request_id(br#"{"result":{"id":3,"x":"#),
            None,
            "a nested id is not the request's"
        );
        assert_eq!(request_id(br#"{ "id" : "a\"b", "#), Some(json!("a\"b")));
        assert_eq!(request_id_at_end(br#"xx"},"jsonrpc":"2.0","id":7}"#), Some(json!(7)));
        assert_eq!(request_id_at_end(b"x\"}, \"id\": \"k-1\" }\r\n"), Some(json!("k-1")));
        assert_eq!(request_id_at_end(br#"{"id":7}}"#), None, "a nested object's id");
    }

    #[tokio::test]
    async fn a_line_over_the_limit_becomes_an_error_answer_to_its_request() {
        let big = "y".repeat(300);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}\n{{\"result\":{{\"text\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\":2}}\n{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{{\"t\":\"{big}\"}}}}\n{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{{}}}}\n"
        );
        let (mut reader, writer) = tokio::io::duplex(64);
        let task = tokio::spawn(forward(
            "s".into(),
            std::io::Cursor::new(input.into_bytes()),
            writer,
            100,
        ));
        let mut out = String::new();
        reader.read_to_string(&mut out).await.unwrap();
        task.await.unwrap();
        let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 3, "the oversized notification is dropped: {out}");
        assert_eq!(lines[0]["id"], 1);
        assert_eq!(lines[1]["id"], 2);
        assert_eq!(lines[1]["error"]["code"], TOO_LARGE_CODE);
        let info = too_large(lines[1]["error"].get("data")).unwrap();
        assert!(info.bytes.unwrap() > 300 && info.limit == 100, "{info:?}");
        assert_eq!(lines[2]["id"], 3);
    }
}
