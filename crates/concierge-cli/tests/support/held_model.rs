//! An OpenAI-compatible model on loopback that holds every request while
//! told to (a run stays in the middle of its model call), then answers
//! "All done.": for tests that kill a process mid-run.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// An OpenAI-compatible endpoint on loopback that holds every request while
/// `hold` is set, then answers "All done.".
pub struct Model {
    pub url: String,
    pub hold: Arc<AtomicBool>,
    pub seen: Arc<AtomicUsize>,
}

fn answer(mut stream: TcpStream, hold: Arc<AtomicBool>, seen: Arc<AtomicUsize>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut length = 0;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        seen.fetch_add(1, Ordering::SeqCst);
        while hold.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let answer = r#"{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"All done."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#;
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if stream.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

pub fn model() -> Model {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let hold = Arc::new(AtomicBool::new(true));
    let seen = Arc::new(AtomicUsize::new(0));
    let (h, s) = (hold.clone(), seen.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (h, s) = (h.clone(), s.clone());
            std::thread::spawn(move || answer(stream, h, s));
        }
    });
    Model { url, hold, seen }
}
